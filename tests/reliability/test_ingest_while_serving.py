"""Re-ingest while answers stream (the real docindex MCP server, real
embedder, fake engine, the ingress in-process): no answer ever mixes two
index versions, answers started after the commit see the new one; an ingest
killed mid-transaction leaves the old index serving, intact. Slow."""
from __future__ import annotations

import asyncio
import re
import signal
import sqlite3
import sys
import time
from pathlib import Path

import httpx
import pytest

from serve_app.ingress import create_app
from serve_app.local import build_local_pipeline
from serve_app.settings import Settings
from tests.reliability.conftest import REPO, child_env, record
from tests.serve.sse import parse_sse

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.asyncio]
MARKER = re.compile(r"release marker (\w+)")
QUESTION = "How do replicas restart after a crash, and what is the release marker?"


def write_corpus(root: Path, marker: str, files: int, paragraphs: int = 1) -> None:
    """Synthetic guides: every chunk names its file's number and the corpus version."""
    root.mkdir(parents=True, exist_ok=True)
    for old in root.glob("*.md"):
        old.unlink()
    for i in range(files):
        body = "\n\n".join(
            f"Guide {i:03d} part {p}, release marker {marker}. The deployment guide number {i:03d} explains how "
            f"replicas of service {i:03d} restart after a crash, how the queue drains and which release marker "
            f"{marker} applies to part {p}." for p in range(paragraphs))
        (root / f"guide{i:03d}.md").write_text(f"# Guide {i:03d}\n\n{body}\n")


async def ingest(corpus: Path, db: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "docindex.cli", "ingest", str(corpus), "--db", str(db), "-c", "docs",
        cwd=REPO, env=child_env(), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)


def index_version(db: Path) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())["index_version"]


def writer_holds_the_lock(db: Path) -> bool:
    conn = sqlite3.connect(db, timeout=0)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


class Asker:
    """Asks in a loop; keeps (started, ended, markers of the sources) per answer."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.answers: list[tuple[float, float, set[str]]] = []
        self.problems: list[str] = []

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            response = await self.client.post("/ask", json={"question": QUESTION, "k": 4})
            if response.status_code != 200:
                self.problems.append(f"status {response.status_code}: {response.text[:200]}")
                continue
            events = parse_sse(response.text)
            if events[-1][0] != "done":
                self.problems.append(f"terminal {events[-1]}")
                continue
            sources = events[0][1]["sources"]
            for s in sources:      # each passage belongs to its own file (no text from another row)
                if not re.search(rf"Guide {s['source'][-6:-3]}\b", s["text"]):
                    self.problems.append(f"passage text from another document: {s['source']} {s['text'][:80]}")
            self.answers.append((started, time.monotonic(), {m for s in sources for m in MARKER.findall(s["text"])}))

    def since(self, t: float) -> list[set[str]]:
        return [markers for started, _, markers in self.answers if started > t]


@pytest.fixture
async def served(tmp_path: Path):
    corpus, db = tmp_path / "corpus", tmp_path / "index.db"
    write_corpus(corpus, "alpha", files=12)
    proc = await ingest(corpus, db)
    assert await proc.wait() == 0, (await proc.stderr.read()).decode()[-2000:]
    settings = Settings(_env_file=None, engine="fake", db=str(db), mcp_pool_size=1, gate_min_cosine=-1.0,
                        api_keys=[], prompt_max_sources=4)
    pipeline = await build_local_pipeline(settings)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(pipeline, settings)),
                               base_url="http://test", timeout=30)
    try:
        yield corpus, db, client
    finally:
        await client.aclose()
        await pipeline.close()


async def test_reingest_under_streaming_answers_and_a_killed_ingest(served) -> None:
    corpus, db, client = served
    asker, stop = Asker(client), asyncio.Event()
    loop = asyncio.create_task(asker.run(stop))
    try:
        await asyncio.sleep(2)
        v1 = index_version(db)
        # 1. A changed corpus, committed while answers stream.
        write_corpus(corpus, "beta", files=12)
        began = time.monotonic()
        proc = await ingest(corpus, db)
        assert await proc.wait() == 0, (await proc.stderr.read()).decode()[-2000:]
        committed = time.monotonic()
        v2 = index_version(db)
        await asyncio.sleep(3)
        during = [m for s, e, m in asker.answers if e > began and s < committed]
        after_commit = asker.since(committed)

        # 2. A bigger change, killed while it holds the write transaction.
        write_corpus(corpus, "gamma", files=150, paragraphs=3)
        proc = await ingest(corpus, db)
        deadline = time.monotonic() + 120
        while not writer_holds_the_lock(db) and proc.returncode is None and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)                   # well inside chunking/embedding
        assert proc.returncode is None, "the ingest finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        killed = time.monotonic()
        await asyncio.sleep(3)
        after_kill = asker.since(killed)
    finally:
        stop.set()
        await asyncio.wait_for(loop, 60)

    with sqlite3.connect(db) as conn:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    record("ingest_while_serving", {
        "answers": len(asker.answers), "answers_during_reingest": len(during), "after_commit": len(after_commit),
        "after_kill": len(after_kill), "index_versions": [v1, v2, index_version(db)],
        "reingest_s": round(committed - began, 1), "mixed_answers": sum(len(m) > 1 for *_, m in asker.answers),
        "problems": asker.problems[:5], "integrity": integrity})
    assert asker.problems == []
    assert all(len(m) == 1 for *_, m in asker.answers)            # never two versions in one answer
    assert during and after_commit and after_kill
    assert int(v2) > int(v1) and all(m == {"beta"} for m in after_commit)
    assert index_version(db) == v2 and all(m == {"beta"} for m in after_kill)
    assert integrity == "ok"

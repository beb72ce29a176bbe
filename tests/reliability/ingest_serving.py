"""What the re-ingest-while-serving tests share (the slow one,
test_ingest_while_serving.py, and the default-suite one,
test_killed_ingest_short.py): a synthetic corpus whose every chunk names its
version, `docindex ingest` as a subprocess, the index version read from the
db, and an asker that keeps asking while an ingest runs or is killed.

An answer either completes (`done`) or fails with a documented error
(docs/api.md: an `error` event with a stage, or 503 + Retry-After); anything
else is a problem.
"""
from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx

from serve_app.ingress import create_app
from serve_app.local import build_local_pipeline
from serve_app.settings import Settings
from tests.reliability.conftest import REPO, child_env
from tests.serve.sse import parse_sse

MARKER = re.compile(r"release marker (\w+)")
QUESTION = "How do replicas restart after a crash, and what is the release marker?"
DOCUMENTED_STAGES = {"retrieval", "generation", "internal"}


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


async def ingest(corpus: Path, db: Path, *, prefix: tuple[str, ...] = ("-m", "docindex.cli")
                 ) -> asyncio.subprocess.Process:
    """`docindex ingest CORPUS --db DB -c docs`; `prefix` swaps the program (a wrapper of the CLI)."""
    return await asyncio.create_subprocess_exec(
        sys.executable, *prefix, "ingest", str(corpus), "--db", str(db), "-c", "docs",
        cwd=REPO, env=child_env(), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)


def index_version(db: Path) -> str:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return dict(conn.execute("SELECT key, value FROM meta").fetchall())["index_version"]


def row_counts(db: Path) -> tuple[int, int]:
    """(documents, chunks) a reader sees: the committed index."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return (conn.execute("SELECT count(*) FROM documents").fetchone()[0],
                conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


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
    """Asks in a loop; keeps (started, ended, markers of the sources) per completed answer,
    the documented failures (error stage or 503) and anything else as a problem."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.answers: list[tuple[float, float, set[str]]] = []
        self.documented_failures: list[str] = []
        self.problems: list[str] = []

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            started = time.monotonic()
            response = await self.client.post("/ask", json={"question": QUESTION, "k": 4})
            if response.status_code == 503 and response.headers.get("retry-after", "").isdigit():
                self.documented_failures.append("503")
                await asyncio.sleep(0.05)
                continue
            if response.status_code != 200:
                self.problems.append(f"status {response.status_code}: {response.text[:200]}")
                continue
            events = parse_sse(response.text)
            if events[-1][0] == "error" and events[-1][1].get("stage") in DOCUMENTED_STAGES:
                self.documented_failures.append(f"error event, stage {events[-1][1]['stage']}")
                continue
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

    async def wait_for_answers_since(self, t: float, count: int, guard_s: float = 120) -> None:
        """Until `count` answers sent after `t` completed; a hang guard, not a bound."""
        deadline = time.monotonic() + guard_s
        while len(self.since(t)) < count:
            assert time.monotonic() < deadline, f"fewer than {count} answers after t={t:.1f}: {self.problems[:3]}"
            await asyncio.sleep(0.05)


async def serve_index(corpus: Path, db: Path, marker: str, files: int) -> AsyncIterator[httpx.AsyncClient]:
    """Index a first corpus version, then serve it: the ingress in-process over the
    real `docindex serve-mcp` and the fake engine."""
    write_corpus(corpus, marker, files=files)
    proc = await ingest(corpus, db)
    assert await proc.wait() == 0, (await proc.stderr.read()).decode()[-2000:] if proc.stderr else ""
    settings = Settings(_env_file=None, engine="fake", db=str(db), mcp_pool_size=1, gate_min_cosine=-1.0,
                        api_keys=[], prompt_max_sources=4)
    pipeline = await build_local_pipeline(settings)
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(pipeline, settings)),
                               base_url="http://test", timeout=30)
    try:
        yield client
    finally:
        await client.aclose()
        await pipeline.close()


def integrity(db: Path) -> Any:
    with sqlite3.connect(db) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]

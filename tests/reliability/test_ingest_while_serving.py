"""Re-ingest while answers stream (the real docindex MCP server, real
embedder, fake engine, the ingress in-process): no answer ever mixes two
index versions, answers started after the commit see the new one; an ingest
killed mid-transaction leaves the old index serving, intact. Slow."""
from __future__ import annotations

import asyncio
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import record
from tests.reliability.ingest_serving import (
    Asker,
    index_version,
    ingest,
    serve_index,
    write_corpus,
    writer_holds_the_lock,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600), pytest.mark.asyncio]


@pytest.fixture
async def served(tmp_path: Path):
    corpus, db = tmp_path / "corpus", tmp_path / "index.db"
    async for client in serve_index(corpus, db, "alpha", files=12):
        yield corpus, db, client


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
    assert asker.problems == [] and asker.documented_failures == []
    assert all(len(m) == 1 for *_, m in asker.answers)            # never two versions in one answer
    assert during and after_commit and after_kill
    assert int(v2) > int(v1) and all(m == {"beta"} for m in after_commit)
    assert index_version(db) == v2 and all(m == {"beta"} for m in after_kill)
    assert integrity == "ok"

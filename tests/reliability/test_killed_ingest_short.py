"""An ingest SIGKILLed mid-transaction while answers stream, short, in the
default suite (issue 17 item 1; the long form with a committed re-ingest is
test_ingest_while_serving.py, slow).

The ingress in-process over the real `docindex serve-mcp` and the fake
engine answers in a loop. `docindex ingest` of a changed corpus runs under
ingest_until_inside.py: once it has written a document inside its write
transaction it says so (a file) and waits; answers keep coming while it
holds the transaction; then it is SIGKILLed. Every answer completes or fails
with a documented error; the index stays at its version, rows and integrity
from before; the next ingest commits and its version is what answers cite.
Every step waits on an event (a file, answers counted), never on a clock.
"""
from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.reliability.conftest import record
from tests.reliability.ingest_serving import (
    Asker,
    index_version,
    ingest,
    integrity,
    row_counts,
    serve_index,
    write_corpus,
    writer_holds_the_lock,
)

pytestmark = [pytest.mark.timeout(300), pytest.mark.asyncio]      # a hang guard; it takes well under a minute
HOLDER = str(Path(__file__).with_name("ingest_until_inside.py"))
FILES = 6
ANSWERS_PER_STEP = 3


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Path, Path, httpx.AsyncClient]]:
    corpus, db = tmp_path / "corpus", tmp_path / "index.db"
    async for client in serve_index(corpus, db, "alpha", FILES):
        yield corpus, db, client


async def wait_for_file(path: Path, proc: asyncio.subprocess.Process, guard_s: float = 120) -> None:
    deadline = time.monotonic() + guard_s
    while not path.exists():
        assert proc.returncode is None, (await proc.stderr.read()).decode()[-2000:] if proc.stderr else ""
        assert time.monotonic() < deadline, "the ingest never reached its write transaction"
        await asyncio.sleep(0.05)


async def test_an_ingest_killed_mid_transaction_leaves_the_index_serving_and_the_next_commits(
        served: tuple[Path, Path, httpx.AsyncClient], tmp_path: Path) -> None:
    corpus, db, client = served
    began = time.monotonic()
    asker, stop = Asker(client), asyncio.Event()
    loop = asyncio.create_task(asker.run(stop))
    try:
        await asker.wait_for_answers_since(0.0, ANSWERS_PER_STEP)
        v1, rows1 = index_version(db), row_counts(db)

        # 1. A changed corpus; its ingest writes a document inside its transaction, then holds.
        write_corpus(corpus, "beta", files=FILES)
        inside = tmp_path / "inside"
        proc = await ingest(corpus, db, prefix=(HOLDER, str(inside)))
        await wait_for_file(inside, proc)
        held = time.monotonic()
        holds_lock = writer_holds_the_lock(db)
        await asker.wait_for_answers_since(held, ANSWERS_PER_STEP)       # served while it holds the transaction
        proc.send_signal(signal.SIGKILL)
        assert await proc.wait() == -signal.SIGKILL
        killed = time.monotonic()
        v_after_kill, rows_after_kill, integrity_after_kill = index_version(db), row_counts(db), integrity(db)
        await asker.wait_for_answers_since(killed, ANSWERS_PER_STEP)

        # 2. The next ingest of the same corpus commits, and answers cite it.
        next_began = time.monotonic()
        proc = await ingest(corpus, db)
        assert await proc.wait() == 0, (await proc.stderr.read()).decode()[-2000:] if proc.stderr else ""
        committed = time.monotonic()
        v2 = index_version(db)
        await asker.wait_for_answers_since(committed, ANSWERS_PER_STEP)
    finally:
        stop.set()
        await asyncio.wait_for(loop, 60)

    during_hold = [m for s, e, m in asker.answers if s > held and e < killed]
    record("killed_ingest_short", {
        "answers": len(asker.answers), "answers_while_held": len(during_hold),
        "answers_after_kill_before_next_ingest": sum(s > killed and e < next_began for s, e, _ in asker.answers), "after_next_commit": len(asker.since(committed)),
        "documented_failures": asker.documented_failures, "problems": asker.problems[:5],
        "index_versions": [v1, v_after_kill, v2], "rows_before_after_kill": [rows1, rows_after_kill],
        "writer_held_the_lock": holds_lock, "integrity": integrity_after_kill,
        "mixed_answers": sum(len(m) > 1 for *_, m in asker.answers), "test_s": round(time.monotonic() - began, 1)})
    assert asker.problems == []                                     # done, or a documented error
    assert all(len(m) == 1 for *_, m in asker.answers)              # never two versions in one answer
    assert holds_lock and during_hold and all(m == {"alpha"} for m in during_hold)
    assert (v_after_kill, rows_after_kill, integrity_after_kill) == (v1, rows1, "ok")   # no half-written index
    after_kill = [m for s, e, m in asker.answers if s > killed and e < next_began]
    assert after_kill and all(m == {"alpha"} for m in after_kill)   # the old index still serves
    assert int(v2) > int(v1) and all(m == {"beta"} for m in asker.since(committed))

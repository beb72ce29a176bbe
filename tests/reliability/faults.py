"""Faults injected under load, and the bounds every fault test asserts.

Shared by the short forms (default suite, `test_faults_short.py`) and the long
ones (`make reliability`, `test_cluster_faults.py`), so both hold the figures
docs/reliability.md publishes:

- overload: every response is a 200 with exactly one terminal event or a 503
  with Retry-After; nothing else, no hang, no error event;
- killed index servers: only the answers waiting on the index while it was
  down are lost (in flight at the kill, or sent before it was back), each as
  an `error` event at the retrieval stage; none sent after it was back;
- killed Generator replica: at most GENERATOR_SLOTS answers lost per kill (the
  ones it was generating), a new replica answers, and nothing hangs.

A fault fires when its trigger holds (an event such as "3 answers done", or a
load time for the long forms), never at a wall-clock instant the test then
depends on.
"""
from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from tests.reliability.load import LoadReport, Outcome, run_load
from tests.serve.conftest import pids_with

GENERATOR_SLOTS = 1        # serve_config.yaml: Generator max_ongoing_requests (= engine_slots)
Trigger = Callable[[LoadReport, float], bool]     # (outcomes so far, seconds since the load began)


@dataclass
class Kill:
    at: float            # time.monotonic() of the kill
    victims: int         # processes killed


def replica_pids(root_pid: int, deployment: str) -> list[int]:
    """Replica actors of one deployment under `root_pid` (the cluster's driver), by
    Ray's process title `ray::ServeReplica:askdocs:<name>`."""
    title = f"ServeReplica:askdocs:{deployment}"
    try:
        procs = psutil.Process(root_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    found = []
    for p in procs:
        try:
            if any(title in part for part in p.cmdline()):
                found.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def kill_index_servers(tag: str) -> int:
    """SIGKILL every index server whose command line carries `tag`; how many."""
    victims = pids_with(tag)
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(victims)


def done_count(report: LoadReport) -> int:
    return sum(o.terminal == "done" for o in report.outcomes)


def after(report: LoadReport, at: float) -> list[Outcome]:
    """Outcomes of the requests sent after `at`."""
    return [o for o in report.outcomes if o.started > at]


def done_after(report: LoadReport, at: float) -> list[Outcome]:
    return [o for o in after(report, at) if o.terminal == "done"]


async def load_with_faults(url: str, *, clients: int, question: str, seconds: float,
                           fault: Callable[[], int], triggers: list[Trigger],
                           until: Callable[[LoadReport, list[Kill]], bool] | None = None
                           ) -> tuple[LoadReport, list[Kill]]:
    """Closed-loop load; `fault()` (returns how many processes it killed) fires
    once per trigger, in order. The load stops when `until(report, kills)` holds
    after the last kill, or after `seconds` (for the short forms a hang guard)."""
    report, kills = LoadReport(), []
    started = time.monotonic()

    async def inject() -> None:
        for trigger in triggers:
            while not trigger(report, time.monotonic() - started):
                if time.monotonic() - started > seconds:
                    return
                await asyncio.sleep(0.05)
            at = time.monotonic()
            kills.append(Kill(at, await asyncio.to_thread(fault)))

    def stop(r: LoadReport) -> bool:
        return until is not None and len(kills) == len(triggers) and until(r, kills)

    injector = asyncio.create_task(inject())
    await run_load(url, clients=clients, seconds=seconds, question=question, until=stop, report=report)
    injector.cancel()
    return report, kills


def failed(report: LoadReport) -> list[Outcome]:
    """Answers lost: not a 200 or a 503, an `error` event, or a broken bound."""
    return [o for o in report.outcomes if o.status not in (200, 503) or o.terminal == "error" or o.problem]


# ---------------------------------------------------------------- the published bounds

def assert_overload_bounds(report: LoadReport) -> None:
    assert report.problems() == [], report.problems()[:5]          # 503s carry Retry-After, streams are whole
    statuses = report.statuses()
    assert set(statuses) <= {200, 503} and statuses[200] > 0 and statuses[503] > 0, statuses
    assert report.error_stages() == {}, report.error_stages()


def first_recovered(report: LoadReport, kill: Kill) -> Outcome | None:
    """The first request sent after `kill` that completed: the index was back by then."""
    return min(done_after(report, kill.at), key=lambda o: o.started, default=None)


def index_outage(report: LoadReport, kill: Kill) -> dict[str, int | float | None]:
    """Requests in flight at the kill, sent while the index was down, and the outage's length."""
    back = first_recovered(report, kill)
    end = back.started if back else float("inf")
    return {"in_flight_at_kill": sum(o.started <= kill.at < o.ended for o in report.outcomes),
            "sent_during_outage": sum(kill.at < o.started < end for o in report.outcomes),
            "first_answer_sent_after_kill_s": round(back.started - kill.at, 2) if back else None}


def assert_index_kill_bounds(report: LoadReport, kills: list[Kill]) -> None:
    """Only the answers waiting on the index while it was down are lost, each as a
    clean `error` event (stage retrieval); once one answer sent after a kill
    completes, none sent after it is lost."""
    assert kills and all(k.victims >= 1 for k in kills), kills     # each kill found index servers
    assert report.problems() == [], report.problems()[:5]
    assert set(report.error_stages()) <= {"retrieval"}, report.error_stages()
    back_at = [first_recovered(report, k) for k in kills]
    assert all(back_at), "no answer completed after a kill"
    windows = [(k.at, b.started) for k, b in zip(kills, back_at) if b]     # index down: kill → first good send
    for o in report.outcomes:
        if o.error_stage == "retrieval":
            assert any(killed < o.ended and o.started < back for killed, back in windows), (
                f"an answer sent after the index was back failed: started {o.started}, outages {windows}")


def assert_generator_kill_bounds(report: LoadReport, kills: list[Kill], *, hang_guard_s: float) -> None:
    assert len(kills) == 1
    killed_at = kills[0].at
    assert not [o for o in report.outcomes if o.problem and "hang" in o.problem]
    assert len(failed(report)) <= GENERATOR_SLOTS, [(o.status, o.error_stage, o.problem) for o in failed(report)]
    assert all(o.error_stage == "generation" for o in failed(report) if o.error_stage)
    recovered = done_after(report, killed_at)
    assert recovered and min(o.ended for o in recovered) - killed_at < hang_guard_s, "no answer after the kill"


def recovery_s(report: LoadReport, killed_at: float) -> float | None:
    recovered = done_after(report, killed_at)
    return round(min(o.ended for o in recovered) - killed_at, 2) if recovered else None

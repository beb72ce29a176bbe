"""A bounded closed-loop load generator for the reliability tests.

`run_load(url, clients, seconds)` keeps `clients` requests in flight for
`seconds` (each client posts, reads the whole SSE stream, posts again) and
judges every response as it arrives: 200 must be an SSE stream with exactly
one terminal event, 503 must carry Retry-After, anything else, a client
timeout or a transport error is recorded as a violation with its detail.
Nothing waits unbounded: each request has a hard deadline.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from serve_app.percentile import p50_p95

REQUEST_DEADLINE_S = 120.0    # far above any answer or restart here (a killed Generator: 43 s at load 25)


@dataclass
class Outcome:
    started: float
    ended: float
    status: int | None            # None: timeout or transport error
    terminal: str | None = None   # "done" | "error" for 200 streams
    error_stage: str | None = None
    problem: str | None = None    # a broken bound; None when the response is acceptable


@dataclass
class LoadReport:
    outcomes: list[Outcome] = field(default_factory=list)

    def statuses(self) -> Counter:
        return Counter(o.status for o in self.outcomes)

    def problems(self) -> list[str]:
        return [o.problem for o in self.outcomes if o.problem]

    def error_stages(self) -> Counter:
        return Counter(o.error_stage for o in self.outcomes if o.error_stage)

    def summary(self) -> dict:
        done = [o for o in self.outcomes if o.terminal == "done"]
        return {"requests": len(self.outcomes), "statuses": {str(k): v for k, v in self.statuses().items()},
                "answers_done": len(done), "error_events_by_stage": dict(self.error_stages()),
                "problems": len(self.problems()),
                "done_latency_s": p50_p95(o.ended - o.started for o in done) if done else None}


def judge_sse(body: str) -> tuple[str | None, str | None, str | None]:
    """(terminal event, error stage, problem) of one SSE body."""
    frames = [f for f in body.split("\n\n") if f.strip()]
    names, stage = [], None
    for frame in frames:
        lines = frame.split("\n")
        if len(lines) != 2 or not lines[0].startswith("event: ") or not lines[1].startswith("data: "):
            return None, None, f"malformed SSE frame {frame[:80]!r}"
        names.append(lines[0][7:])
        if names[-1] == "error":
            stage = json.loads(lines[1][6:]).get("stage")
    terminals = [n for n in names if n in ("done", "error")]
    if not body.endswith("\n\n"):
        return None, stage, "stream cut mid-frame"
    if len(terminals) != 1 or names[-1] not in ("done", "error"):
        return None, stage, f"{len(terminals)} terminal events, last {names[-1:] }"
    return names[-1], stage, None


async def one_request(client: httpx.AsyncClient, url: str, question: str) -> Outcome:
    started = time.monotonic()
    try:
        async with asyncio.timeout(REQUEST_DEADLINE_S):
            response = await client.post(f"{url}/ask", json={"question": question})
    except TimeoutError:
        return Outcome(started, time.monotonic(), None, problem="client deadline hit (hang)")
    except httpx.HTTPError as e:
        return Outcome(started, time.monotonic(), None, problem=f"transport error {type(e).__name__}: {e}")
    ended = time.monotonic()
    if response.status_code == 503:
        ok = response.headers.get("retry-after", "").isdigit()
        return Outcome(started, ended, 503, problem=None if ok else "503 without Retry-After")
    if response.status_code != 200:
        return Outcome(started, ended, response.status_code, problem=f"status {response.status_code}: {response.text[:200]}")
    terminal, stage, problem = judge_sse(response.text)
    return Outcome(started, ended, 200, terminal, stage, problem)


async def run_load(url: str, *, clients: int, seconds: float, question: str | Callable[[], str],
                   pause_after_503_s: float = 0.05, until: Callable[[LoadReport], bool] | None = None,
                   report: LoadReport | None = None) -> LoadReport:
    """`clients` closed-loop clients for `seconds`, or until `until(report)` holds
    (then `seconds` is only a hang guard); a 503 is followed by a short pause
    (not Retry-After: the point is to keep the pressure at `clients`). Pass
    `report` to watch the outcomes while the load runs (a fault injector)."""
    report = LoadReport() if report is None else report
    stop_at = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def client_loop(client: httpx.AsyncClient) -> None:
        while time.monotonic() < stop_at and not (until and until(report)):
            q = question() if callable(question) else question
            outcome = await one_request(client, url, q)
            report.outcomes.append(outcome)
            if outcome.status != 200:
                await asyncio.sleep(pause_after_503_s)

    async with httpx.AsyncClient(timeout=httpx.Timeout(REQUEST_DEADLINE_S, connect=10.0), limits=limits) as client:
        await asyncio.gather(*(client_loop(client) for _ in range(clients)))
    return report

"""Read one askdocs SSE answer: the parsing half of the Locust user.

Kept free of Locust imports (Locust monkey-patches the standard library with
gevent on import), so tests can drive it directly. The SSE parsing itself is
the project's one reader, deployments/sse.py.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from deployments.sse import SseEvent, iter_events

__all__ = ["Answer", "Ending", "SseEvent", "ended_in_window", "iter_events", "read_answer"]


class Ending(Enum):
    DONE = "done"
    ERROR = "error"
    INCOMPLETE = "incomplete"  # the stream ended without a terminal event


@dataclass(frozen=True)
class Answer:
    ending: Ending
    total_s: float
    ttft_s: float | None  # None when no token came (gate refusals, errors)
    tokens: int
    refused: bool = False
    detail: str | None = None  # the error event's stage, or why a stream broke


def read_answer(
    lines: Iterable[str | bytes], started: float, clock: Callable[[], float] = time.perf_counter
) -> Answer:
    """Consume one answer's stream until its terminal event.

    ``started`` is the ``clock()`` reading taken before the request was sent,
    so both times include connection and queueing.
    """
    ttft: float | None = None
    tokens = 0
    for event in iter_events(lines):
        if event.event == "token":
            tokens += 1
            if ttft is None:
                ttft = clock() - started
        elif event.event == "done":
            payload = _json(event.data)
            return Answer(Ending.DONE, clock() - started, ttft, tokens, refused=bool(payload.get("refused")))
        elif event.event == "error":
            payload = _json(event.data)
            stage = str(payload.get("stage", "unknown"))
            return Answer(Ending.ERROR, clock() - started, ttft, tokens, detail=stage)
    return Answer(Ending.INCOMPLETE, clock() - started, ttft, tokens)


def _json(data: str) -> dict[str, object]:
    try:
        value = json.loads(data)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def ended_in_window(ended_at: float, window_end: float | None) -> bool:
    """Whether an answer that ended at ``ended_at`` counts for the measured window.

    Locust's ``--run-time`` is the window; with ``--stop-timeout`` users may
    still finish the answer in flight after it. Those answers are real, but
    counting them would divide more answers than the window produced by the
    window's length (answers/s too high by up to one answer per user).
    ``window_end`` None: no run time was set, everything counts.
    """
    return window_end is None or ended_at <= window_end

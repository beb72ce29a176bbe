"""Locust user for askdocs: one SSE answer at a time, in a closed loop.

Entries in Locust's statistics:

* ``POST /ask``      time to response headers of accepted (200) requests;
                     any status but 200/503 is a failure here
* ``POST /ask 503``  rejected at capacity; its own entry, never a failure
                     (the user then waits ``Retry-After``, capped, as a
                     well-behaved client would)
* ``ttft``           request sent → first ``token`` event
* ``answer``         request sent → ``done``; a failure when the stream ends
                     without ``done``/``error`` ("incomplete stream") or
                     carries ``error`` ("error event, stage=…"). Only answers
                     that end within ``--run-time`` (the measured window)
* ``answer after run time``  the same for answers that end during
                     ``--stop-timeout``: reported, never counted in answers/s

Locust's CSV is rewritten once a second while it runs and not at the end, so
it can miss the last second; the user therefore also counts answers itself
and writes ``<csv prefix>_window.json`` ({"answers", "failed", "late"}) when
Locust quits, which loadtest/summarize.py prefers for answers/s.

Questions: ``ASKDOCS_LOADTEST_QUESTIONS`` (a .jsonl with a ``question`` field
or a .txt, one per line), else evals/cases.jsonl, else loadtest/questions.txt.
Run through loadtest/run.sh; see loadtest/README.md.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

import requests
from locust import HttpUser, constant, events, task

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sse_client import Answer, Ending, ended_in_window, read_answer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
ASK_ENTRY = "POST /ask"
BUSY_ENTRY = "POST /ask 503"
TTFT_ENTRY = "ttft"
ANSWER_ENTRY = "answer"
LATE_ENTRY = "answer after run time"
SSE = "SSE"

# The longest silence allowed (connecting, then between any two bytes): a CPU
# model's first token can take tens of seconds, yet a stuck stream must end
# as a failure. The whole run is bounded by run.sh (--run-time, --stop-timeout).
TIMEOUT_S = float(os.environ.get("ASKDOCS_LOADTEST_TIMEOUT_S", "120"))
RETRY_AFTER_CAP_S = float(os.environ.get("ASKDOCS_LOADTEST_RETRY_AFTER_CAP_S", "5"))
COLLECTION = os.environ.get("ASKDOCS_LOADTEST_COLLECTION") or None


def load_questions() -> list[str]:
    override = os.environ.get("ASKDOCS_LOADTEST_QUESTIONS")
    candidates = [Path(override)] if override else [ROOT / "evals" / "cases.jsonl", ROOT / "loadtest" / "questions.txt"]
    for path in candidates:
        if path.is_file():
            questions = _read_questions(path)
            if questions:
                return questions
    raise SystemExit(f"no questions found in {', '.join(map(str, candidates))}")


def _read_questions(path: Path) -> list[str]:
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    if path.suffix == ".jsonl":
        return [str(json.loads(line)["question"]) for line in lines if line]
    return [line for line in lines if line and not line.startswith("#")]


QUESTIONS = load_questions()
_WINDOW: dict[str, float | None] = {"end": None}     # perf_counter() at which --run-time ends
_COUNTS = {"answers": 0, "failed": 0, "late": 0}     # answers done / failed within the window, ended after it


@events.test_start.add_listener
def _open_window(environment, **_kwargs) -> None:  # type: ignore[no-untyped-def]
    run_time = getattr(environment.parsed_options, "run_time", None)
    if isinstance(run_time, str):
        from locust.util.timespan import parse_timespan
        run_time = parse_timespan(run_time)
    _WINDOW["end"] = time.perf_counter() + float(run_time) if run_time else None


@events.quitting.add_listener
def _write_counts(environment, **_kwargs) -> None:  # type: ignore[no-untyped-def]
    prefix = getattr(environment.parsed_options, "csv_prefix", None)
    if prefix:
        Path(f"{prefix}_window.json").write_text(json.dumps(_COUNTS) + "\n", encoding="utf-8")


class IncompleteStream(Exception):
    """The SSE stream ended (or broke) without a ``done`` or ``error`` event."""


class AnswerError(Exception):
    """The service answered with an ``error`` event."""


class AskUser(HttpUser):
    # Closed loop: the next question goes out as soon as the answer ends.
    wait_time = constant(0)
    _started = itertools.count()

    def on_start(self) -> None:
        # User n starts at question n, so users do not ask in lockstep and
        # the first round already covers min(users, questions) questions.
        start = next(AskUser._started) % len(QUESTIONS)
        self._questions = itertools.islice(itertools.cycle(QUESTIONS), start, None)

    @task
    def ask(self) -> None:
        body: dict[str, object] = {"question": next(self._questions)}
        if COLLECTION:
            body["collection"] = COLLECTION
        started = time.perf_counter()
        pause_s = 0.0
        with self.client.post(
            "/ask",
            json=body,
            headers={"Accept": "text/event-stream"},
            stream=True,
            catch_response=True,
            name=ASK_ENTRY,
            timeout=TIMEOUT_S,
        ) as response:
            if response.status_code == 503:
                response.request_meta["name"] = BUSY_ENTRY
                response.success()
                pause_s = _retry_after(response.headers.get("Retry-After"))
            elif response.status_code == 0:  # no HTTP response at all
                response.failure(f"no response: {type(response.error).__name__}")
            elif response.status_code != 200:
                response.failure(f"HTTP {response.status_code}")
            else:
                response.success()
                self._report(self._read(response, started), started)
            response.close()
        if pause_s:
            time.sleep(pause_s)  # gevent-patched: only this user waits

    @staticmethod
    def _read(response: requests.Response, started: float) -> Answer:
        try:
            return read_answer(response.iter_lines(), started)
        except requests.RequestException as exc:  # connection broke, read timed out
            return Answer(Ending.INCOMPLETE, time.perf_counter() - started, None, 0, detail=type(exc).__name__)

    def _report(self, answer: Answer, started: float) -> None:
        if answer.ttft_s is not None:
            self._fire(TTFT_ENTRY, answer.ttft_s, 0, None)
        failure: Exception | None = None
        if answer.ending is Ending.INCOMPLETE:
            reason = f" ({answer.detail})" if answer.detail else ""
            failure = IncompleteStream(f"stream ended without done/error{reason}")
        elif answer.ending is Ending.ERROR:
            failure = AnswerError(f"error event, stage={answer.detail}")
        in_window = ended_in_window(started + answer.total_s, _WINDOW["end"])
        _COUNTS["late" if not in_window else "failed" if failure else "answers"] += 1
        self._fire(ANSWER_ENTRY if in_window else LATE_ENTRY, answer.total_s, answer.tokens, failure)

    def _fire(self, name: str, seconds: float, length: int, exception: Exception | None) -> None:
        self.environment.events.request.fire(
            request_type=SSE,
            name=name,
            response_time=seconds * 1000,
            response_length=length,
            exception=exception,
            context={},
        )


def _retry_after(header: str | None) -> float:
    try:
        return min(max(float(header or 1), 0.0), RETRY_AFTER_CAP_S)
    except ValueError:
        return min(1.0, RETRY_AFTER_CAP_S)

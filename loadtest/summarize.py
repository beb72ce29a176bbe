"""Turn one loadtest/run.sh results folder into a markdown table.

    python loadtest/summarize.py --results loadtest/results/<stamp> \
        --engine fake --model none --machine "…" [--doc docs/load-test.md]

Reads ``u<N>_stats.csv`` (Locust's ``--csv`` output) for each user count,
prints one section and writes it to ``<results>/summary.md``; with ``--doc``
it is appended to that file instead (how docs/load-test.md is updated, on
purpose only). Paths are never written absolute: the model is named by its
file name, the results folder relative to the working directory. Columns:

* answers/s     answers completed (``done``) within the measured window
                (``--run-time``) per second of it; answers that finish during
                ``--stop-timeout`` are listed apart, not counted
* load avg      the machine's 1-minute load average before → after the run
                (other work on the machine shows here, not hidden)
* ttft, answer  P50/P95 in ms, from request sent (Locust's rounded percentiles)
* 503 share     rejected at capacity / all POST /ask attempts
* failures      non-200/503 statuses + streams ending in ``error`` or without
                a terminal event

A percentile of fewer than ``MIN_SAMPLES`` samples is shown with its ``n``
and warned about (a P95 of 6 answers is their maximum, not a P95).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# Entry names, as loadtest/locustfile.py reports them.
ASK, BUSY, TTFT, ANSWER = "POST /ask", "POST /ask 503", "ttft", "answer"
LATE = "answer after run time"
MIN_SAMPLES = 20        # fewer: a percentile is shown with its n and warned about


@dataclass(frozen=True)
class Entry:
    count: int
    failures: int
    rps: float
    p50: str
    p95: str


@dataclass(frozen=True)
class Level:
    users: int
    load: str  # the machine's 1-minute load average at the start → end of the run
    answers_per_s: float
    answers: int
    ttft: tuple[str, str]
    answer: tuple[str, str]
    busy_share: float
    failures: int
    samples: tuple[int, int] = (0, 0)   # ttft, answer: what their percentiles rest on
    late: int = 0                       # answers that ended during the stop timeout (not counted)


def read_entries(stats_csv: Path) -> dict[str, Entry]:
    entries = {}
    with stats_csv.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["Name"] == "Aggregated":
                continue
            entries[row["Name"]] = Entry(
                count=int(row["Request Count"]),
                failures=int(row["Failure Count"]),
                rps=float(row["Requests/s"]),
                p50=row["50%"],
                p95=row["95%"],
            )
    return entries


def summarize_level(users: int, entries: dict[str, Entry], duration_s: float, load: str = "–") -> Level:
    empty = Entry(0, 0, 0.0, "N/A", "N/A")
    ask, busy = entries.get(ASK, empty), entries.get(BUSY, empty)
    ttft, answer, late = entries.get(TTFT, empty), entries.get(ANSWER, empty), entries.get(LATE, empty)
    completed = answer.count - answer.failures
    # Over the run time, not Locust's Requests/s: that divides by the time
    # between the first and last recorded request, which says 7 answers/s
    # for 4 quick answers followed by one that took the rest of the run.
    attempts = ask.count + busy.count
    return Level(
        users=users,
        load=load,
        answers_per_s=completed / duration_s,
        answers=completed,
        ttft=(ttft.p50, ttft.p95),
        answer=(answer.p50, answer.p95),
        busy_share=busy.count / attempts if attempts else 0.0,
        failures=sum(e.failures for e in entries.values()),
        samples=(ttft.count, answer.count),
        late=late.count,
    )


def read_load(path: Path) -> str:
    """``u<N>.loadavg`` holds two numbers written by run.sh: before and after."""
    if not path.is_file():
        return "–"
    values = path.read_text().split()
    return "→".join(values) if values else "–"


def read_window(path: Path) -> dict[str, int] | None:
    """``u<N>_window.json``: the Locust user's own counts, complete when Locust's CSV is not
    (it is rewritten once a second and not at the end)."""
    try:
        counts = json.loads(path.read_text(encoding="utf-8"))
        return {key: int(counts[key]) for key in ("answers", "failed", "late")}
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_levels(results: Path, duration_s: float) -> list[Level]:
    levels = []
    for stats in results.glob("u*_stats.csv"):
        match = re.fullmatch(r"u(\d+)_stats\.csv", stats.name)
        if match:
            users = int(match.group(1))
            load = read_load(results / f"u{users}.loadavg")
            level = summarize_level(users, read_entries(stats), duration_s, load)
            window = read_window(results / f"u{users}_window.json")
            if window is not None:
                level = dataclasses.replace(level, answers=window["answers"], late=window["late"],
                                            answers_per_s=window["answers"] / duration_s)
            levels.append(level)
    if not levels:
        raise SystemExit(f"no u<N>_stats.csv in {results}")
    return sorted(levels, key=lambda level: level.users)


def _ms(value: str, samples: int | None = None) -> str:
    if value in ("", "N/A"):
        return "–"
    return f"{value} (n={samples})" if samples is not None and samples < MIN_SAMPLES else value


def warnings(levels: list[Level]) -> list[str]:
    """One line per user count whose percentiles rest on fewer than MIN_SAMPLES samples."""
    out = []
    for lv in levels:
        thin = [f"{name} n={n}" for name, n in zip(("ttft", "answer"), lv.samples) if 0 < n < MIN_SAMPLES]
        if thin:
            out.append(f"{lv.users} user(s): percentiles rest on fewer than {MIN_SAMPLES} samples "
                       f"({', '.join(thin)}); run longer for a P95 that means one")
    return out


def model_label(model: str) -> str:
    """A model path is named by its file or folder name: never an absolute path in a table."""
    return Path(model).name if "/" in model or "\\" in model else model


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when inside it, else only its name."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.name if path.is_absolute() else path.as_posix()


def render(levels: list[Level], *, title: str, details: list[str]) -> str:
    lines = [f"### {title}", ""]
    lines += [f"- {d}" for d in details]
    lines += [
        "",
        "| users | answers/s | answers | ttft P50 ms | ttft P95 ms | answer P50 ms | answer P95 ms | 503 share "
        "| failures | load avg |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for lv in levels:
        tn, an = lv.samples
        lines.append(
            f"| {lv.users} | {lv.answers_per_s:.2f} | {lv.answers} | {_ms(lv.ttft[0], tn)} | {_ms(lv.ttft[1], tn)} "
            f"| {_ms(lv.answer[0], an)} | {_ms(lv.answer[1], an)} | {lv.busy_share:.0%} | {lv.failures} | {lv.load} |"
        )
    notes = [f"⚠ {w}" for w in warnings(levels)]
    late = [f"{lv.users} user(s): {lv.late}" for lv in levels if lv.late]
    if late:
        notes.append("answers that finished after the run time, during the stop timeout (not in answers/s): "
                     + ", ".join(late))
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Summarize a loadtest/run.sh results folder as markdown.")
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--engine", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--machine", required=True)
    parser.add_argument("--date", required=True)
    parser.add_argument("--target", default="http://127.0.0.1:8000")
    parser.add_argument("--duration-s", type=int, required=True)
    parser.add_argument("--note", default="")
    parser.add_argument("--doc", type=Path, default=None,
                        help="append the section to this file (e.g. docs/load-test.md) instead of "
                             "writing RESULTS/summary.md")
    parser.add_argument("--print-only", action="store_true", help="print the table; write nothing")
    args = parser.parse_args(argv)

    model = model_label(args.model)
    details = [
        f"engine `{args.engine}`, model `{model}`",
        f"machine: {args.machine}",
        f"{args.duration_s} s per level (the measured window), closed loop, target {args.target}; "
        f"raw CSV/HTML: `{display_path(args.results)}` (not committed)",
        "command: `loadtest/run.sh` (loadtest/README.md)",
    ]
    if args.note:
        details.append(args.note)
    levels = read_levels(args.results, args.duration_s)
    text = render(levels, title=f"{args.date} · {args.engine} · {model}", details=details)
    sys.stdout.write(text)
    for warning in warnings(levels):
        print(f"summarize: warning: {warning}", file=sys.stderr)
    if args.print_only:
        return
    if args.doc is None:
        (args.results / "summary.md").write_text(text, encoding="utf-8")
        print(f"(written to {display_path(args.results / 'summary.md')}; DOC=docs/load-test.md appends it there)")
        return
    with args.doc.open("a", encoding="utf-8") as doc:
        doc.write("\n" + text)
    print(f"(appended to {args.doc})")


if __name__ == "__main__":
    main()

"""Turn one loadtest/run.sh results folder into a markdown table.

    python loadtest/summarize.py --results loadtest/results/<stamp> \
        --engine fake --model none --machine "…" [--doc docs/load-test.md]

Reads ``u<N>_stats.csv`` (Locust's ``--csv`` output) for each user count and
prints one section and appends it to ``--doc`` (unless ``--print-only``). Columns:

* answers/s     completed answers (``done``) per second of run time
* load avg      the machine's 1-minute load average before → after the run
                (other work on the machine shows here, not hidden)
* ttft, answer  P50/P95 in ms, from request sent (Locust's rounded percentiles)
* 503 share     rejected at capacity / all POST /ask attempts
* failures      non-200/503 statuses + streams ending in ``error`` or without
                a terminal event
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# Entry names, as loadtest/locustfile.py reports them.
ASK, BUSY, TTFT, ANSWER = "POST /ask", "POST /ask 503", "ttft", "answer"


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
    ttft, answer = entries.get(TTFT, empty), entries.get(ANSWER, empty)
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
    )


def read_load(path: Path) -> str:
    """``u<N>.loadavg`` holds two numbers written by run.sh: before and after."""
    if not path.is_file():
        return "–"
    values = path.read_text().split()
    return "→".join(values) if values else "–"


def read_levels(results: Path, duration_s: float) -> list[Level]:
    levels = []
    for stats in results.glob("u*_stats.csv"):
        match = re.fullmatch(r"u(\d+)_stats\.csv", stats.name)
        if match:
            users = int(match.group(1))
            load = read_load(results / f"u{users}.loadavg")
            levels.append(summarize_level(users, read_entries(stats), duration_s, load))
    if not levels:
        raise SystemExit(f"no u<N>_stats.csv in {results}")
    return sorted(levels, key=lambda level: level.users)


def _ms(value: str) -> str:
    return "–" if value in ("", "N/A") else value


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
        lines.append(
            f"| {lv.users} | {lv.answers_per_s:.2f} | {lv.answers} | {_ms(lv.ttft[0])} | {_ms(lv.ttft[1])} "
            f"| {_ms(lv.answer[0])} | {_ms(lv.answer[1])} | {lv.busy_share:.0%} | {lv.failures} | {lv.load} |"
        )
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
    parser.add_argument("--doc", type=Path, default=Path("docs/load-test.md"))
    parser.add_argument("--print-only", action="store_true", help="print the table; do not append to --doc")
    args = parser.parse_args(argv)

    details = [
        f"engine `{args.engine}`, model `{args.model}`",
        f"machine: {args.machine}",
        f"{args.duration_s} s per level, closed loop, target {args.target}; "
        f"raw CSV/HTML: `{args.results.as_posix()}` (not committed)",
        "command: `loadtest/run.sh` (loadtest/README.md)",
    ]
    if args.note:
        details.append(args.note)
    text = render(read_levels(args.results, args.duration_s), title=f"{args.date} · {args.engine} · {args.model}", details=details)
    sys.stdout.write(text)
    if args.print_only:
        return
    with args.doc.open("a", encoding="utf-8") as doc:
        doc.write("\n" + text)
    print(f"(appended to {args.doc})")


if __name__ == "__main__":
    main()

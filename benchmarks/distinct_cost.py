"""What `Ranking.distinct` (docindex/duplicates.py) costs a search: P50 / P95 of Index.search with it
on and off, interleaved, over an out-of-sample corpus's questions (both halves: no quality is scored),
for the passages ranking (k = 4, what an answer gets) and the page ranking (k = 10, `docindex search`).

    .venv/bin/python benchmarks/distinct_cost.py --corpus postgresql --repeats 3   # needs make corpora
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from docindex.index import Index  # noqa: E402
from docindex.ranking import RANKINGS  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="postgresql", choices=("postgresql", "python"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in open(ROOT / f"benchmarks/oos/{args.corpus}/questions.jsonl")]
    index = Index(ROOT / f"var/oos/{args.corpus}.db")
    index.search(questions[0], 4, args.corpus)                  # open, load, warm the embedder
    result = {}
    for name, k in (("passages", 4), ("pages", 10)):
        times: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeats):
            for question in questions:
                for on in (False, True):
                    ranking = replace(RANKINGS[name], distinct=on)
                    started = time.perf_counter()
                    index.search(question, k, args.corpus, ranking=ranking)
                    times[on].append((time.perf_counter() - started) * 1e3)
        result[name] = {("on" if on else "off"): {"p50_ms": round(percentile(t, 50) or 0.0, 2),
                                                  "p95_ms": round(percentile(t, 95) or 0.0, 2)}
                        for on, t in times.items()}
    result.update(corpus=args.corpus, searches=len(questions) * args.repeats, chunks=len(index._snapshot.ids),
                  date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load=round(os.getloadavg()[0], 1),
                  machine=f"{platform.machine()}, {os.cpu_count()} cores",
                  commit=subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                        cwd=ROOT).stdout.strip())
    print(json.dumps(result))


if __name__ == "__main__":
    main()

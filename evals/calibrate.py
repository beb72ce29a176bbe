"""Calibrate the Gate's cosine floor on the eval cases.

The Gate refuses before the model when the best cosine among the passages it
is given is below `gate_min_cosine`. This script retrieves every case
in-process exactly as the service does (same k, ranked by fusion, best
cosine among those k), reports the cosine bands per kind, and picks

    floor = (lowest best-cosine of any answerable case) - margin

i.e. the highest floor that wrongly refuses no answerable case, lowered by a
safety margin for paraphrases the cases do not cover; it then counts how many
off-topic questions the floor refuses at the Gate. In-domain unanswerable
questions are expected to pass the Gate (they score like real questions) and
be refused by the model: that is the peer's finding this design builds on.

    python -m evals.calibrate --db var/eval.db            # writes evals/results/calibration/
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from evals.cases import Case, load_cases

RESULTS_DIR = Path(__file__).resolve().parent / "results" / "calibration"
DEFAULT_MARGIN = 0.05
SERVICE_K = 4          # serve_app Settings: default_k is capped to prompt_max_sources (4)


def best_cosines(cases: Sequence[Case], db: str, collection: str, k: int) -> dict[str, float]:
    from docindex.index import Index

    index = Index(db)
    return {c.id: max((h.cosine for h in index.search(c.question, k, collection)), default=-1.0) for c in cases}


def band(values: Sequence[float]) -> dict:
    return {"n": len(values), "min": round(min(values), 3), "median": round(statistics.median(values), 3),
            "max": round(max(values), 3)}


def choose_floor(cases: Sequence[Case], best: dict[str, float], margin: float) -> dict:
    answerable = [best[c.id] for c in cases if c.answerable]
    floor = math.floor((min(answerable) - margin) * 100) / 100      # round down to 0.01
    by_kind = {}
    for kind in ("factual", "two_source", "unanswerable", "off_topic"):
        ids = [c.id for c in cases if c.kind == kind]
        below = [i for i in ids if best[i] < floor]
        by_kind[kind] = {"refused_at_gate": len(below), "of": len(ids), "ids": below}
    gap_low = max((best[c.id] for c in cases if c.kind == "off_topic"), default=None)
    return {"floor": floor, "margin": margin, "lowest_answerable": round(min(answerable), 3),
            "highest_off_topic": None if gap_low is None else round(gap_low, 3), "gate_refusals": by_kind}


def main(argv: Iterable[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m evals.calibrate", description=__doc__.split("\n\n")[0])
    p.add_argument("--db", default="var/eval.db")
    p.add_argument("--collection", default="cmcp")
    p.add_argument("--k", type=int, default=SERVICE_K, help="passages the Gate sees (default %(default)s, as served)")
    p.add_argument("--margin", type=float, default=DEFAULT_MARGIN)
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    p.add_argument("--machine", default="2-core x86-64 VM, 24 GiB, no GPU")
    args = p.parse_args(argv)
    if not Path(args.db).is_file():
        print(f"calibrate: no index at {args.db}; build it with `python -m evals.build_index`", file=sys.stderr)
        return 2
    cases = load_cases()
    best = best_cosines(cases, args.db, args.collection, args.k)
    bands = {kind: band([best[c.id] for c in cases if c.kind == kind])
             for kind in ("factual", "two_source", "unanswerable", "off_topic")}
    bands["answerable"] = band([best[c.id] for c in cases if c.answerable])
    choice = choose_floor(cases, best, args.margin)
    result = {"created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
              "script": "python -m evals.calibrate", "db": args.db, "collection": args.collection, "k": args.k, "machine": args.machine,
              "embedder": "all-MiniLM-L6-v2 (ONNX int8, docindex default)",
              "bands": bands, "choice": choice,
              "best_cosine": {c.id: round(best[c.id], 4) for c in cases}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "calibration.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print("| kind | n | min | median | max |\n|---|---:|---:|---:|---:|")
    for kind, b in bands.items():
        print(f"| {kind} | {b['n']} | {b['min']:.3f} | {b['median']:.3f} | {b['max']:.3f} |")
    print(f"\nfloor = {choice['floor']:.2f} (lowest answerable {choice['lowest_answerable']:.3f} - margin "
          f"{args.margin}, rounded down); gate refusals at this floor:")
    for kind, r in choice["gate_refusals"].items():
        print(f"  {kind}: {r['refused_at_gate']}/{r['of']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the Gate could see, per question, on dev data only: answerable vs off-topic.

    .venv/bin/python benchmarks/gate_evidence.py --eval-db var/eval.db \
        --oos postgresql=var/oos/postgresql.db --oos python=var/oos/python.db

For each question it searches as the service does (k=4 passages, the shipped
ranking) and records the best cosine, the best coverage (idf-weighted share
of the question's words found in a passage, docindex/lexical.py) and the best
BM25 among the passages. Questions: the cMCP dev eval's cases (answerable =
factual + two_source; off-topic = off_topic; unanswerable reported apart),
and each out-of-sample corpus's DEV half (questions.jsonl answerable,
off_topic.jsonl off-topic). Then it scores Gate rules (deployments/gate.py)
on those features: wrong refusals (answerable refused) and off-topic
refusals. Writes benchmarks/results/gate_evidence.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from deployments.gate import decide  # noqa: E402
from deployments.passage import Passage  # noqa: E402
from docindex.index import Index  # noqa: E402

SERVICE_K = 4
SHIPPED = {"min_cosine": 0.29}
GRID = [{"min_cosine": c, "min_coverage": v, "sure_cosine": sure}
        for c in (0.1, 0.15, 0.2, 0.25, 0.29) for v in (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
        for sure in (0.4, 0.45, 0.5, 0.55, 0.6, None)]
MAX_WRONG = 0.02        # the targets on each out-of-sample dev half
MIN_OFF_TOPIC = 0.95


def features(index: Index, question: str, collection: str | None) -> dict:
    hits = index.search(question, SERVICE_K, collection)
    return {"cosine": max((h.cosine for h in hits), default=-1.0),
            "coverage": max((h.coverage for h in hits), default=0.0),
            "bm25": max((h.bm25 for h in hits), default=0.0),
            "passages": [{"cosine": h.cosine, "coverage": h.coverage, "bm25": h.bm25, "fusion": h.fusion}
                         for h in hits]}


def questions_of(target: str) -> dict[str, list[tuple[str, str]]]:
    """kind → [(id, question)] with kinds answerable | off_topic | unanswerable; dev data only."""
    if target == "cmcp-dev-eval":
        from evals.cases import load_cases
        groups: dict[str, list] = {"answerable": [], "off_topic": [], "unanswerable": []}
        for case in load_cases():
            kind = "answerable" if case.answerable else case.kind
            groups[kind].append((case.id, case.question))
        return groups
    from benchmarks.oos.questions import off_topic, questions
    return {"answerable": [(q["id"], q["question"]) for q in questions(target, "dev")],
            "off_topic": [(q["id"], q["question"]) for q in off_topic(target, "dev")]}


def rule_scores(rows: dict[str, list[dict]], rule: dict) -> dict:
    out = {}
    for kind, items in rows.items():
        refused = [r["id"] for r in items if not decide(
            [Passage(source="", text="", cosine=p["cosine"], bm25=p["bm25"], fusion=p["fusion"],
                     coverage=p["coverage"]) for p in r["passages"]], **rule).passed]
        out[kind] = {"refused": len(refused), "of": len(items), "ids": refused}
    return out


def rule_name(rule: dict) -> str:
    name = f"cosine ≥ {rule['min_cosine']}"
    if rule.get("min_coverage") is not None:
        name += f" and coverage ≥ {rule['min_coverage']}"
    if rule.get("sure_cosine") is not None:
        name += f", or cosine ≥ {rule['sure_cosine']}"
    return name


def meets_targets(per_target: dict[str, dict]) -> bool:
    for target, scores in per_target.items():
        wrong, off = scores["answerable"], scores["off_topic"]
        if target == "cmcp-dev-eval":
            if wrong["refused"] or off["refused"] < 7:
                return False
        elif wrong["refused"] > MAX_WRONG * wrong["of"] or off["refused"] < MIN_OFF_TOPIC * off["of"]:
            return False
    return True


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eval-db", type=Path, default=REPO / "var" / "eval.db")
    p.add_argument("--oos", action="append", default=[], help="NAME=DB of an out-of-sample corpus")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "gate_evidence.json")
    args = p.parse_args()
    targets = [("cmcp-dev-eval", args.eval_db, "cmcp")]
    targets += [(s.split("=", 1)[0], Path(s.split("=", 1)[1]), None) for s in args.oos]
    result: dict = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "k": SERVICE_K,
                             "loadavg": Path("/proc/loadavg").read_text().split()[:3]}, "targets": {}}
    rows_by_target = {}
    for target, db, collection in targets:
        with Index(db) as index:
            rows_by_target[target] = {kind: [{"id": i, **features(index, q, collection)} for i, q in items]
                                      for kind, items in questions_of(target).items()}
        result["targets"][target] = {"questions": rows_by_target[target]}
    rules = {rule_name(r): r for r in [SHIPPED, *GRID]}
    scored = {name: {t: rule_scores(rows, rule) for t, rows in rows_by_target.items()} for name, rule in rules.items()}
    passing = [name for name in rules if meets_targets(scored[name])]
    result["rules"] = {name: {"settings": rules[name], "meets_targets": name in passing, "scores": scored[name]}
                       for name in [rule_name(SHIPPED), *passing]}
    # the grid's best trade-offs, for the record: fewest wrong refusals, then most off-topic refused
    def cost(name):
        s = scored[name]
        return (sum(v["answerable"]["refused"] / v["answerable"]["of"] for v in s.values()),
                -sum(v["off_topic"]["refused"] / v["off_topic"]["of"] for v in s.values()))
    result["closest"] = {name: scored[name] for name in sorted(rules, key=cost)[:5]}
    for name in [rule_name(SHIPPED), *passing[:20]]:
        line = "  ".join(f"{t}: wrong {v['answerable']['refused']}/{v['answerable']['of']} "
                         f"off {v['off_topic']['refused']}/{v['off_topic']['of']}" for t, v in scored[name].items())
        print(f"{name:56} {line}", flush=True)
    print(f"{len(passing)} of {len(GRID)} grid rules meet the targets on every dev set")
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Gate rules scored on dev data only (answerable vs off-topic), then one report on the test halves.

    .venv/bin/python benchmarks/gate_evidence.py --eval-db var/eval.db \
        --oos postgresql=var/oos/postgresql.db --oos python=var/oos/python.db
    .venv/bin/python benchmarks/gate_evidence.py --split test --oos ...   # the shipped rule, once

Questions: the cMCP dev eval's cases (answerable = factual + two_source;
off-topic = off_topic; unanswerable reported apart, they pass to the model's
own refusal) and each out-of-sample corpus's DEV half (questions.jsonl
answerable, off_topic.jsonl off-topic). Each is searched as the service does
(shipped ranking; the Gate sees the first 4 passages) and its evidence is
recorded (benchmarks/gate_features.py, cached under var/gate/).

The dev run sweeps rule families and picks, by a criterion fixed before
looking at the test halves, the rule with the widest margin: the largest δ
such that every threshold within ±δ of the chosen one still meets the
targets on every dev set (issue 13: ≤ 2 % wrong refusals and ≥ 95 % of
off-topic refused on each out-of-sample set; cMCP 0 wrong and ≥ 7/8).
Families (each with the cosine floor 0.29 first, as shipped):
  * weighted: best cosine + w × best coverage ≥ t      (deployments/gate_rule.py)
  * per passage: some passage has cosine + w × its coverage ≥ t
  * union: best cosine + w × coverage of the first n passages together ≥ t
  * previous: some passage has cosine ≥ 0.29 and coverage ≥ v, or best cosine ≥ s
  * whole-document BM25 (normalised by the question's idf mass × (k1+1)) in place of coverage
`--split test` scores only the rule in serve_app/settings.py's defaults (its evidence part: the
noise-floor clause added at stop 41, `gate_noise_margin`, is scored by retrieval_oos.py and
unseen_manuals.py, which search the floor as the MCP tools do).
Writes benchmarks/results/gate_evidence[_test].{json,md}.
"""
from __future__ import annotations

import argparse
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.gate_features import cached_features  # noqa: E402
from deployments.gate_rule import decide  # noqa: E402
from deployments.passage import Passage  # noqa: E402

SERVICE_K = 4               # answer.py: k = min(request k or default_k, prompt_max_sources = 4)
FLOOR = 0.29                # gate_min_cosine, calibrated on the dev eval (evals/README.md)
MAX_WRONG = 0.02            # issue 13's targets on each out-of-sample set
MIN_OFF_TOPIC = 0.95
WEIGHTS = [round(0.05 * i, 2) for i in range(0, 31)]
K1_PLUS_1 = 2.2             # BM25's per-term ceiling is idf × (k1 + 1)

Score = Callable[[dict], float]


def questions_of(target: str, split: str = "dev") -> dict[str, list[tuple[str, str]]]:
    """kind → [(id, question)] with kinds answerable | off_topic | unanswerable."""
    if target == "cmcp-dev-eval":
        from evals.cases import load_cases
        groups: dict[str, list] = {"answerable": [], "off_topic": [], "unanswerable": []}
        for case in load_cases():
            kind = "answerable" if case.answerable else case.kind
            groups[kind].append((case.id, case.question))
        return groups
    from benchmarks.oos.questions import off_topic, questions
    return {"answerable": [(q["id"], q["question"]) for q in questions(target, split)],
            "off_topic": [(q["id"], q["question"]) for q in off_topic(target, split)]}


def first(f: dict, n: int = SERVICE_K) -> list[dict]:
    return f["passages"][:n]


def union_coverage(f: dict, n: int) -> float:
    idf = f["idf"]
    held = [any(p["held"][i] for p in first(f, n)) for i in range(len(idf))]
    return sum(w for w, h in zip(idf, held) if h) / sum(idf) if idf else 0.0


def families() -> dict[str, Callable[[float], Score]]:
    """name → (w → evidence score of a question's features); each passes at score ≥ t after the floor."""
    def best_cos(f: dict) -> float:
        return max(p["cosine"] for p in first(f))
    return {
        "weighted": lambda w: lambda f: best_cos(f) + w * max(p["coverage"] for p in first(f)),
        "per passage": lambda w: lambda f: max(p["cosine"] + w * p["coverage"] for p in first(f)),
        "union of 4": lambda w: lambda f: best_cos(f) + w * union_coverage(f, 4),
        "union of 10": lambda w: lambda f: best_cos(f) + w * union_coverage(f, 10),
        "document BM25": lambda w: lambda f: best_cos(f) + w * f["best_doc_bm25"] / (K1_PLUS_1 * sum(f["idf"])),
    }


def floor_ok(f: dict) -> bool:
    return max(p["cosine"] for p in first(f)) >= FLOOR


def allowed(target: str, kind: str, n: int) -> int:
    """Errors a set may have and still meet the targets."""
    if target == "cmcp-dev-eval":
        return 0 if kind == "answerable" else 1
    return math.floor(MAX_WRONG * n + 1e-9) if kind == "answerable" else n - math.ceil(MIN_OFF_TOPIC * n - 1e-9)


def feasible_interval(rows: dict[str, dict[str, list[dict]]], score: Score) -> tuple[float, float]:
    """Thresholds t in (lo, hi] meet the targets on every set (empty when lo ≥ hi)."""
    lo, hi = float("-inf"), float("inf")
    for target, groups in rows.items():
        ans = sorted(score(f) if floor_ok(f) else float("-inf") for f in groups["answerable"])
        off = sorted((score(f) if floor_ok(f) else float("-inf") for f in groups["off_topic"]), reverse=True)
        hi = min(hi, ans[allowed(target, "answerable", len(ans))])
        lo = max(lo, off[allowed(target, "off_topic", len(off))])
    return lo, hi


def previous_rule(f: dict, v: float, s: float | None) -> bool:
    """The rule shipped before (cosine ≥ 0.29 and coverage ≥ v on one passage, or cosine ≥ s)."""
    ps = first(f)
    return any(p["cosine"] >= FLOOR and p["coverage"] >= v for p in ps) or (
        s is not None and max(p["cosine"] for p in ps) >= s)


def counts(rows: dict[str, dict[str, list[dict]]], passes: Callable[[dict], bool]) -> dict:
    out = {}
    for target, groups in rows.items():
        out[target] = {}
        for kind, items in groups.items():
            wrong = [f["id"] for f in items if passes(f) != (kind == "answerable")]
            out[target][kind] = {"errors": len(wrong), "of": len(items), "ids": wrong}
    return out


def meets(c: dict) -> bool:
    return all(v[k]["errors"] <= allowed(t, k, v[k]["of"]) for t, v in c.items() for k in ("answerable", "off_topic"))


def shipped_passes(f: dict) -> bool:
    """The rule in serve_app/settings.py's defaults, through deployments.gate_rule.decide."""
    from serve_app.settings import Settings
    s = Settings.model_fields
    return decide([Passage(source="", text="", cosine=p["cosine"], coverage=p["coverage"]) for p in first(f)],
                  min_cosine=s["gate_min_cosine"].default, coverage_weight=s["gate_coverage_weight"].default,
                  min_evidence=s["gate_min_evidence"].default).passed


def sweep(rows: dict) -> dict:
    """Every family × weight: its feasible thresholds; the widest-margin rule overall."""
    table = []
    for name, make in families().items():
        for w in WEIGHTS:
            lo, hi = feasible_interval(rows, make(w))
            table.append({"family": name, "w": w, "lo": lo, "hi": hi, "margin": (hi - lo) / 2})
    prev = []
    for v in (0.3, 0.4, 0.5, 0.6, 0.7):
        for s in (0.4, 0.45, 0.5, 0.55, 0.6, None):
            c = counts(rows, lambda f, v=v, s=s: floor_ok(f) and previous_rule(f, v, s))
            prev.append({"min_coverage": v, "sure_cosine": s, "meets_targets": meets(c),
                         "errors": {t: {k: x["errors"] for k, x in g.items()} for t, g in c.items()}})
    best = max(table, key=lambda r: r["margin"])
    t = round((best["lo"] + best["hi"]) / 2, 2)
    choice = {"family": best["family"], "w": best["w"], "t": t,
              "margin": round(min(t - best["lo"], best["hi"] - t), 3)}
    score = families()[best["family"]](best["w"])
    near = {t: (sorted(((f["id"], score(f)) for f in g["answerable"]), key=lambda x: x[1])[:3],
                sorted(((f["id"], score(f)) for f in g["off_topic"]), key=lambda x: -x[1])[:3])
            for t, g in rows.items()}
    return {"table": table, "previous_family": prev, "choice": choice, "near": near,
            "choice_counts": counts(rows, lambda f: floor_ok(f) and families()[best["family"]](best["w"])(f) >= t)}


def fmt(c: dict) -> str:
    return " | ".join(f"{g['answerable']['errors']}/{g['answerable']['of']} | "
                      f"{g['off_topic']['of'] - g['off_topic']['errors']}/{g['off_topic']['of']}" for g in c.values())


def misses(c: dict) -> str:
    return "; ".join(f"{t} {k}: {', '.join(x['ids']) or '-'}" for t, g in c.items() for k, x in g.items()
                     if k != "unanswerable")


def markdown(meta: dict, rows: dict, result: dict, split: str) -> str:
    head = "| rule | " + " | ".join(f"{t} wrong refusals | {t} off-topic refused" for t in rows) + " |\n"
    head += "|---|" + "---:|---:|" * len(rows) + "\n"
    md = (f"# The Gate on {split} questions (benchmarks/gate_evidence.py)\n\n{meta['date']} · {meta['machine']} · "
          f"commit {meta['commit']} · load {meta['load_avg_1m_at_start']} at start · first {SERVICE_K} passages "
          f"of the shipped ranking · sets: {', '.join(rows)}\n\n")
    if split == "test":
        return (md + head + f"| before: cosine ≥ 0.29 and coverage ≥ 0.5, or cosine ≥ 0.45 | {fmt(result['before'])} |\n"
                f"| shipped: {result['shipped_rule']} | {fmt(result['shipped'])} |\n\nShipped rule's misses: "
                + misses(result["shipped"]) + "\n")
    ch = result["choice"]
    md += head + f"| before: cosine ≥ 0.29 and coverage ≥ 0.5, or cosine ≥ 0.45 | {fmt(result['before'])} |\n"
    md += (f"| chosen: cosine ≥ {FLOOR} and {ch['family']} evidence (w {ch['w']}) ≥ {ch['t']} "
           f"(margin ±{ch['margin']}) | {fmt(result['choice_counts'])} |\n")
    md += f"| shipped (serve_app/settings.py) | {fmt(result['shipped'])} |\n\n"
    md += "Widest feasible threshold interval per family (best weight; margin = half its width; ≤ 0: no threshold "
    md += "meets every dev target):\n\n| family | w | thresholds | margin |\n|---|---:|---|---:|\n"
    for fam in families():
        r = max((r for r in result["table"] if r["family"] == fam), key=lambda r: r["margin"])
        md += f"| {fam} | {r['w']} | ({r['lo']:.3f}, {r['hi']:.3f}] | {r['margin']:+.3f} |\n"
    md += "\nThe weighted family by weight (dev sets):\n\n| w | thresholds | margin |\n|---:|---|---:|\n"
    for r in result["table"]:
        if r["family"] == "weighted" and 0.3 <= r["w"] <= 1.0:
            md += f"| {r['w']} | ({r['lo']:.3f}, {r['hi']:.3f}] | {r['margin']:+.3f} |\n"
    md += ("\nChosen rule's evidence near the threshold (lowest answerable, highest off-topic; "
           "id evidence):\n\n| set | answerable | off-topic |\n|---|---|---|\n")
    for t, (ans, off) in result["near"].items():
        md += f"| {t} | {', '.join(f'{i} {v:.3f}' for i, v in ans)} | {', '.join(f'{i} {v:.3f}' for i, v in off)} |\n"
    ok = [r for r in result["previous_family"] if r["meets_targets"]]
    md += (f"\nThe previous family (coverage floor v × sure cosine s, 30 rules): {len(ok)} meet every dev target.\n"
           f"Chosen rule's misses: " + misses(result["choice_counts"]) + "\n")
    return md


def slim(rows: dict) -> dict:
    """What the JSON keeps per question: its best cosine and coverage among the first passages."""
    return {t: {kind: [{"id": f["id"], "cosine": round(max(p["cosine"] for p in first(f)), 4),
                        "coverage": round(max(p["coverage"] for p in first(f)), 4)} for f in items]
                for kind, items in groups.items()} for t, groups in rows.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eval-db", type=Path, default=REPO / "var" / "eval.db")
    p.add_argument("--oos", action="append", default=[], help="NAME=DB of an out-of-sample corpus")
    p.add_argument("--split", choices=("dev", "test"), default="dev")
    args = p.parse_args()
    targets = [] if args.split == "test" else [("cmcp-dev-eval", args.eval_db, "cmcp")]
    targets += [(s.split("=", 1)[0], Path(s.split("=", 1)[1]), None) for s in args.oos]
    meta = {**machine(), "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                                 capture_output=True, text=True).stdout.strip()}
    rows = {t: cached_features(db, coll, questions_of(t, args.split), REPO / "var" / "gate" / f"{t}-{args.split}.json")
            for t, db, coll in targets}
    if args.split == "test":
        from serve_app.settings import Settings
        rule = {k: Settings.model_fields[k].default for k in ("gate_min_cosine", "gate_coverage_weight",
                                                              "gate_min_evidence")}
        result = {"shipped_rule": rule, "shipped": counts(rows, shipped_passes),
                  "before": counts(rows, lambda f: floor_ok(f) and previous_rule(f, 0.5, 0.45))}
    else:
        result = {**sweep(rows), "before": counts(rows, lambda f: floor_ok(f) and previous_rule(f, 0.5, 0.45)),
                  "shipped": counts(rows, shipped_passes)}
    name = "gate_evidence" if args.split == "dev" else "gate_evidence_test"
    write_results(name, {"machine": meta, "split": args.split, "k": SERVICE_K, **result,
                         "questions": slim(rows)}, markdown(meta, rows, result, args.split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Ranking levers (docindex/ranking.py) measured one by one on dev data only.

    .venv/bin/python benchmarks/retrieval_levers.py --eval-db var/eval.db \
        --oos postgresql=var/oos/postgresql.db --oos python=var/oos/python.db [--levers NAME…]

For every lever (a Ranking that changes one or two knobs of the shipped
default) it scores:
- the cMCP dev eval (evals/cases.jsonl, retrieval-only, k=5): recall@1/3/5
  and MRR exactly as `python -m evals.run --retrieval-only` computes them;
- each out-of-sample corpus's DEV half (benchmarks/oos, never the test
  half): distinct-document recall@1/3/5/10 and MRR over the first 10
  distinct documents of a k=30 search (the gold page or any `also` page
  counts), as benchmarks/retrieval_oos.py scores them;
- search latency P50 (ms, in-process; each question is embedded once, by the
  first lever, and cached: only levers after the first compare).
Writes benchmarks/results/retrieval_levers.json; the table in
retrieval_levers.md is written from it by hand, with the decision.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from docindex.index import Index  # noqa: E402
from docindex.ranking import DEFAULT_RANKING, Ranking  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402

BASE = Ranking()   # the field defaults: ranking as shipped before these levers
LEVERS: dict[str, Ranking] = {
    "baseline (shipped before)": Ranking(),
    "shipped (DEFAULT_RANKING)": DEFAULT_RANKING,
    "fields w0.5": replace(BASE, fields_weight=0.5),
    "fields w1": replace(BASE, fields_weight=1.0),
    "doc agg w0.5": replace(BASE, doc_weight=0.5),
    "doc agg w1": replace(BASE, doc_weight=1.0),
    "per_doc 2": replace(BASE, per_doc=2),
    "per_doc 1": replace(BASE, per_doc=1),
    "rrf k 20": replace(BASE, rrf_k=20.0),
    "rrf k 100": replace(BASE, rrf_k=100.0),
    "bm25 w1.5": replace(BASE, bm25_weight=1.5),
    "dense w1.5": replace(BASE, dense_weight=1.5),
    "fields w1 + per_doc 2": replace(BASE, fields_weight=1.0, per_doc=2),
    "fields w1 + per_doc 3": replace(BASE, fields_weight=1.0, per_doc=3),
    "fields w0.5 + per_doc 2": replace(BASE, fields_weight=0.5, per_doc=2),
    "dense w2": replace(BASE, dense_weight=2.0),
    "bm25 w0.5": replace(BASE, bm25_weight=0.5),
    "doc bm25 w1 + fields w0.5": replace(BASE, doc_bm25_weight=1.0, fields_weight=0.5),
    "doc bm25 w1 + doc agg w0.5": replace(BASE, doc_bm25_weight=1.0, doc_weight=0.5),
    "doc bm25 w1 + rrf k 20": replace(BASE, doc_bm25_weight=1.0, rrf_k=20.0),
    # whole-document BM25 as a fourth RRF ranking (docindex/doclexical.py), × the dense weight
    **{f"doc bm25 w{doc:g}" + (f" + dense w{dense:g}" if dense != 1 else ""):
       replace(BASE, doc_bm25_weight=doc, dense_weight=dense)
       for doc in (0.5, 1.0, 1.5, 2.0) for dense in (1.0, 1.5, 2.0, 3.0)},
    **{f"doc bm25 w{doc:g} + bm25 w0.5": replace(BASE, doc_bm25_weight=doc, bm25_weight=0.5) for doc in (0.5, 1.0)},
    # round 3: score fusion (docindex/score_fusion.py), its document centroid, one chunk per document first
    **{f"convex a{a:g}" + (f" + centroid {c:g}" if c else "") + (f" + per_doc {cap}" if cap else ""):
       replace(BASE, fusion="convex", convex_dense=a, centroid_weight=c, per_doc=cap)
       for a in (0.7, 0.75, 0.8, 0.85) for c in (0.0, 0.1, 0.2) for cap in (0, 1, 2)},
}
OOS_CHUNKS = 50   # as benchmarks/retrieval_oos.py asks


def eval_scores(index: Index, ranking: Ranking) -> dict:
    from evals.cases import load_cases
    from evals.metrics import METRICS, aggregate

    index.ranking = ranking
    cases = load_cases()
    records, latencies = {}, []
    for case in cases:
        start = time.perf_counter()
        hits = index.search(case.question, 5, "cmcp")
        latencies.append((time.perf_counter() - start) * 1e3)
        records[case.id] = {"id": case.id, "case_sha": case.sha, "kind": case.kind, "mode": "retrieval",
                            "sources": [h.to_dict() for h in hits]}
    wanted = {"recall@1", "recall@3", "recall@5", "mrr"}
    aggregates = aggregate(cases, records, [m for m in METRICS if m.name in wanted])
    out = {name: round(a.value, 4) for name, a in aggregates.items()}
    out["p50_ms"] = round(percentile(latencies, 50) or 0.0, 2)
    return out


def oos_scores(index: Index, corpus: str, ranking: Ranking) -> dict:
    """As benchmarks/retrieval_oos.py scores ours (its metrics module), dev half only."""
    from benchmarks.oos import metrics
    from benchmarks.oos.questions import questions

    index.ranking = ranking
    per, latencies = [], []
    dev = questions(corpus, "dev")
    for q in dev:
        start = time.perf_counter()
        hits = index.search(q["question"], OOS_CHUNKS, corpus)
        latencies.append((time.perf_counter() - start) * 1e3)
        sources = [h.source for h in hits]
        per.append(metrics.per_question(metrics.distinct(sources)[:10], {q["gold"], *q["also"]}, sources))
    out = {name: round(statistics.fmean(p[name] for p in per), 4) for name in per[0]}
    out["n"] = len(dev)
    out.update(gate_scores(index, corpus, dev))
    out["p50_ms"] = round(percentile(latencies, 50) or 0.0, 2)
    return out


def gate_scores(index: Index, corpus: str, dev: list[dict]) -> dict:
    """The shipped Gate (benchmarks/retrieval_oos.py's replica) over the first 4 chunks of each dev question."""
    from benchmarks.oos import metrics
    from benchmarks.oos.questions import off_topic
    from benchmarks.retrieval_oos import gate_passes, shipped_gate

    rule = shipped_gate()

    def passes(question: str) -> bool:
        hits = index.search(question, metrics.CHUNKS_TO_MODEL, corpus)
        return gate_passes([(h.cosine, h.coverage) for h in hits], **rule)

    off = off_topic(corpus, "dev")
    return {"gate_answerable_refused": sum(not passes(q["question"]) for q in dev),
            "gate_off_topic_refused": f"{sum(not passes(q['question']) for q in off)}/{len(off)}"}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eval-db", type=Path, default=REPO / "var" / "eval.db")
    p.add_argument("--oos", action="append", default=[], help="NAME=DB of an out-of-sample corpus")
    p.add_argument("--levers", nargs="*", default=None, help="lever names (default: all)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "retrieval_levers.json")
    args = p.parse_args()
    levers = {name: LEVERS[name] for name in (args.levers or LEVERS)}
    targets: list[tuple[str, Path]] = [("cmcp-dev-eval", args.eval_db)]
    targets += [(spec.split("=", 1)[0], Path(spec.split("=", 1)[1])) for spec in args.oos]
    results: dict[str, dict] = {name: {"ranking": asdict(r)} for name, r in levers.items()}
    embedder = CachedEmbedder()
    for target, db in targets:
        with Index(db, embedder=embedder) as index:
            index.search("warm up the embedder and the postings", 5)
            for name, ranking in levers.items():
                if target == "cmcp-dev-eval":
                    scores = eval_scores(index, ranking)
                else:
                    scores = oos_scores(index, target, ranking)
                results[name][target] = scores
                print(f"{target:14} {name:28} {json.dumps(scores)}", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "commit": _commit(), "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    args.out.write_text(json.dumps({"meta": meta, "levers": results}, indent=1) + "\n")
    return 0


class CachedEmbedder:
    """The default embedder, each question embedded once for all levers (search is otherwise unchanged)."""

    def __init__(self) -> None:
        from docindex.minilm import default_embedder

        self.inner = default_embedder(threads=1)
        self.name, self.dim = self.inner.name, self.inner.dim
        self.reads_cjk = getattr(self.inner, "reads_cjk", True)
        self.cache: dict[str, object] = {}

    def embed(self, texts: list[str]):
        import numpy as np

        missing = [t for t in texts if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing)))
        return np.stack([self.cache[t] for t in texts])

    def count_tokens(self, text: str) -> int:
        return self.inner.count_tokens(text)


def _commit() -> str:
    import subprocess
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=REPO).stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())

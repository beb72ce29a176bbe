"""Search latency of ranking variants at ~20k chunks, measured paired (interleaved).

    .venv/bin/python benchmarks/ranking_latency.py --cmcp-db var/eval.db [--size 20000]

The 20k-chunk index is the synthetic scale-up of benchmarks/docindex_search_latency.py
(real cmcp text, perturbed real vectors). Each query runs once per variant in
turn, REPEATS times, so a loaded machine slows every variant alike; the
figures are P50 of the whole in-process search (embedding included) and of
its BM25 stage (query tokenization, chunk BM25, field BM25), of the search
without its query embedding (what the ranking itself costs) and of the fusion
stage (fusion, ranking, chunk rows); the warm-up pass (every query once per
variant: postings, field postings and document centroids made on first need)
is reported apart as the fusion stage's first pass. Writes
benchmarks/results/ranking_latency.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from docindex_common import REPO, machine  # noqa: E402
from docindex_search_latency import base_rows, build_scaled  # noqa: E402

from docindex.index import Index  # noqa: E402
from docindex.ranking import DEFAULT_RANKING, DOCUMENT_RANKING, Ranking  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402

REPEATS = 5
VARIANTS = {"previous (Ranking())": Ranking(), "shipped (DEFAULT_RANKING)": DEFAULT_RANKING,
            "fields + doc agg + per_doc 2": Ranking(fields_weight=1.0, doc_weight=0.5, per_doc=2),
            "convex a0.8, no centroid": Ranking(fusion="convex", convex_dense=0.8),
            "pages (DOCUMENT_RANKING)": DOCUMENT_RANKING,
            "pages, 100 candidates (stop 48, not shipped)": replace(DOCUMENT_RANKING, candidates=100)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cmcp-db", type=Path, required=True)
    p.add_argument("--size", type=int, default=20000)
    args = p.parse_args()
    queries = [json.loads(line)["query"] for line in
               (REPO / "benchmarks" / "data" / "docindex_cmcp_queries.jsonl").read_text().splitlines() if line]
    with tempfile.TemporaryDirectory(prefix="ranking-latency-") as tmp:
        db = Path(tmp) / "scaled.db"
        chunks = build_scaled(base_rows(args.cmcp_db), db, args.size, np.random.default_rng(0))
        total = {name: [] for name in VARIANTS}
        bm25 = {name: [] for name in VARIANTS}
        ranked = {name: [] for name in VARIANTS}
        fuse = {name: [] for name in VARIANTS}
        with Index(db) as index:
            cold: dict[str, list[float]] = {name: [] for name in VARIANTS}
            for name, ranking in VARIANTS.items():   # warm-up: embedder, postings, field postings, centroids
                index.ranking = ranking
                for query in queries:
                    timings = {}
                    index.search(query, 5, timings=timings)
                    cold[name].append(timings["fuse"])
            for _ in range(REPEATS):
                for query in queries:
                    for name, ranking in VARIANTS.items():
                        index.ranking = ranking
                        timings: dict[str, float] = {}
                        t0 = time.perf_counter()
                        index.search(query, 5, timings=timings)
                        total[name].append((time.perf_counter() - t0) * 1e3)
                        bm25[name].append(timings["bm25"])
                        ranked[name].append(total[name][-1] - timings["embed"])
                        fuse[name].append(timings["fuse"])
    result = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "loadavg": Path("/proc/loadavg").read_text().split()[:3], "chunks": chunks,
              "variants": {name: {"total_p50_ms": round(percentile(total[name], 50) or 0.0, 2),
                                  "bm25_p50_ms": round(percentile(bm25[name], 50) or 0.0, 2),
                                  "without_embedding_p50_ms": round(percentile(ranked[name], 50) or 0.0, 2),
                                  "fuse_p50_ms": round(percentile(fuse[name], 50) or 0.0, 2),
                                  "fuse_first_pass_p50_ms": round(percentile(cold[name], 50) or 0.0, 2),
                                  "searches": len(total[name])} for name in VARIANTS}}
    (REPO / "benchmarks" / "results" / "ranking_latency.json").write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["variants"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

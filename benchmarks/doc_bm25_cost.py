"""What the whole-document BM25 ranking (docindex/doclexical.py) costs per search.

    .venv/bin/python benchmarks/doc_bm25_cost.py [--db var/oos/postgresql.db] [--corpus postgresql]

Over the corpus's DEV questions (benchmarks/oos), each repeated `--repeats`
times: the time to rank the documents (`DocumentPostings.rank`) and to pick
each ranked document's closest chunk (`best_chunks`), in process, query
embeddings computed once beforehand; and the one-off build of the document
postings. Medians and the fastest quartile (contention inflates the rest).
Writes benchmarks/results/doc_bm25_cost.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.oos.questions import questions  # noqa: E402
from docindex import doclexical  # noqa: E402
from docindex.index import CANDIDATES, Index  # noqa: E402
from docindex.textsearch import query_terms  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", type=Path, default=REPO / "var" / "oos" / "postgresql.db")
    p.add_argument("--corpus", default="postgresql")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    texts = [q["question"] for q in questions(args.corpus, "dev")]
    with Index(args.db) as index:
        index.search("warm up", 1, args.corpus)
        vectors = index._get_embedder().embed(texts)
        snapshot = index._snapshot
        started = time.perf_counter()
        postings = snapshot.document_postings()
        build_ms = (time.perf_counter() - started) * 1e3
        start, end = snapshot.slices[args.corpus]
        rank_ms, best_ms = [], []
        for _ in range(args.repeats):
            for text, vector in zip(texts, vectors):
                phrases = index._tokenizer.tokens(index._conn, query_terms(text))
                t0 = time.perf_counter()
                docs, _ = postings.rank(phrases, start, end, CANDIDATES)
                t1 = time.perf_counter()
                doclexical.best_chunks(snapshot.doc_ids[start:end], snapshot.ids[start:end],
                                       snapshot.matrix[start:end], vector, docs)
                t2 = time.perf_counter()
                rank_ms.append((t1 - t0) * 1e3)
                best_ms.append((t2 - t1) * 1e3)
        stats = index.stats()

    def summary(values: list[float]) -> dict:
        return {f"p{q}": round(percentile(values, q) or 0.0, 3) for q in (25, 50)}   # the one definition

    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg": os.getloadavg(),
           "db": str(args.db), "chunks": stats["chunks"], "documents": stats["documents"],
           "searches": len(rank_ms), "postings_build_ms": round(build_ms, 1),
           "rank_documents_ms": summary(rank_ms), "best_chunks_ms": summary(best_ms)}
    (REPO / "benchmarks" / "results" / "doc_bm25_cost.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

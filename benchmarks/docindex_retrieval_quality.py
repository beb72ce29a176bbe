"""Retrieval quality: hybrid vs BM25-only vs dense-only, source-level Hit@1, Hit@3, MRR@10.

    .venv/bin/python benchmarks/docindex_retrieval_quality.py [--cmcp-db FILE] [--salon-db FILE]

Two labelled sets:
* salon-zh: the corpus's own 8 Chinese queries (corpora/salon-zh/eval/
  datasets/salon_retrieval.jsonl). Their expected sources name PDFs generated
  from the same-named .md files, so sources are compared by file stem.
* cmcp: 20 questions written for this project from reading the cmcp docs
  (benchmarks/data/docindex_cmcp_queries.jsonl), each naming the document(s)
  that answer it.
A query scores at the rank of the first chunk whose document is expected.
Indexes are built with the default embedder unless given.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from docindex_common import CORPORA, REPO, machine, write_results

import docindex.index
from docindex.index import Index
from docindex.ingest import ingest

MODES = ("hybrid", "bm25", "dense", "hybrid-equal-weights")
DEPTH = 10


def load_cases(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def stem(source: str) -> str:
    return Path(source).stem


def evaluate(index: Index, cases: list[dict], collection: str) -> dict:
    scores: dict = {}
    for mode in MODES:
        ranks = []
        # "hybrid-equal-weights": plain RRF, without down-weighting the English-only
        # embedder on CJK queries (docindex.index.CJK_DENSE_WEIGHT), for comparison.
        weight = docindex.index.CJK_DENSE_WEIGHT
        if mode == "hybrid-equal-weights":
            docindex.index.CJK_DENSE_WEIGHT = 1.0
        for case in cases:
            expected = {stem(s) for s in case["expected_sources"]}
            hits = index.search(case["query"], k=DEPTH, collection=collection, mode=mode.split("-")[0])
            rank = next((n for n, h in enumerate(hits, start=1) if stem(h.source) in expected), None)
            ranks.append(rank)
        docindex.index.CJK_DENSE_WEIGHT = weight
        scores[mode] = {
            "hit@1": round(sum(r == 1 for r in ranks) / len(ranks), 3),
            "hit@3": round(sum(r is not None and r <= 3 for r in ranks) / len(ranks), 3),
            "mrr@10": round(sum(1 / r for r in ranks if r) / len(ranks), 3),
            "ranks": ranks,
        }
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmcp-db", type=Path)
    parser.add_argument("--salon-db", type=Path)
    args = parser.parse_args()
    sets = {
        "salon-zh": (CORPORA / "salon-zh" / "examples" / "salon" / "knowledge_sources", args.salon_db,
                     CORPORA / "salon-zh" / "eval" / "datasets" / "salon_retrieval.jsonl"),
        "cmcp": (CORPORA / "cmcp", args.cmcp_db, REPO / "benchmarks" / "data" / "docindex_cmcp_queries.jsonl"),
    }
    result: dict = {"machine": machine(), "sets": {},
                    "command": " ".join(["benchmarks/docindex_retrieval_quality.py", *sys.argv[1:]])}
    with tempfile.TemporaryDirectory(prefix="docindex-quality-") as tmp:
        for name, (corpus, db, queries) in sets.items():
            if db is None:
                db = Path(tmp) / f"{name}.db"
                ingest([corpus], db, name)
            with Index(db) as index:
                collection = index.collections()[0].name
                cases = load_cases(queries)
                result["sets"][name] = {"queries": len(cases), "collection": collection,
                                        "scores": evaluate(index, cases, collection)}
    m = result["machine"]
    lines = ["# docindex retrieval quality", "",
             f"`{result['command']}` on a {m['machine']}, {m['date']}. Source-level: a query scores at the rank of "
             "the first chunk from an expected document (top 10 chunks).", "",
             "| set | queries | retriever | Hit@1 | Hit@3 | MRR@10 |", "|---|---|---|---|---|---|"]
    for name, data in result["sets"].items():
        for mode in MODES:
            s = data["scores"][mode]
            lines.append(f"| {name} | {data['queries']} | {mode} | {s['hit@1']} | {s['hit@3']} | {s['mrr@10']} |")
    lines += ["", "hybrid: RRF (k=60) of dense and BM25; for a mostly-CJK query the English-only MiniLM ranking is "
                  f"weighted {docindex.index.CJK_DENSE_WEIGHT} (docindex/index.py, CJK_DENSE_WEIGHT). "
                  "hybrid-equal-weights: plain RRF.", "",
              "Labels: salon-zh from the corpus (expected PDFs matched on stem to the .md files); cmcp from "
                  "`benchmarks/data/docindex_cmcp_queries.jsonl`, written for this project.", ""]
    write_results("docindex_retrieval_quality", result, "\n".join(lines))


if __name__ == "__main__":
    main()

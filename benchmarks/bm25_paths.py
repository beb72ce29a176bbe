"""BM25 alone at ~1M rows: the scatter per list (before), the bincount walk, and the heads of impact order.

    nice -n 10 .venv/bin/python benchmarks/bm25_paths.py --db DIR/scale-200000.db [--copies 5]

The postings of a kept scale.py index are tiled `--copies` times (each copy
after the first drops 10% of its postings, seeded), so the lists have the
length of a copies-times larger index without building one; the questions
are benchmarks/mcp_roundtrip.py's (those with a multi-token term are left
out: FTS5 scores those, not this code). Per question and path: thread CPU
milliseconds (less moved by other sessions than wall time), and a check that
the three paths return the same rows and scores.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.mcp_roundtrip import QUESTIONS  # noqa: E402
from docindex import lexical, lexical_topk  # noqa: E402
from docindex.embedder import MODEL_NAME  # noqa: E402
from docindex.index import CANDIDATES, Index  # noqa: E402
from docindex.textsearch import query_terms  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402

NEVER, ALWAYS = 10**15, 0


class _Stub:
    name, dim = MODEL_NAME, 384


def tiled(lex: lexical.Lexical, copies: int) -> lexical.Lexical:
    n = len(lex.norm)
    lengths = np.diff(lex.offsets)
    term_of = np.repeat(np.arange(len(lengths)), lengths)
    rng = np.random.default_rng(0)
    keep = [rng.random(len(lex.rows)) >= (0.1 if c else 0.0) for c in range(copies)]
    terms = np.concatenate([term_of[k] for k in keep])
    rows = np.concatenate([np.asarray(lex.rows)[k].astype(np.int64) + c * n for c, k in enumerate(keep)])
    tf = np.concatenate([np.asarray(lex.tf)[k] for k in keep])
    order = np.lexsort((rows, terms))
    terms, rows, tf = terms[order], rows[order].astype(np.int32), tf[order]
    offsets = np.searchsorted(terms, np.arange(len(lengths) + 1)).astype(np.int64)
    ids = np.concatenate([np.asarray(lex.chunk_ids) + c * 10**8 for c in range(copies)])
    big = lexical.Lexical(lex.term_index, offsets, rows, tf, np.tile(np.asarray(lex.norm), copies),
                          lex.n_docs * copies, ids)
    return dataclasses.replace(big, by_impact=lexical_topk.impact_order(big))


def scatter(lex: lexical.Lexical, phrases: list[tuple[str, ...]], limit: int) -> tuple[np.ndarray, np.ndarray]:
    """lexical.py before this round: one scatter-add per list into an array of every row."""
    acc = np.zeros(len(lex.norm), dtype=np.float64)
    for (token,) in phrases:
        rows, tf = lex.postings(token)
        if len(rows):
            tf = tf.astype(np.float64)
            acc[rows] += lexical_topk.idf(lex.n_docs, len(rows)) * tf * (lexical.K1 + 1) / (tf + lex.norm[rows])
    return lexical.select_top(np.arange(len(acc)), acc, lex.chunk_ids, limit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--copies", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    info = machine()
    with Index(args.db, embedder=_Stub(), exact=True) as index:    # type: ignore[arg-type]
        snapshot = index._snapshot
        assert snapshot is not None
        phrases = [index._tokenizer.tokens(index._conn, query_terms(q)) for q in QUESTIONS]
        t0 = time.perf_counter()
        big = tiled(snapshot.lexical, args.copies)
        build_s = time.perf_counter() - t0
    phrases = [p for p in phrases if all(len(t) == 1 for t in p)]
    paths = {"scatter (before)": lambda p: scatter(big, p, CANDIDATES),
             "bincount walk": lambda p: big.scores(p, 0, len(big.norm), CANDIDATES, _none, early_stop_min=NEVER),
             "as search runs it": lambda p: big.scores(p, 0, len(big.norm), CANDIDATES, _none),
             "heads always": lambda p: big.scores(p, 0, len(big.norm), CANDIDATES, _none, early_stop_min=ALWAYS)}
    cpu: dict[str, list[float]] = {name: [] for name in paths}
    same = True
    for _ in range(args.rounds):
        for p in phrases:
            results = []
            for name, run in paths.items():
                t = time.thread_time()
                results.append(run(p))
                cpu[name].append((time.thread_time() - t) * 1e3)
            same &= all(np.array_equal(r[0], results[0][0]) and np.array_equal(r[1], results[0][1]) for r in results)
    summary = {name: {"p50": round(float(percentile(v, 50) or 0.0), 2), "p95": round(float(percentile(v, 95) or 0.0), 2),
                      "mean": round(float(np.mean(v)), 2)} for name, v in cpu.items()}
    result = {"machine": info, "db": str(args.db), "copies": args.copies, "rows": len(big.norm),
              "postings": len(big.rows), "questions": len(phrases), "rounds": args.rounds,
              "impact_order_s": round(build_s, 1), "identical": bool(same), "cpu_ms": summary}
    lines = [f"# BM25 alone at {len(big.norm):,} rows ({len(big.rows):,} postings)", "",
             f"`benchmarks/bm25_paths.py --copies {args.copies}` on {args.db.name} tiled; {info['machine']}, "
             f"{info['date']}, load at start {info['load_avg_1m_at_start']}. {len(phrases)} questions x "
             f"{args.rounds} rounds, thread CPU ms. Same rows and scores on every path: {same}.", "",
             "| path | P50 | P95 | mean |", "|---|---|---|---|"]
    lines += [f"| {name} | {s['p50']} | {s['p95']} | {s['mean']} |" for name, s in summary.items()]
    print("\n".join(lines))
    write_results(f"bm25_paths_{len(big.norm)}", result, "\n".join(lines) + "\n")


def _none(i: int) -> tuple[np.ndarray, np.ndarray]:
    raise AssertionError("single-token questions only")


if __name__ == "__main__":
    main()

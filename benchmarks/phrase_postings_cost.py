"""What storing the common phrases' BM25 costs at build and saves per query (docindex/phrase_postings.py).

    .venv/bin/python benchmarks/phrase_postings_cost.py --db /tmp/h1-s1m/scale-1000000.db

On an existing index (read only): the scan for identifiers with an underscore, the build of the
phrase postings (FTS5 queries included) as ann_build.write runs it, their size, and for the
largest stored phrases the FTS5 statement a query would otherwise run against reading them back.
Writes benchmarks/results/phrase_postings_cost.{json,md}.
"""
from __future__ import annotations

import argparse
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from docindex import lexical, phrase_postings  # noqa: E402
from docindex.textsearch import match_expression  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--db", type=Path, required=True)
    p.add_argument("--largest", type=int, default=5, help="phrases timed both ways")
    args = p.parse_args()
    info = machine()
    conn = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
    lexical.prepare_connection(conn)
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.phrase_cost_rows USING fts5vocab(main, chunks_fts, row)")
    t0 = time.perf_counter()
    found = phrase_postings.identifiers(conn)
    scan_s = time.perf_counter() - t0
    tokenizer = lexical.QueryTokenizer()
    counts: dict[str, int] = {}

    def count(token: str) -> int:   # a token's rows, from FTS5's vocabulary (the build uses the postings)
        if token not in counts:
            row = conn.execute("SELECT doc FROM temp.phrase_cost_rows WHERE term = ?", (token,)).fetchone()
            counts[token] = row[0] if row else 0
        return counts[token]

    t0 = time.perf_counter()
    table = phrase_postings.build(conn, lambda terms: tokenizer.tokens(conn, terms), count, lambda ids: ids)
    build_s = time.perf_counter() - t0
    sizes = np.diff(np.asarray(table.offsets))
    by_size = sorted(table.index, key=lambda k: -int(sizes[table.index[k]]))[:args.largest]
    timed = []
    for tokens in by_size:
        term = "_".join(tokens)
        t0 = time.perf_counter()
        conn.execute("SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?",
                     (match_expression([term]),)).fetchall()
        fts5_ms = (time.perf_counter() - t0) * 1000
        t0 = time.perf_counter()
        table.get(tokens)
        stored_ms = (time.perf_counter() - t0) * 1000
        timed.append({"phrase": " ".join(tokens), "rows": int(sizes[table.index[tokens]]),
                      "fts5_ms": round(fts5_ms, 2), "stored_ms": round(stored_ms, 3)})
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    result = {"machine": info, "commit": commit, "db": str(args.db), "identifiers": len(found),
              "scan_s": round(scan_s, 1), "build_s_with_scan": round(build_s, 1), "phrases": len(table.index),
              "rows": int(len(table.rows)), "bytes": int(table.rows.nbytes + table.values.nbytes),
              "min_rows": phrase_postings.MIN_ROWS, "largest": timed}
    lines = ["# Common phrases' BM25 stored with the search files: cost and gain", "",
             f"`benchmarks/phrase_postings_cost.py --db {args.db}` on a {info['machine']}, {info['date']}, "
             f"commit {commit}; 1-minute load average at start {info['load_avg_1m_at_start']}.", "",
             "| what | value |", "|---|---|",
             f"| identifiers with an underscore in the chunk texts (scan) | {len(found)} ({scan_s:.1f} s) |",
             f"| phrases of ≥ {phrase_postings.MIN_ROWS:,} rows stored / build time (scan included) | "
             f"{len(table.index)} / {build_s:.1f} s |",
             f"| rows stored / size | {len(table.rows):,} / {result['bytes'] / 1e6:.1f} MB |", "",
             "| phrase | rows | FTS5 `bm25()` ms | stored ms |", "|---|---:|---:|---:|",
             *[f"| {t['phrase']} | {t['rows']:,} | {t['fts5_ms']} | {t['stored_ms']} |" for t in timed], ""]
    write_results("phrase_postings_cost", result, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

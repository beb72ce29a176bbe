"""In-process search latency at ~2k, ~20k and ~200k chunks, split into embed / dense / BM25 / fuse.

    .venv/bin/python benchmarks/docindex_search_latency.py [--cmcp-db FILE] [--sizes 2000,20000,200000]

The 2k-chunk index is cmcp itself topped up; bigger ones are a synthetic
scale-up of the real cmcp chunks: each copy of the corpus keeps the real text
(so BM25 posting lists grow as in a larger corpus) and a perturbed copy of the
real vector (unit length, cosine ~0.95 to the original). Queries are the 20
cmcp questions of benchmarks/data, embedded for real by the default embedder
(1 intra-op thread). BM25 is docindex/lexical.py's in-memory scoring over
FTS5's postings (query tokenization through SQLite included); "open + load"
includes reading those postings. "fuse" includes fetching the top-k rows
from SQLite.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from docindex_common import CORPORA, REPO, machine, percentiles, write_results

from docindex import store
from docindex.embedder import MODEL_DIM, MODEL_NAME
from docindex.index import Index
from docindex.ingest import ingest
from docindex.textsearch import index_text

K = 5
REPEATS = 5


def base_rows(db: Path) -> list[tuple]:
    with Index(db) as index:
        conn = index._conn   # a benchmark may read the raw rows
        return conn.execute(
            "SELECT d.source, d.title, c.ordinal, c.level, c.anchor, c.heading_path, c.text, v.embedding "
            "FROM chunks c JOIN documents d ON d.id = c.doc_id JOIN vectors v ON v.chunk_id = c.id "
            "ORDER BY d.source, c.ordinal").fetchall()


def build_scaled(rows: list[tuple], db: Path, target: int, rng: np.random.Generator) -> int:
    conn, _ = store.open_for_ingest(db)
    copies = math.ceil(target / len(rows))
    by_source: dict[str, list[tuple]] = {}
    for row in rows:
        by_source.setdefault(row[0], []).append(row)
    fts_text = {id(row): index_text(" › ".join(json.loads(row[5])) + "\n" + row[6]) for row in rows}
    written = 0
    conn.execute("BEGIN IMMEDIATE")
    for copy in range(copies):
        for source, chunks in by_source.items():
            if written >= target:
                break
            doc_id = store.insert_document(conn, collection="scaled", source=f"copy{copy:04d}/{source}",
                                           path="/synthetic", sha256=f"{copy}-{source}", size=0, mtime_ns=0,
                                           title=chunks[0][1], metadata={})
            vectors = np.vstack([np.frombuffer(c[7], dtype=np.float32) for c in chunks])
            if copy:
                vectors = vectors + rng.normal(0, 0.015, vectors.shape).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            store.insert_chunks(conn, doc_id, "scaled",
                                [(c[2], c[3], c[4], tuple(json.loads(c[5])), c[6], fts_text[id(c)]) for c in chunks],
                                vectors)
            written += len(chunks)
    store.record_embedder(conn, MODEL_NAME, MODEL_DIM)
    store.bump_index_version(conn)
    conn.execute("COMMIT")
    conn.close()
    return written


def measure(db: Path, queries: list[str]) -> dict:
    started = time.perf_counter()
    index = Index(db)
    load_s = time.perf_counter() - started
    for query in queries[:5]:
        index.search(query, k=K)
    stages: dict[str, list[float]] = {"embed": [], "dense": [], "bm25": [], "fuse": [],
                                      "total": []}
    for _ in range(REPEATS):
        for query in queries:
            timings: dict[str, float] = {}
            t0 = time.perf_counter()
            index.search(query, k=K, timings=timings)
            stages["total"].append((time.perf_counter() - t0) * 1e3)
            for key in ("embed", "dense", "bm25", "fuse"):
                stages[key].append(timings[key])
    chunks = index.stats()["chunks"]
    index.close()
    return {"chunks": chunks, "open_and_load_s": round(load_s, 2), "searches": len(stages["total"]),
            **{f"{key}_ms": percentiles(values) for key, values in stages.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cmcp-db", type=Path)
    parser.add_argument("--sizes", default="2000,20000,200000")
    args = parser.parse_args()
    queries = [json.loads(line)["query"] for line in
               (REPO / "benchmarks" / "data" / "docindex_cmcp_queries.jsonl").read_text().splitlines() if line]
    rng = np.random.default_rng(0)
    result: dict = {"machine": machine(), "k": K, "sizes": [],
                    "command": " ".join(["benchmarks/docindex_search_latency.py", *sys.argv[1:]])}
    with tempfile.TemporaryDirectory(prefix="docindex-latency-") as tmp:
        db = args.cmcp_db
        if db is None:
            db = Path(tmp) / "cmcp.db"
            ingest([CORPORA / "cmcp"], db, "cmcp")
        rows = base_rows(db)
        for size in (int(s) for s in args.sizes.split(",")):
            scaled = Path(tmp) / f"scaled-{size}.db"
            t0 = time.perf_counter()
            build_scaled(rows, scaled, size, rng)
            entry = {"build_s": round(time.perf_counter() - t0, 1), **measure(scaled, queries)}
            result["sizes"].append(entry)
            print(entry, flush=True)
            scaled.unlink()
    m = result["machine"]
    lines = ["# docindex search latency (in-process)", "",
             f"`{result['command']}` on a {m['machine']}, Python {m['python']}, {m['date']}; 1-minute load average "
             f"at start {m['load_avg_1m_at_start']} (other jobs shared the 2 cores). k={K}; "
             f"{REPEATS}×20 queries per size; milliseconds P50 / P95.", "",
             "| chunks | total | embed | dense | BM25 | fuse + fetch | open + load s |",
             "|---|---|---|---|---|---|---|"]
    for e in result["sizes"]:
        cell = lambda key: f"{e[key + '_ms']['p50']} / {e[key + '_ms']['p95']}"   # noqa: E731, B023 - used at once
        lines.append(f"| {e['chunks']} | {cell('total')} | {cell('embed')} | {cell('dense')} | {cell('bm25')} | "
                     f"{cell('fuse')} | {e['open_and_load_s']} |")
    lines += ["", "Synthetic scale-up of the real cmcp chunks (see the script's docstring). Target: P50 ≤ 5 ms at "
                  "20k chunks.", ""]
    write_results("docindex_search_latency", result, "\n".join(lines))


if __name__ == "__main__":
    main()

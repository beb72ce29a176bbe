"""Which ANN library: recall@10 against the exact scan, query latency, build time, memory, file size.

    nice -n 10 .venv/bin/python benchmarks/ann_compare.py --n 100000 [--libs exact,faiss,hnswlib,usearch]
    .venv/bin/python benchmarks/ann_compare.py --n 100000 --rows-from LOG   # the table from a run's printed rows

hnswlib and usearch are not project dependencies: `pip install hnswlib usearch` to compare them.

Vectors: benchmarks/ann_data.py's synthetic clustered 384-d unit vectors
(seed 1). The search breadth (ef) of each HNSW library is chosen on *tune*
queries (seed 2) as the smallest of EF_STEPS reaching recall@10 ≥ 0.99; the
reported recall and latency are on separate *test* queries (seed 3), so the
figures are not tuned on what they report. All HNSW graphs: 16 links per node
(32 on the base layer), construction breadth 128, inner product, built with 1
thread; queries one at a time on 1 thread, as a search runs in the index
server. Each library runs in its own process (memory is that process's RSS
growth from building, over the data it was given). "open" is loading the
saved file back (faiss here reads it whole; docindex maps it in place).
sqlite-vec is not run (see LIBS).
"""
from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from ann_data import DIM, clustered, exact_top, queries, recall
from docindex_common import machine, percentiles, write_results

K = 10
EF_STEPS = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
TUNE_RECALL = 0.99
M = 16
EF_CONSTRUCTION = 128
# One build thread: on this shared 2-core box a second thread mostly waited (usearch 5k vectors: 14 s
# wall with 1 thread, 26 s with 2, at load 23); CPU seconds are reported beside wall seconds.
BUILD_THREADS = 1
# sqlite-vec is not run: this Python's sqlite3 has no enable_load_extension (it cannot load it at all),
# and its vec0 is a brute-force KNN, i.e. another exact scan.
LIBS = ("exact", "usearch", "usearch-f16", "hnswlib", "faiss")


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Lib:
    """build(data) / save(path) / open(path) / set_ef(ef) / search(q) -> row indices."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.index = None
        self.conn = None

    def build(self, data: np.ndarray) -> None:
        n = len(data)
        if self.name == "exact":
            self.index = data
        elif self.name.startswith("usearch"):
            from usearch.index import Index
            self.index = Index(ndim=DIM, metric="ip", dtype="f16" if self.name.endswith("f16") else "f32",
                               connectivity=M, expansion_add=EF_CONSTRUCTION)
            self.index.add(np.arange(n, dtype=np.uint64), data, threads=BUILD_THREADS)
        elif self.name == "hnswlib":
            import hnswlib
            self.index = hnswlib.Index(space="ip", dim=DIM)
            self.index.init_index(max_elements=n, ef_construction=EF_CONSTRUCTION, M=M)
            self.index.set_num_threads(BUILD_THREADS)
            self.index.add_items(data, np.arange(n))
            self.index.set_num_threads(1)
        elif self.name == "faiss":
            import faiss
            faiss.omp_set_num_threads(BUILD_THREADS)
            self.index = faiss.IndexHNSWFlat(DIM, M, faiss.METRIC_INNER_PRODUCT)
            self.index.hnsw.efConstruction = EF_CONSTRUCTION
            self.index.add(data)
            faiss.omp_set_num_threads(1)
        elif self.name == "sqlite-vec":
            import sqlite3

            import sqlite_vec
            self.conn = sqlite3.connect(":memory:")
            self.conn.enable_load_extension(True)
            sqlite_vec.load(self.conn)
            self.conn.enable_load_extension(False)
            self.conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIM}])")
            self.conn.executemany("INSERT INTO v(rowid, embedding) VALUES (?, ?)",
                                  ((i, data[i].tobytes()) for i in range(n)))

    def save(self, path: Path) -> None:
        if self.name == "exact":
            np.save(path, self.index)
        elif self.name.startswith("usearch"):
            self.index.save(str(path))
        elif self.name == "hnswlib":
            self.index.save_index(str(path))
        elif self.name == "faiss":
            import faiss
            faiss.write_index(self.index, str(path))
        elif self.name == "sqlite-vec":
            import sqlite3
            target = sqlite3.connect(str(path))
            self.conn.backup(target)
            target.close()

    def open(self, path: Path, n: int) -> None:
        if self.name == "exact":
            self.index = np.load(str(path) + ".npy" if not str(path).endswith(".npy") else path, mmap_mode="r")
        elif self.name.startswith("usearch"):
            from usearch.index import Index
            self.index = Index.restore(str(path), view=True)
        elif self.name == "hnswlib":
            import hnswlib
            self.index = hnswlib.Index(space="ip", dim=DIM)
            self.index.load_index(str(path), max_elements=n)
            self.index.set_num_threads(1)
        elif self.name == "faiss":
            import faiss
            self.index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)

    def set_ef(self, ef: int) -> None:
        if self.name.startswith("usearch"):
            self.index.expansion_search = ef
        elif self.name == "hnswlib":
            self.index.set_ef(ef)
        elif self.name == "faiss":
            self.index.hnsw.efSearch = ef

    def search(self, q: np.ndarray) -> np.ndarray:
        if self.name == "exact":
            scores = np.einsum("ij,j->i", self.index, q)
            top = np.argpartition(-scores, K - 1)[:K]
            return top[np.argsort(-scores[top])]
        if self.name.startswith("usearch"):
            return self.index.search(q, K, threads=1).keys.astype(np.int64)
        if self.name == "hnswlib":
            return self.index.knn_query(q, k=K, num_threads=1)[0][0].astype(np.int64)
        if self.name == "faiss":
            return self.index.search(q[None, :], K)[1][0]
        rows = self.conn.execute("SELECT rowid FROM v WHERE embedding MATCH ? AND k = ? ORDER BY distance",
                                 (q.tobytes(), K)).fetchall()
        return np.array([r[0] for r in rows], dtype=np.int64)


def run_one(name: str, n: int) -> dict:
    data = clustered(n, seed=1)
    tune, test = queries(200, seed=2), queries(300, seed=3)
    tune_truth, test_truth = exact_top(data, tune, K), exact_top(data, test, K)
    lib = Lib(name)
    base = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    lib.build(data)
    build_s, build_cpu_s = time.perf_counter() - t0, time.process_time() - c0
    built_mb = rss_mb() - base
    ef = None
    if name not in ("exact", "sqlite-vec"):
        for ef in EF_STEPS:
            lib.set_ef(ef)
            if recall(np.array([lib.search(q) for q in tune]), tune_truth) >= TUNE_RECALL:
                break
    with tempfile.TemporaryDirectory(prefix="ann-compare-", dir=os.environ.get("ANN_TMP")) as tmp:
        path = Path(tmp) / f"index.{name}"
        lib.save(path)
        size = sum(p.stat().st_size for p in Path(tmp).iterdir())
        if name != "sqlite-vec":
            del lib.index
            lib.index = None
            t0 = time.perf_counter()
            lib.open(path if name != "exact" else Path(str(path) + ".npy"), n)
            open_s = time.perf_counter() - t0
            if ef is not None:
                lib.set_ef(ef)
        else:
            open_s = None
        for q in test[:20]:
            lib.search(q)
        latencies, found = [], []
        c0 = time.process_time()
        for q in test:
            t0 = time.perf_counter()
            found.append(lib.search(q))
            latencies.append((time.perf_counter() - t0) * 1e3)
        cpu_ms = (time.process_time() - c0) * 1e3 / len(test)
    return {"lib": name, "n": n, "ef_search": ef, "recall_at_10": round(recall(np.array(found), test_truth), 4),
            "query_ms": percentiles(latencies), "query_cpu_ms_mean": round(cpu_ms, 3),
            "build_s": round(build_s, 1), "build_cpu_s": round(build_cpu_s, 1), "build_rss_mb": round(built_mb),
            "file_mb": round(size / 2**20, 1), "open_s": None if open_s is None else round(open_s, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--libs", default=",".join(LIBS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--name", default=None, help="results file name (default ann_compare_<n>)")
    parser.add_argument("--rows-from", type=Path, default=None,
                        help="write the table from the rows a run printed (one per line) instead of running")
    parser.add_argument("--note", default="", help="a line added under the table")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, args.n)))
        return
    result: dict = {"machine": machine(), "k": K, "tune_recall": TUNE_RECALL, "M": M,
                    "ef_construction": EF_CONSTRUCTION, "rows": [],
                    "command": " ".join(["benchmarks/ann_compare.py", *sys.argv[1:]])}
    if args.rows_from:
        rows = [ast.literal_eval(line) for line in args.rows_from.read_text().splitlines() if line.startswith("{")]
        result["rows"] = list({row["lib"]: row for row in rows if row["n"] == args.n}.values())
    for name in args.libs.split(",") if not args.rows_from else []:
        out = subprocess.run([sys.executable, __file__, "--child", name, "--n", str(args.n)],
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(row, flush=True)
        result["rows"].append(row)
    m = result["machine"]
    import importlib.metadata as md
    versions = {}
    for dist in ("usearch", "hnswlib", "faiss-cpu", "sqlite-vec", "numpy"):
        try:
            versions[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    result["versions"] = versions
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result["commit"] = commit
    lines = [f"# ANN libraries at {args.n:,} vectors", "",
             f"`{result['command']}` on a {m['machine']}, Python {m['python']}, {m['date']}, commit {commit}; "
             f"1-minute load average at start {m['load_avg_1m_at_start']} (2 cores shared with other sessions). "
             f"Versions: {', '.join(f'{k} {v}' for k, v in versions.items())}.", "",
             f"Synthetic clustered 384-d vectors (benchmarks/ann_data.py). ef chosen on 200 tune queries as the "
             f"smallest reaching recall@{K} ≥ {TUNE_RECALL}; recall and latency on 300 other queries, 1 thread.", "",
             "| library | ef | recall@10 | query ms P50 / P95 | query CPU ms (mean) | build s wall / CPU (1 thread) | build RSS MB | file MB | open s |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['lib']} | {r['ef_search'] or '-'} | {r['recall_at_10']} | {r['query_ms']['p50']} / "
                     f"{r['query_ms']['p95']} | {r['query_cpu_ms_mean']} | {r['build_s']} / {r['build_cpu_s']} | {r['build_rss_mb']} | {r['file_mb']} | "
                     f"{r['open_s'] if r['open_s'] is not None else '-'} |")
    if args.note:
        lines += ["", args.note]
    write_results(args.name or f"ann_compare_{args.n}", result, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Dense recall@10 and ANN time per query against the search breadth (ef), on an index scale.py kept.

    nice -n 10 .venv/bin/python benchmarks/ann_ef.py DB [--ef 192 256 384 512] [--seed 5] [--name ann_ef_1000000]

Queries are ann_data.queries(200, seed=SEED): SEED 5 by default, held out from scale.py's reported
recall (seed 3), so choosing ef here does not tune on the figure scale.py reports. The truth is the
exact scan of the same vectors (the snapshot's memory-mapped matrix); a search asks for 10 (recall@10,
as scale.py) and for 50 (the candidates a hybrid search takes: docindex/index.py CANDIDATES).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parents[1]) not in sys.path:   # run as a script: the repository's packages
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.ann_data import exact_top, queries, recall  # noqa: E402
from benchmarks.docindex_common import REPO, machine, percentiles, write_results  # noqa: E402
from docindex.index import Index  # noqa: E402


def sweep(db: Path, efs: list[int], seed: int, n_queries: int = 200) -> list[dict[str, Any]]:
    import faiss

    index = Index(db)
    snap = index._snapshot     # a benchmark may read the snapshot
    assert snap is not None and len(snap.anns) == 1, "an index with one ANN-covered collection (scale.py's)"
    (name, ann_index), = snap.anns.items()
    start, end = snap.slices[name]
    qs = np.asarray(queries(n_queries, seed=seed), dtype=np.float32)
    truth10 = snap.ids[start:end][exact_top(snap.matrix[start:end], qs, 10)]
    truth50 = snap.ids[start:end][exact_top(snap.matrix[start:end], qs, 50)]
    graph: Any = faiss.downcast_index(ann_index._index.index)
    rows = []
    for ef in efs:
        graph.hnsw.efSearch = ef
        for q in qs[:20]:                    # touch the mapped pages this breadth reaches
            ann_index.search(q, 10)
        found10, found50, times = [], [], []
        for q in qs:
            t = time.perf_counter()
            keys, _ = ann_index.search(q, 10)
            times.append((time.perf_counter() - t) * 1e3)
            found10.append(keys)
            found50.append(ann_index.search(q, 50)[0])
        rows.append({"ef": ef, "recall_at_10": round(recall(np.array(found10), truth10), 4),
                     "recall_at_50": round(recall(np.array(found50), truth50), 4), "ms_k10": percentiles(times)})
    index.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--ef", type=int, nargs="+", default=[192, 256, 384, 512])
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--name", default=None, help="write benchmarks/results/NAME.{json,md}")
    args = parser.parse_args()
    if args.seed == 3:
        parser.error("seed 3 is what scale.py reports: choose ef on another seed")
    info = machine()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    rows = sweep(args.db, args.ef, args.seed)
    command = " ".join(["benchmarks/ann_ef.py", *sys.argv[1:]])
    md = "\n".join([f"# ANN search breadth on {args.db.name}", "",
                    f"`{command}` on a {info['machine']}, {info['date']}, commit {commit}; 1-minute load average "
                    f"at start {info['load_avg_1m_at_start']}. 200 synthetic queries, seed {args.seed} (held out "
                    "from scale.py's seed 3).", "",
                    "| ef | recall@10 | recall@50 | ANN ms per k=10 search P50 / P95 |", "|---|---|---|---|",
                    *(f"| {r['ef']} | {r['recall_at_10']} | {r['recall_at_50']} | {r['ms_k10']['p50']} / "
                      f"{r['ms_k10']['p95']} |" for r in rows)]) + "\n"
    result = {"machine": info, "commit": commit, "command": command, "rows": rows}
    write_results(args.name, result, md) if args.name else print(md)


if __name__ == "__main__":
    main()

"""ANN recall on real MiniLM vectors: the PostgreSQL manual's chunks and its questions' embeddings.

    nice -n 10 .venv/bin/python benchmarks/ann_real.py [--db var/oos/postgresql.db]

benchmarks/ann_compare.py and scale.py use synthetic clustered vectors; a
real question's vector does not fall inside those clusters (scale.py's
"real questions" recall is low for that reason). This measures the ANN as
docindex builds it (docindex/ann.py, its EF_SEARCH and neighbours) on real
chunk vectors (the out-of-sample PostgreSQL index, `make corpora` + its
ingest) against the exact scan, for the dev-half questions and off-topic
questions embedded by the real embedder: recall@10 and recall of the 50
candidates a search takes (index.CANDIDATES), per ef.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parents[1]) not in sys.path:   # run as a script: the repository's packages
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.ann_data import exact_top, recall  # noqa: E402
from benchmarks.docindex_common import REPO, machine, write_results  # noqa: E402
from benchmarks.oos.questions import off_topic, questions  # noqa: E402
from docindex import ann  # noqa: E402
from docindex.index import CANDIDATES, Index  # noqa: E402
from docindex.minilm import default_embedder  # noqa: E402

EFS = (32, 48, 64, 96, 128, 192, 256)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=REPO / "var" / "oos" / "postgresql.db")
    args = parser.parse_args()
    info = machine()
    with Index(args.db, exact=True) as index:
        snapshot = index._snapshot
        assert snapshot is not None
        ids, matrix = snapshot.ids, np.asarray(snapshot.matrix)
    texts = [q["question"] for q in questions("postgresql", "dev")] + \
            [q["question"] for q in off_topic("postgresql", "dev")]
    qs = default_embedder(threads=1).embed(texts).astype(np.float32)
    rows = []
    with tempfile.TemporaryDirectory(prefix="ann-real-") as tmp:
        path = Path(tmp) / "real.faiss"
        t0, c0 = time.perf_counter(), time.process_time()
        ann.build(ids, matrix, path, threads=1)
        build = (round(time.perf_counter() - t0, 1), round(time.process_time() - c0, 1))
        for ef in EFS:
            graph = ann.Ann(path, ids=ids, dim=matrix.shape[1], ef_search=ef)
            row: dict = {"ef": ef}
            for k in (10, CANDIDATES):
                truth = ids[exact_top(matrix, qs, k)]
                found = np.array([np.pad(graph.search(q, k)[0], (0, k))[:k] for q in qs])
                row[f"recall_at_{k}"] = round(recall(found, truth), 4)
            rows.append(row)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    result = {"machine": info, "commit": commit, "db": str(args.db), "vectors": len(ids), "queries": len(texts),
              "build_wall_cpu_s": build, "docindex_ef": ann.EF_SEARCH, "rows": rows}
    lines = [f"# ANN recall on real MiniLM vectors ({len(ids):,} PostgreSQL-manual chunks)", "",
             f"`benchmarks/ann_real.py` on a {info['machine']}, {info['date']}, commit {commit}; load average at "
             f"start {info['load_avg_1m_at_start']}. {len(texts)} queries: the PostgreSQL dev-half questions and "
             f"dev off-topic questions, embedded by the real embedder. Build (1 thread) {build[0]} s wall / "
             f"{build[1]} s CPU. docindex searches with ef {ann.EF_SEARCH} and takes {CANDIDATES} candidates.", "",
             f"| ef | recall@10 | recall@{CANDIDATES} |", "|---|---|---|"]
    lines += [f"| {r['ef']} | {r['recall_at_10']} | {r[f'recall_at_{CANDIDATES}']} |" for r in rows]
    write_results("ann_real_postgresql", result, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Open time of an existing index, stage by stage: what Snapshot.load costs as the chunk count grows.

    nice -n 10 .venv/bin/python benchmarks/snapshot_open.py DB [--repeat 5] [--name scale_open_200000]

DB: an index built by benchmarks/scale.py --keep (with its search files). Each repeat opens a
fresh Index(db) (no embedder: opening does not embed) and times, inside one read transaction:

- rows: chunk ids, document ids and collection slices as Snapshot.load reads them now with
  search files (docindex/snapshot.py: `read_ids` from the index chunks_by_collection and
  `_read_doc_ids` from chunks_by_doc, one group_concat each, parsed by numpy), as it reads them
  without (`_read_rows`: joined to each chunk's vector, which reads every vector's page), and as
  it read them before (the same join, one Python tuple per chunk: `row_by_row` below);
- the search files (ann_sidecar.open_for: manifest, digests, ANN graph and postings mapped);
- the whole Index(db) open.

The OS page cache is warm after the first repeat (the figures are medians, a warm open).
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

if str(Path(__file__).resolve().parents[1]) not in sys.path:   # run as a script: the repository's packages
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.docindex_common import REPO, machine, write_results  # noqa: E402
from docindex import ann_sidecar, snapshot, store  # noqa: E402
from docindex.embedder import MODEL_DIM  # noqa: E402
from docindex.index import Index  # noqa: E402


def row_by_row(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[int, int]]]:
    """Snapshot.load's rows as read up to commit ac24af0 (the reference)."""
    rows = conn.execute("SELECT c.id, c.collection, c.doc_id FROM chunks c JOIN vectors v ON v.chunk_id = c.id "
                        "ORDER BY c.collection, c.id").fetchall()
    ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
    doc_ids = np.fromiter((row[2] for row in rows), dtype=np.int64, count=len(rows))
    slices: dict[str, tuple[int, int]] = {}
    for row_index, row in enumerate(rows):
        start, _ = slices.get(row[1], (row_index, row_index))
        slices[row[1]] = (start, row_index + 1)
    return ids, doc_ids, slices


def timed(fn, *args):  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def once(db: Path) -> dict[str, float]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        conn.execute("BEGIN")
        version = int(store.read_meta(conn).get("index_version", 0))
        t = time.perf_counter()
        ids, slices = snapshot.read_ids(conn)
        new = (ids, snapshot._read_doc_ids(conn, ids), slices)
        new_s = time.perf_counter() - t
        joined, joined_s = timed(snapshot._read_rows, conn)
        old, old_s = timed(row_by_row, conn)
        for other in (joined, old):
            if not (np.array_equal(new[0], other[0]) and np.array_equal(new[1], other[1]) and new[2] == other[2]):
                raise SystemExit("the row readers disagree")
        opened, files_s = timed(ann_sidecar.open_for, conn, db, version, ids, slices, MODEL_DIM)
        if opened.token is None:
            raise SystemExit(f"{db}: its search files were not used (see the warning above)")
        conn.rollback()
    finally:
        conn.close()
    t = time.perf_counter()
    index = Index(db)
    open_s = time.perf_counter() - t
    index.close()
    return {"rows_s": new_s, "rows_joined_s": joined_s, "rows_row_by_row_s": old_s, "search_files_s": files_s,
            "index_open_s": open_s}


_OPEN = ("import sys, time; from docindex.index import Index; t = time.perf_counter(); "
         "Index(sys.argv[1]).close(); print(time.perf_counter() - t)")


def open_with(tree: Path, db: Path) -> float:
    """Index(db) open time with the docindex package of another checkout (`git archive COMMIT docindex`)."""
    out = subprocess.run([sys.executable, "-c", _OPEN, str(db.resolve())], cwd=tree, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(tree)}, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", type=Path, default=None,
                        help="also time Index(db) with the docindex/ of this folder (e.g. `git archive ac24af0 docindex`)")
    parser.add_argument("--name", default=None, help="write benchmarks/results/NAME.{json,md}")
    args = parser.parse_args()
    if not args.db.is_file():
        raise SystemExit(f"no index at {args.db}")
    info = machine()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=REPO).stdout.strip()
    runs = [once(args.db) for _ in range(args.repeat)]
    if args.before:
        before = [open_with(args.before, args.db) for _ in range(args.repeat)]
        for run, seconds in zip(runs, before):
            run["index_open_before_s"] = seconds
    with sqlite3.connect(f"file:{args.db}?mode=ro", uri=True) as conn:
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    medians = {key: round(statistics.median(r[key] for r in runs), 3) for key in runs[0]}
    result = {"machine": info, "commit": commit, "command": " ".join(["benchmarks/snapshot_open.py", *sys.argv[1:]]),
              "db": str(args.db), "chunks": chunks, "repeat": args.repeat,
              "median_s": medians, "runs": runs}
    md = (f"# Opening a {chunks:,}-chunk index\n\n`benchmarks/snapshot_open.py {' '.join(sys.argv[1:])}` on a "
          f"{info['machine']}, {info['date']}, commit {commit}; 1-minute load average at start "
          f"{info['load_avg_1m_at_start']}. Medians of {args.repeat} warm opens.\n\n| stage | s |\n|---|---|\n"
          f"| rows from the two chunks indexes, parsed by numpy (now, with search files) | {medians['rows_s']} |\n"
          f"| rows joined to their vectors, parsed by numpy (now, without) | {medians['rows_joined_s']} |\n"
          f"| rows joined to their vectors, one Python tuple per chunk (before) | "
          f"{medians['rows_row_by_row_s']} |\n"
          f"| search files (manifest, digests, ANN graph and postings mapped) | {medians['search_files_s']} |\n"
          f"| whole Index(db) open | {medians['index_open_s']} |\n")
    if args.before:
        md += f"| whole Index(db) open, docindex/ of {args.before} (before) | {medians['index_open_before_s']} |\n"
    write_results(args.name, result, md) if args.name else print(md)


if __name__ == "__main__":
    main()

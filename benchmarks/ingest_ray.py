"""`docindex ingest` local vs `--ray` (issue 14 item 3): chunks/s on one corpus.

    nice -n 10 .venv/bin/python benchmarks/ingest_ray.py [--corpus corpora/cmcp] [--rounds 1]

Each run is the real CLI in a fresh process on a fresh index: the local path
(embedding on one thread per core), then `--ray local --ray-workers N` for N in
--workers (a new local Ray with N CPUs, N actors each reading and embedding).
Rounds interleave the modes so load drift hits them alike. Reported per run:
chunks/s over ingest()'s own time (from the CLI summary: discovery to commit,
Ray actors' start and model load included, Ray's own start not) and over the
whole command (process and Ray start included). Every Ray index is compared
with the local one (rows and vectors, bit for bit) before its figure counts.

Results: benchmarks/results/ingest_ray.{json,md}.
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from docindex_common import CORPORA, INGEST_SUMMARY, REPO, machine, write_results


def run(corpus: Path, db: Path, ray_workers: int | None) -> dict:
    args = [sys.executable, "-m", "docindex.cli", "ingest", str(corpus), "--db", str(db), "-c", "bench"]
    if ray_workers:
        args += ["--ray", "local", "--ray-workers", str(ray_workers)]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    load = os.getloadavg()[0]
    started = time.perf_counter()
    result = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    mode = f"ray x{ray_workers}" if ray_workers else "local"
    if result.returncode not in (0, 3):      # recorded, not hidden: e.g. Ray's node start timing out under load
        return {"mode": mode, "error": result.stderr.strip()[-500:], "wall_s": round(wall, 1),
                "load_avg_1m_at_start": round(load, 2)}
    match = INGEST_SUMMARY.search(result.stdout)
    assert match, result.stdout
    chunks, seconds = int(match.group(1)), float(match.group(2))
    return {"mode": mode, "chunks": chunks,
            "ingest_s": seconds, "wall_s": round(wall, 1), "chunks_per_s": round(chunks / seconds, 2),
            "chunks_per_s_wall": round(chunks / wall, 2), "load_avg_1m_at_start": round(load, 2)}


def rows(db: Path) -> tuple[list, list]:
    conn = sqlite3.connect(db)
    try:
        chunks = conn.execute("SELECT id, doc_id, ordinal, anchor, heading_path, text FROM chunks ORDER BY id").fetchall()
        vectors = conn.execute("SELECT chunk_id, embedding FROM vectors ORDER BY chunk_id").fetchall()
        return chunks, vectors
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=CORPORA / "cmcp")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--name", default="ingest_ray", help="results file stem (another corpus or machine beside)")
    args = parser.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    info = machine()
    runs = []
    with tempfile.TemporaryDirectory(prefix="ingest-ray-bench-") as tmp:
        for round_ in range(args.rounds):
            local_db = Path(tmp) / f"local-{round_}.db"
            runs.append(run(args.corpus, local_db, None))
            expected = rows(local_db)
            for workers in args.workers:
                db = Path(tmp) / f"ray{workers}-{round_}.db"
                runs.append(run(args.corpus, db, workers))
                if "error" not in runs[-1]:
                    runs[-1]["identical_to_local"] = rows(db) == expected
                    assert runs[-1]["identical_to_local"], f"ray x{workers} wrote other rows or vectors than local"
            for entry in runs[-1 - len(args.workers):]:
                entry["round"] = round_
    modes = ["local"] + [f"ray x{w}" for w in args.workers]
    best = {m: max([r["chunks_per_s"] for r in runs if r["mode"] == m and "error" not in r] or [float("nan")])
            for m in modes}
    lines = [
        f"# docindex ingest: local vs --ray ({args.corpus.relative_to(REPO) if args.corpus.is_relative_to(REPO) else args.corpus})",
        "",
        f"{info['machine']}, {info['date']}, commit {commit}, load average (1 min) {info['load_avg_1m_at_start']} "
        "at the start; `benchmarks/ingest_ray.py` under `nice -n 10`.",
        "",
        "| round | mode | chunks | ingest s | chunks/s | whole command s | chunks/s (whole) | load at start | same rows + vectors |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        if "error" in r:
            lines.append(f"| {r['round']} | {r['mode']} | failed after {r['wall_s']} s: {r['error'].splitlines()[-1]} "
                         f"| | | | | {r['load_avg_1m_at_start']} | |")
            continue
        lines.append(f"| {r['round']} | {r['mode']} | {r['chunks']} | {r['ingest_s']} | {r['chunks_per_s']} | "
                     f"{r['wall_s']} | {r['chunks_per_s_wall']} | {r['load_avg_1m_at_start']} | "
                     f"{'yes' if r.get('identical_to_local', True) else 'NO'} |")
    lines += ["", "Best of the rounds, chunks/s over ingest time: " +
              ", ".join(f"{m} {best[m]}" for m in modes) + "; " +
              ", ".join(f"{m} / local {best[m] / best['local']:.2f}" for m in modes[1:]) +
              (f"; ray x{args.workers[-1]} / ray x{args.workers[0]} "
               f"{best[modes[-1]] / best[modes[1]]:.2f}" if len(args.workers) > 1 else ""), ""]
    write_results(args.name, {"machine": info, "commit": commit, "corpus": str(args.corpus), "runs": runs,
                                 "best_chunks_per_s": best}, "\n".join(lines))


if __name__ == "__main__":
    main()

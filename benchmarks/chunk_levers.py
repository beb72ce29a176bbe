"""Chunk size and overlap (issue 13 item 3) on the out-of-sample dev halves, one ingest per setting.

    .venv/bin/python benchmarks/chunk_levers.py [--settings 128:16 256:0 256:32 256:64] \
        [--corpora postgresql python] [--work /tmp/chunk_levers]

For each MAX:OVERLAP (tokens; docindex/chunking.py's MAX_TOKENS and OVERLAP_TOKENS, shipped 256:32)
each corpus is ingested again (`docindex ingest --no-quote-vectors`, the chunker's defaults set in
that process only) into WORK, then scored on its DEV half by benchmarks/retrieval_oos.py exactly as
the shipped index is (page ranking's distinct-document metrics, chunk recall@4 of the passages
ranking, the Gate). MAX cannot exceed 256: it is the embedder's window. The test halves are never
read here. Writes benchmarks/results/chunk_levers.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import INGEST_SUMMARY  # noqa: E402
from benchmarks.oos.corpus import CORPORA  # noqa: E402
from benchmarks.retrieval_levers import _commit  # noqa: E402

PYTHON = sys.executable
# A child process: the chunker's keyword defaults set before the CLI imports them.
_INGEST = """
import sys
from docindex import chunking
chunking.chunk_blocks.__kwdefaults__.update(max_tokens=int(sys.argv[1]), overlap_tokens=int(sys.argv[2]))
from docindex.cli import main
sys.argv = ["docindex", *sys.argv[3:]]
raise SystemExit(main())
"""
METRICS = ("recall@1", "recall@5", "mrr@10", "chunk_recall@4")


def ingest(paths: list[Path], collection: str, max_tokens: int, overlap: int, db: Path) -> dict:
    """A fresh index of `paths` at `db`, chunked at max_tokens:overlap in a child process."""
    for stale in db.parent.glob(db.name + "*"):
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink()
    started = time.perf_counter()
    done = subprocess.run([PYTHON, "-c", _INGEST, str(max_tokens), str(overlap), "ingest",
                           *map(str, paths), "--db", str(db), "--collection", collection, "--no-quote-vectors"],
                          cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 3):       # 3: finished, some files skipped (the manual's .svg, .css)
        sys.exit(f"chunk_levers: ingest of {collection} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    counted = INGEST_SUMMARY.search(done.stdout)
    return {"seconds": round(time.perf_counter() - started, 1), "chunks": int(counted[1]) if counted else None}


def scored(corpus: str, db: Path, stem: Path) -> dict:
    subprocess.run([PYTHON, str(REPO / "benchmarks" / "retrieval_oos.py"), "--corpus", corpus, "--split", "dev",
                    "--db", str(db), "--name", str(stem), "--no-cli-check"], cwd=REPO, check=True,
                   capture_output=True)
    payload = json.loads(stem.with_suffix(".json").read_text())
    table = payload["scores"]["table"]
    out: dict = {name: table[name]["ours"][0] for name in METRICS}     # [point, low, high]
    gate = payload["gate"]["rules"]["shipped"]
    out["gate"] = f"{gate['answerable_refused']}/{gate['answerable']} · {gate['off_topic_refused']}/{gate['off_topic']}"
    out["search_p50_ms"] = payload["latency_ms"]["ours"]["p50"]
    return out


def markdown(meta: dict, rows: dict) -> str:
    lines = ["# Chunk size and overlap (issue 13 item 3), out-of-sample dev halves", "",
             f"`benchmarks/chunk_levers.py`, {meta['date']}, commit {meta['commit']}, load {meta['loadavg']}. "
             "Distinct-document recall@1 / recall@5 / MRR@10 of `docindex search` (page ranking), "
             "chunk recall@4 of the passages ranking (what the answer gets), the Gate's wrong "
             "refusals and off-topic refusals.", "",
             "| max:overlap tokens | corpus | chunks | r@1 | r@5 | MRR@10 | chunk r@4 | Gate wrong · off-topic |",
             "|---|---|---|---:|---:|---:|---:|---|"]
    for setting, by_corpus in rows.items():
        for corpus, row in by_corpus.items():
            s = row["scores"]
            lines.append(f"| {setting} | {corpus} | {row['ingest']['chunks']} | " + " | ".join(
                f"{s[m]:.3f}" for m in METRICS) + f" | {s['gate']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--settings", nargs="+", default=["128:16", "256:0", "256:32", "256:64"])
    p.add_argument("--corpora", nargs="+", default=["postgresql", "python"], choices=sorted(CORPORA))
    p.add_argument("--work", type=Path, default=Path("/tmp/chunk_levers"))
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "chunk_levers")
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows: dict[str, dict] = {}
    for setting in args.settings:
        max_tokens, overlap = (int(x) for x in setting.split(":"))
        if not 0 <= overlap < max_tokens <= 256:
            sys.exit(f"chunk_levers: {setting}: need 0 <= overlap < max <= 256 (the embedder's window)")
        rows[setting] = {}
        for corpus in args.corpora:
            db = args.work / f"{corpus}-{max_tokens}-{overlap}.db"
            built = ingest(CORPORA[corpus].ingest_paths(), corpus, max_tokens, overlap, db)
            rows[setting][corpus] = {"ingest": built, "scores": scored(corpus, db, args.work / db.stem)}
            print(setting, corpus, json.dumps(rows[setting][corpus]), flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": _commit(),
            "loadavg": " ".join(Path("/proc/loadavg").read_text().split()[:3])}
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "settings": rows}, indent=1) + "\n")
    args.out.with_suffix(".md").write_text(markdown(meta, rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

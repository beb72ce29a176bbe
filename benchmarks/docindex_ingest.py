"""Ingest rate and no-op re-ingest time.

    .venv/bin/python benchmarks/docindex_ingest.py            # cmcp + the machine corpus
    .venv/bin/python benchmarks/docindex_ingest.py --quick    # cmcp only

1. cmcp (../shared/corpora/cmcp, 35 files): a fresh ingest with the default
   embedder (chunks/s), then a no-op re-ingest.
2. A larger real corpus assembled from documentation found on this machine:
   every Markdown file under site-packages, pyenv, /usr/share/doc,
   /usr/lib/node_modules and the Cloud SDK, topped up with awscli's
   reStructuredText help pages (ingested as plain text) to --files files.
   Symlinked into a temp dir; nothing is copied into the project. Measured:
   a fresh real ingest (chunks/s), then a no-op re-ingest (stat fast path),
   then a re-ingest after touching every file (hash path).
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from docindex_common import CORPORA, machine, write_results

from docindex.ingest import ingest

MARKDOWN_ROOTS = ["/work/main/.venv/lib/python3.11/site-packages", "/root/.pyenv", "/usr/share/doc",
                  "/usr/lib/node_modules", "/usr/lib/google-cloud-sdk"]
RST_ROOT = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages/awscli"


def assemble(target: Path, files: int, max_bytes: int) -> dict:
    """Symlink up to `files` documentation files (each ≤ max_bytes) into target."""
    chosen: list[Path] = []
    for suffix, roots in ((".md", MARKDOWN_ROOTS), (".rst", [RST_ROOT])):
        for root in roots:
            for folder, _dirs, names in sorted(os.walk(root)):
                for name in sorted(names):
                    path = Path(folder, name)
                    if path.suffix == suffix and path.is_file() and 0 < path.stat().st_size <= max_bytes:
                        chosen.append(path)
                    if len(chosen) >= files:
                        break
    chosen = chosen[:files]
    for n, path in enumerate(chosen):
        link = target / f"{n:05d}-{path.name}"
        link.symlink_to(path)
    md = sum(1 for p in chosen if p.suffix == ".md")
    return {"files": len(chosen), "markdown": md, "rst_as_text": len(chosen) - md,
            "bytes": sum(p.stat().st_size for p in chosen), "max_file_bytes": max_bytes}


def measure(paths: list[Path], db: Path, collection: str) -> dict:
    first = ingest(paths, db, collection)
    noop = ingest(paths, db, collection)
    return {
        "files": first.added, "skipped": first.skipped, "chunks": first.chunks,
        "ingest_s": round(first.seconds, 2), "chunks_per_s": round(first.chunks / first.seconds, 1),
        "noop_reingest_s": round(noop.seconds, 3), "noop_unchanged": noop.unchanged,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="cmcp only")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--max-bytes", type=int, default=6000,
                        help="largest file taken into the machine corpus (keeps the embedding time in reach)")
    args = parser.parse_args()
    result: dict = {"machine": machine(), "command": "benchmarks/docindex_ingest.py"}
    with tempfile.TemporaryDirectory(prefix="docindex-bench-") as tmp:
        tmp_path = Path(tmp)
        result["cmcp"] = measure([CORPORA / "cmcp"], tmp_path / "cmcp.db", "cmcp")
        if not args.quick:
            corpus = tmp_path / "machine-docs"
            corpus.mkdir()
            result["machine_corpus"] = assemble(corpus, args.files, args.max_bytes)
            big = measure([corpus], tmp_path / "big.db", "machine")
            for path in corpus.iterdir():          # new mtime, same bytes: every file hashed again
                os.utime(path.resolve())
            started = time.perf_counter()
            touched = ingest([corpus], tmp_path / "big.db", "machine")
            big["touched_reingest_s"] = round(time.perf_counter() - started, 3)
            big["touched_unchanged"] = touched.unchanged
            result["machine_corpus"].update(big)
    m = result["machine"]
    lines = [
        "# docindex ingest benchmark", "",
        f"`{result['command']}` on a {m['machine']}, Python {m['python']}, {m['date']}; "
        f"1-minute load average at start {m['load_avg_1m_at_start']} (other jobs shared the 2 cores).", "",
        "| corpus | files | chunks | ingest s | chunks/s | no-op re-ingest s |", "|---|---|---|---|---|---|",
    ]
    for name in ("cmcp", "machine_corpus"):
        if name in result:
            r = result[name]
            lines.append(f"| {name} | {r['files']} | {r['chunks']} | {r['ingest_s']} | {r['chunks_per_s']} | "
                         f"{r['noop_reingest_s']} |")
    if "machine_corpus" in result:
        r = result["machine_corpus"]
        lines += ["", f"machine corpus: {r['markdown']} Markdown + {r['rst_as_text']} reStructuredText (as text) "
                      f"files ≤ {r['max_file_bytes']} B, {r['bytes'] / 1e6:.1f} MB; re-ingest after touching "
                      f"every file (hash path): {r['touched_reingest_s']} s."]
    lines += ["", "Targets: ≥ 60 chunks/s on 2 cores; no-op re-ingest of 3k files ≤ 2 s.", ""]
    write_results("docindex_ingest", result, "\n".join(lines))


if __name__ == "__main__":
    main()

"""Ingest rate and no-op re-ingest time.

    .venv/bin/python benchmarks/docindex_ingest.py            # cmcp + the machine corpus
    .venv/bin/python benchmarks/docindex_ingest.py --quick    # cmcp only → results/docindex_ingest_cmcp.*
    .venv/bin/python benchmarks/docindex_ingest.py --noop-only   # → results/docindex_ingest_noop.*

1. cmcp (corpora/cmcp, 35 files): a fresh ingest with the default
   embedder (chunks/s), then a no-op re-ingest; then the same fresh ingest
   with --no-quote-vectors (chunks only: what the quotable sentences'
   vectors cost, docindex/quotable.py).
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
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from docindex_common import CORPORA, machine, write_results

from docindex.embedder import MODEL_DIM, MODEL_NAME
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


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)     # all threads, ONNX Runtime's included
    return usage.ru_utime + usage.ru_stime


def measure(paths: list[Path], db: Path, collection: str, quote_vectors: bool = True) -> dict:
    cpu = cpu_seconds()
    first = ingest(paths, db, collection, quote_vectors=quote_vectors)
    cpu = cpu_seconds() - cpu
    noop = ingest(paths, db, collection)
    return {
        "files": first.added, "skipped": first.skipped, "chunks": first.chunks,
        "ingest_s": round(first.seconds, 2), "chunks_per_s": round(first.chunks / first.seconds, 1),
        # Wall time depends on what else runs; CPU time much less: chunks per CPU-second
        # times the cores is what an otherwise idle machine could reach at best.
        "cpu_s": round(cpu, 1), "chunks_per_cpu_s": round(first.chunks / cpu, 1),
        "noop_reingest_s": round(noop.seconds, 3), "noop_unchanged": noop.unchanged,
        "db_mb": round(sum(p.stat().st_size for p in db.parent.glob(db.name + "*")) / 1e6, 1),
    }


class _StandIn:
    """Vectors of the right name and width, instantly: the no-op path never embeds."""

    name, dim = MODEL_NAME, MODEL_DIM

    def embed(self, texts):
        return np.tile(np.eye(1, self.dim, dtype=np.float32), (len(texts), 1))

    def count_tokens(self, text: str) -> int:
        return len(text.split()) + 2


def noop_only(files: int, max_bytes: int) -> None:
    """Time no-op re-ingests of the machine corpus; its index is built with a stand-in embedder."""
    with tempfile.TemporaryDirectory(prefix="docindex-noop-") as tmp:
        corpus = Path(tmp) / "machine-docs"
        corpus.mkdir()
        info = assemble(corpus, files, max_bytes)
        ingest([corpus], Path(tmp) / "big.db", "machine", embedder=_StandIn())
        runs = []
        for _ in range(5):
            report = ingest([corpus], Path(tmp) / "big.db", "machine")     # default embedder: never loaded
            assert report.unchanged == info["files"]
            runs.append(round(report.seconds, 3))
    result = {"machine": machine(), "command": " ".join(["benchmarks/docindex_ingest.py", *sys.argv[1:]]),
              "corpus": info, "noop_reingest_s": runs}
    m = result["machine"]
    write_results("docindex_ingest_noop", result, "\n".join([
        "# docindex no-op re-ingest", "",
        f"`{result['command']}` on a {m['machine']}, {m['date']}; 1-minute load average at start "
        f"{m['load_avg_1m_at_start']}.", "",
        f"{info['files']} unchanged files ({info['markdown']} Markdown + {info['rst_as_text']} reStructuredText): "
        f"five no-op re-ingests took {', '.join(map(str, runs))} s (median {sorted(runs)[2]} s). "
        "The index was built with a stand-in embedder of the same name and width (a no-op run never embeds "
        "and never loads the model). Target: ≤ 2 s for 3k files.", ""]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="cmcp only")
    parser.add_argument("--noop-only", action="store_true", help="only time no-op re-ingests of the machine corpus")
    parser.add_argument("--files", type=int, default=3000)
    parser.add_argument("--max-bytes", type=int, default=6000,
                        help="largest file taken into the machine corpus (keeps the embedding time in reach)")
    args = parser.parse_args()
    if args.noop_only:
        noop_only(args.files, args.max_bytes)
        return
    result: dict = {"machine": machine(), "command": " ".join(["benchmarks/docindex_ingest.py", *sys.argv[1:]])}
    with tempfile.TemporaryDirectory(prefix="docindex-bench-") as tmp:
        tmp_path = Path(tmp)
        result["cmcp"] = measure([CORPORA / "cmcp"], tmp_path / "cmcp.db", "cmcp")
        result["cmcp_no_quote_vectors"] = measure([CORPORA / "cmcp"], tmp_path / "bare.db", "cmcp",
                                                  quote_vectors=False)
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
        "| corpus | files | chunks | ingest s | chunks/s | CPU s | chunks per CPU-s | no-op re-ingest s | file MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name in ("cmcp", "cmcp_no_quote_vectors", "machine_corpus"):
        if name in result:
            r = result[name]
            lines.append(f"| {name} | {r['files']} | {r['chunks']} | {r['ingest_s']} | {r['chunks_per_s']} | "
                         f"{r.get('cpu_s', '–')} | {r.get('chunks_per_cpu_s', '–')} | {r['noop_reingest_s']} | "
                         f"{r.get('db_mb', '–')} |")
    if "machine_corpus" in result:
        r = result["machine_corpus"]
        lines += ["", f"machine corpus: {r['markdown']} Markdown + {r['rst_as_text']} reStructuredText (as text) "
                      f"files ≤ {r['max_file_bytes']} B, {r['bytes'] / 1e6:.1f} MB; re-ingest after touching "
                      f"every file (hash path): {r['touched_reingest_s']} s."]
    lines += ["", "Targets: ≥ 60 chunks/s on 2 cores; no-op re-ingest of 3k files ≤ 2 s.", ""]
    write_results("docindex_ingest_cmcp" if args.quick else "docindex_ingest", result, "\n".join(lines))


if __name__ == "__main__":
    main()

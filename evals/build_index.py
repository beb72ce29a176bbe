"""Build the eval index from the locked corpus (evals/corpus.lock).

The corpus is cMCP's markdown documentation at a pinned commit. The files
come from a local copy (default: corpora/cmcp beside the checkout)
or from a git checkout of https://github.com/Simon-oid/cMCP; either way every
locked file's sha256 is verified first, and only the locked files are staged
(into <db folder>/eval-corpus/) and ingested, so a checkout's other files
never enter the index and sources are the locked paths, relative to the
corpus root, exactly as cases.jsonl names them.

    python -m evals.build_index                         # var/eval.db from corpora/cmcp
    python -m evals.build_index --git-checkout ~/src/cMCP --db var/eval.db
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from docindex.hashing import sha256_file
from evals.cases import load_cases

EVALS_DIR = Path(__file__).resolve().parent
LOCK_PATH = EVALS_DIR / "corpus.lock"
REPO_ROOT = EVALS_DIR.parent
DEFAULT_SOURCE = REPO_ROOT / "corpora" / "cmcp"


class CorpusError(RuntimeError):
    """The corpus copy does not match corpus.lock."""


def load_lock(path: Path = LOCK_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def verify_corpus(source: Path, lock: dict) -> None:
    """Raise CorpusError naming every missing or changed file."""
    problems = []
    for rel, expected in lock["files"].items():
        path = source / rel
        if not path.is_file():
            problems.append(f"missing {rel}")
        elif sha256_file(path) != expected:
            problems.append(f"changed {rel}")
    if problems:
        raise CorpusError(f"{source} does not match corpus.lock (commit {lock['commit'][:12]}): "
                          + "; ".join(problems[:10]) + (" …" if len(problems) > 10 else ""))


def checkout_commit(checkout: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def stage(source: Path, lock: dict, staging: Path) -> None:
    """Copy exactly the locked files (mtimes kept, so re-ingest skips unchanged files cheaply)."""
    if staging.exists():
        shutil.rmtree(staging)
    for rel in lock["files"]:
        target = staging / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, target)


def check_index(db: Path, collection: str, lock: dict) -> list[str]:
    """Warnings: indexed sources differ from the lock, or case anchors the chunker did not produce."""
    conn = sqlite3.connect(db)
    try:
        sources = {r[0] for r in conn.execute("SELECT source FROM documents WHERE collection = ?", (collection,))}
        anchors = {f"{s}#{a}" for s, a in conn.execute(
            "SELECT d.source, c.anchor FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE d.collection = ?",
            (collection,))}
    finally:
        conn.close()
    warnings = []
    locked = set(lock["files"])
    if sources != locked:
        warnings.append(f"indexed sources differ from the lock: missing {sorted(locked - sources)[:5]}, "
                        f"extra {sorted(sources - locked)[:5]}")
    for case in load_cases():
        missing = [a for a in case.anchors if a not in anchors]
        if missing:
            warnings.append(f"case {case.id}: anchors not in the index {missing}")
    return warnings


def parse_args(argv: Iterable[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m evals.build_index", description=__doc__.split("\n\n")[0])
    where = p.add_mutually_exclusive_group()
    where.add_argument("--source", type=Path, default=None, help=f"local corpus copy (default {DEFAULT_SOURCE})")
    where.add_argument("--git-checkout", type=Path, default=None, help="a git checkout of the locked repository")
    p.add_argument("--db", type=Path, default=REPO_ROOT / "var" / "eval.db")
    p.add_argument("--collection", default=None, help="default: the lock's collection")
    p.add_argument("--force", action="store_true", help="re-chunk and re-embed every file")
    return p.parse_args(argv)


def main(argv: Iterable[str] | None = None) -> int:
    args = parse_args(argv)
    lock = load_lock()
    collection = args.collection or lock["collection"]
    source = args.git_checkout or args.source or DEFAULT_SOURCE
    if args.git_checkout is not None:
        head = checkout_commit(args.git_checkout)
        if head != lock["commit"]:
            print(f"build_index: {args.git_checkout} is at {head or 'an unknown commit'}, the lock pins "
                  f"{lock['commit']}; run `git -C {args.git_checkout} checkout {lock['commit']}`", file=sys.stderr)
            return 2
    try:
        verify_corpus(source, lock)
    except CorpusError as exc:
        print(f"build_index: {exc}", file=sys.stderr)
        return 2

    from docindex.ingest import ingest  # heavy (embedder); only once the corpus checks out

    staging = args.db.parent / "eval-corpus"
    args.db.parent.mkdir(parents=True, exist_ok=True)
    stage(source, lock, staging)
    report = ingest([staging], args.db, collection, force=args.force, progress=sys.stderr.isatty())
    print(report.summary(), file=sys.stderr)
    warnings = check_index(args.db, collection, lock)
    for w in warnings:
        print(f"build_index: warning: {w}", file=sys.stderr)
    print(f"build_index: {args.db} collection {collection!r}: {len(lock['files'])} locked files verified "
          f"(commit {lock['commit'][:12]})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Copying an index to another place with the search files its version names (ann_sidecar.py).

    python -m docindex.index_copy SRC DST [--immutable]

What KubeRay's copy steps run (k8s/rayservice.yaml's copy-index init container, the RayJob's
publish in k8s/rayjob-ingest.yaml; docs/operations.md). One attempt:

1. an online backup of SRC's SQLite file into `DST.partial` (a consistent snapshot of one
   index version, whatever writes SRC meanwhile); `--immutable` opens SRC without locking, for
   a file on a network file system that is only ever replaced by a rename, never written;
2. the search files that version's `meta` token names (manifest, arrays folder, ANN files),
   copied into `DST.search/`, each under a `.partial` name then renamed, the manifest last;
   files of that name already there are the same files (names are unique per version) and are
   kept;
3. a check that a reader of `DST.partial` would use them (ann_sidecar.open_for: version, chunk
   ids' digests, shapes), then `DST.partial` renamed to DST: the SQLite file appears last, so a
   reader of DST never sees a version whose files are not beside it;
4. files of earlier versions in `DST.search/` deleted (ann_sidecar.prune).

If SRC's files of that version are gone before they are copied (a newer version was published
and the old one pruned meanwhile), the attempt is repeated from a fresh backup. An index below
the threshold has no search files: only the SQLite file is copied (and DST's old files go).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import sys
import time
import urllib.parse
from pathlib import Path

from . import ann_sidecar, store
from .embedder import MODEL_DIM
from .snapshot import read_ids

ATTEMPTS = 5


class CopyError(Exception):
    """The copy could not be made (one line for the operator)."""


def copy_index(src: Path, dst: Path, *, immutable: bool = False, attempts: int = ATTEMPTS) -> str | None:
    """Copy SRC to DST with its search files; the token of the files copied (None: SRC has none)."""
    if not src.is_file():
        raise CopyError(f"no index file at {src}")
    if src.resolve() == dst.resolve():
        raise CopyError(f"{src} and {dst} are the same file")
    dst.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, attempts + 1):
        try:
            return _attempt(src, dst, immutable)
        except FileNotFoundError as exc:
            if attempt == attempts:
                raise CopyError(f"{src}'s search files kept changing during {attempts} attempts ({exc})") from None
            time.sleep(min(2.0, 0.2 * attempt))
    raise AssertionError("unreachable")


def _attempt(src: Path, dst: Path, immutable: bool) -> str | None:
    partial = dst.with_name(dst.name + ".partial")
    for leftover in (partial, Path(f"{partial}-wal"), Path(f"{partial}-shm")):
        leftover.unlink(missing_ok=True)
    mode = "immutable=1" if immutable else "mode=ro"
    source = sqlite3.connect(f"file:{urllib.parse.quote(str(src.resolve()))}?{mode}", uri=True)
    target = sqlite3.connect(partial)
    try:
        source.backup(target)
        meta = store.read_meta(target)
        token = ann_sidecar.read_token(target)
        version = int(meta.get("index_version", 0))
        if token:
            _copy_files(ann_sidecar.folder(src), ann_sidecar.folder(dst), token)
            _check(target, dst, version, int(meta.get("embed_dim", MODEL_DIM)), token)
    except BaseException as exc:
        target.close()
        partial.unlink(missing_ok=True)
        if isinstance(exc, sqlite3.DatabaseError):
            raise CopyError(f"{src}: not a readable docindex index ({exc})") from None
        raise
    finally:
        target.close()
        source.close()
    os.replace(partial, dst)
    ann_sidecar.prune(dst, token, version)
    return token


def _copy_files(source: Path, target: Path, token: str) -> None:
    """The files `token`'s manifest names, then the manifest; FileNotFoundError if one is gone."""
    manifest_name = f"{token}.json"
    manifest = json.loads((source / manifest_name).read_text())
    target.mkdir(exist_ok=True)
    names = [manifest["arrays"], *(entry["file"] for entry in manifest["collections"].values()), manifest_name]
    for name in dict.fromkeys(names):
        here, there = source / name, target / name
        if there.exists():
            continue
        partial = there.with_name(there.name + ".partial")
        if partial.is_dir():
            shutil.rmtree(partial)
        if here.is_dir():
            shutil.copytree(here, partial)
        else:
            shutil.copyfile(here, partial)
        os.replace(partial, there)


def _check(conn: sqlite3.Connection, dst: Path, version: int, dim: int, token: str) -> None:
    """What a reader of the copy does with the files beside DST (read-only; logs why on a mismatch)."""
    ids, slices = read_ids(conn)
    if ann_sidecar.open_for(conn, dst, version, ids, slices, dim).token != token:
        raise CopyError(f"the search files copied beside {dst} do not match its rows (see the warning above)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m docindex.index_copy", description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("dst", type=Path)
    parser.add_argument("--immutable", action="store_true",
                        help="open SRC without locking (a file only ever replaced by a rename)")
    args = parser.parse_args(argv)
    try:
        token = copy_index(args.src, args.dst, immutable=args.immutable)
    except (CopyError, OSError) as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    print(f"copied {args.src} to {args.dst}" + (f" with its search files {token}" if token else " (no search files)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

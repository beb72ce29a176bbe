"""Files beside the SQLite index that belong to one index version: ANN graphs and BM25 postings.

An index of `min_chunks()` chunks or more gets a folder `<db>.search/`:

    <token>.json               the manifest: index version, chunk ids' digests, files
    <token>.arrays/            per row: the unit vectors and lexical.Lexical's BM25 postings, with
                               each term's postings by impact (lexical_topk.py; .npy, memory-mapped
                               at open: opening reads none of them), and FTS5's BM25 of the
                               common phrases (phrase_postings.py)
    <name-hash>-<token>.faiss    one ANN graph per collection of min_chunks() or more

The writer (ann_build.py) writes them inside the ingest transaction, before
COMMIT, and records the manifest's token in the `meta` table in that same
transaction. A reader takes the token from the rows it reads (one read
transaction), so it only ever opens the files written for exactly those rows:
a crashed ingest leaves files no token names; a writer that knows nothing of
these files (an older docindex) leaves a token whose manifest names another
index version. The reader still checks the manifest against what it loaded
(version, the digest of all chunk ids and of each collection's) and on any
mismatch or unreadable file uses none of it: the exact scan and BM25
postings read from SQLite, as below the threshold (slower to open, same
results). The next ingest writes a fresh set.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import ann, lexical, lexical_topk, phrase_postings

log = logging.getLogger(__name__)

META_KEY = "search_files"
FORMAT = 1
_ARRAYS = ("offsets", "rows", "tf", "norm", "chunk_ids")
_BY_IMPACT = "by_impact"
_IMPACTS = "impacts"
_VERSIONED = re.compile(r"(?:^|-)v(\d+)-[0-9a-f]+(?:\.json|\.arrays|\.faiss)(?:\.partial)?$")


def folder(db: Path) -> Path:
    return db.with_name(db.name + ".search")


def digest(ids: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest()


@dataclass(frozen=True)
class Opened:
    """What a reader may use for one index version (empty: exact scan, postings from SQLite)."""

    postings: lexical.Lexical | None = None
    anns: dict[str, ann.Ann] = field(default_factory=dict)
    matrix: np.ndarray | None = None        # (rows, dim) float32 unit vectors, memory-mapped
    token: str | None = None


def read_token(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (META_KEY,)).fetchone()
    return row[0] if row else None


def open_for(conn: sqlite3.Connection, db: Path | None, version: int, ids: np.ndarray,
             slices: dict[str, tuple[int, int]], dim: int) -> Opened:
    """Inside the reader's transaction: the files written for these rows, or none (see the module doc)."""
    token = read_token(conn) if db is not None else None
    if db is None or not token:
        return Opened()
    where = folder(db)
    try:
        manifest = json.loads((where / f"{token}.json").read_text())
        if manifest.get("format") != FORMAT or manifest.get("token") != token:
            raise ValueError("the manifest is not this token's")
        if manifest.get("index_version") != version:
            raise ValueError(f"written for index version {manifest.get('index_version')}, not {version}")
        if manifest.get("ids_sha256") != digest(ids):
            raise ValueError("its chunk ids are not the index's")
        anns = {}
        for name, entry in manifest["collections"].items():
            start, end = slices.get(name, (0, 0))
            if end - start != entry["count"] or digest(ids[start:end]) != entry["ids_sha256"]:
                raise ValueError(f"collection {name!r} has other chunks than its ANN file")
            # the search breadth is this code's (ann.ef_for), not the one recorded at build time
            anns[name] = ann.Ann(where / entry["file"], ids=ids[start:end], dim=dim)
        postings = load_postings(where / manifest["arrays"], ids, int(manifest["n_docs"]))
        matrix = np.load(where / manifest["arrays"] / "vectors.npy", mmap_mode="r", allow_pickle=False)
        if matrix.shape != (len(ids), dim) or matrix.dtype != np.float32:
            raise ValueError(f"vectors of shape {matrix.shape}, not ({len(ids)}, {dim})")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("%s: search files %s not used (%s): exact scan, vectors and BM25 postings from SQLite",
                    db, token, exc)
        return Opened()
    return Opened(postings, anns, matrix, token)


# ---------------------------------------------------------------- per-row arrays on disk

def save_arrays(postings: lexical.Lexical, matrix: np.ndarray, path: Path,
                phrases: phrase_postings.PhrasePostings = phrase_postings.EMPTY) -> None:
    """The vectors, lexical.Lexical's arrays and the common phrases' scores as files in the folder
    `path` (written whole, then renamed)."""
    partial = path.with_name(path.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    np.save(partial / "vectors.npy", np.ascontiguousarray(matrix, dtype=np.float32))
    terms = sorted(postings.term_index, key=postings.term_index.__getitem__)
    (partial / "terms.json").write_text(json.dumps(terms, ensure_ascii=False))
    for name in _ARRAYS:
        np.save(partial / f"{name}.npy", np.ascontiguousarray(getattr(postings, name)))
    impacts = postings.impacts if postings.impacts is not None else lexical_topk.posting_impacts(postings)
    by_impact = postings.by_impact if postings.by_impact is not None else lexical_topk.impact_order(postings, impacts)
    np.save(partial / f"{_BY_IMPACT}.npy", np.ascontiguousarray(by_impact, dtype=np.int32))
    np.save(partial / f"{_IMPACTS}.npy", np.ascontiguousarray(impacts, dtype=np.float64))
    phrase_postings.save(phrases, partial)
    os.replace(partial, path)


def load_postings(path: Path, ids: np.ndarray, n_docs: int) -> lexical.Lexical:
    """Memory-mapped: opening reads the term list, not the postings."""
    terms = json.loads((path / "terms.json").read_text())
    arrays = {name: np.load(path / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _ARRAYS}
    if len(arrays["offsets"]) != len(terms) + 1 or len(arrays["norm"]) != len(ids):
        raise ValueError("the postings do not fit the index's rows")
    if not np.array_equal(arrays["chunk_ids"], ids):
        raise ValueError("the postings' rows are not the index's")
    # The postings by impact (lexical_topk.py); files written before it have none: whole lists are walked.
    by_impact = None
    if (path / f"{_BY_IMPACT}.npy").is_file():
        by_impact = np.load(path / f"{_BY_IMPACT}.npy", mmap_mode="r", allow_pickle=False)
        if by_impact.shape != arrays["rows"].shape:
            raise ValueError("the postings' impact order does not fit them")
    # Each posting's BM25 contribution (lexical_topk.posting_impacts); files written before stop 50 have none.
    impacts = None
    if (path / f"{_IMPACTS}.npy").is_file():
        impacts = np.load(path / f"{_IMPACTS}.npy", mmap_mode="r", allow_pickle=False)
        if impacts.shape != arrays["rows"].shape:
            raise ValueError("the postings' impacts do not fit them")
    return lexical.Lexical({t: i for i, t in enumerate(terms)}, arrays["offsets"], arrays["rows"], arrays["tf"],
                           arrays["norm"], n_docs, ids, by_impact, phrase_postings.load(path, len(ids)), impacts)


# ---------------------------------------------------------------- cleaning up

def prune(db: Path, keep: str | None, version: int) -> None:
    """After a commit of `version`: delete the files of earlier versions that `keep`'s manifest does not name.
    Files of later versions (an ingest that began after this commit) are left alone."""
    where = folder(db)
    if not where.is_dir():
        return
    named: set[str] = set()
    if keep:
        try:
            manifest = json.loads((where / f"{keep}.json").read_text())
            named = {f"{keep}.json", manifest["arrays"], *(e["file"] for e in manifest["collections"].values())}
        except (OSError, ValueError, KeyError, TypeError):
            return      # cannot tell what is in use: delete nothing
    for entry in where.iterdir():
        match = _VERSIONED.search(entry.name)
        if entry.name in named or match is None or int(match.group(1)) > version:
            continue
        if int(match.group(1)) == version and keep is not None and entry.name.startswith(keep):
            continue
        try:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        except OSError as exc:
            log.warning("%s: could not delete %s (%s)", db, entry, exc)

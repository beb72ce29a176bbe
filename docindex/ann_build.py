"""Writing the search files of a new index version (layout and reading: ann_sidecar.py).

Called by the writer inside its transaction, after the rows and the version
bump, before COMMIT (`write`), and after the COMMIT (`prune`). The rows are
read back through Snapshot.load, the reader's own code, so the files hold
exactly what a reader of this version loads: same rows, same order, same
normalised vectors, same postings.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
from pathlib import Path
from typing import Any

from . import ann, ann_sidecar, lexical, phrase_postings, store
from .embedder import MODEL_DIM
from .snapshot import Snapshot


def write(conn: sqlite3.Connection, db: Path, version: int, *, changed: str | None = None,
          min_chunks: int | None = None) -> str | None:
    """Write this version's files and record their token in `meta` (same transaction);
    None (and no token) when the index has fewer than `min_chunks` (default ann.min_chunks()).
    `changed`: the collection whose rows this transaction rewrote (its ANN file is rebuilt;
    other collections keep theirs when the previous version's manifest matches them)."""
    threshold = ann.min_chunks() if min_chunks is None else min_chunks
    total = conn.execute("SELECT count(*) FROM chunks c JOIN vectors v ON v.chunk_id = c.id").fetchone()[0]
    previous = _previous(conn, db, version)
    if total < threshold:
        conn.execute("DELETE FROM meta WHERE key = ?", (ann_sidecar.META_KEY,))
        return None
    meta = store.read_meta(conn)
    lexical.prepare_connection(conn)     # temp tables only: nothing is written to the index file
    snapshot = Snapshot.load(conn, version, int(meta.get("embed_dim", MODEL_DIM)))
    token = f"v{version}-{secrets.token_hex(6)}"
    where = ann_sidecar.folder(db)
    where.mkdir(exist_ok=True)
    collections: dict[str, dict[str, Any]] = {}
    for name, (start, end) in sorted(snapshot.slices.items()):
        if end - start < threshold:
            continue
        ids = snapshot.ids[start:end]
        entry: dict[str, Any] = {"count": end - start, "ids_sha256": ann_sidecar.digest(ids)}
        old = previous.get(name)
        if name != changed and old is not None and old.get("ids_sha256") == entry["ids_sha256"] \
                and (where / old["file"]).is_file():
            collections[name] = old
            continue
        entry["file"] = f"{hashlib.sha256(name.encode()).hexdigest()[:12]}-{token}{ann.SUFFIX}"
        ann.build(ids, snapshot.matrix[start:end], where / entry["file"], threads=_threads())
        collections[name] = entry
    arrays = f"{token}.arrays"
    tokenizer = lexical.QueryTokenizer()
    phrases = phrase_postings.build(conn, lambda terms: tokenizer.tokens(conn, terms),
                                    lambda token: len(snapshot.lexical.postings(token)[0]), snapshot.rows_of)
    ann_sidecar.save_arrays(snapshot.lexical, snapshot.matrix, where / arrays, phrases)
    manifest = {"format": ann_sidecar.FORMAT, "token": token, "index_version": version,
                "ids_sha256": ann_sidecar.digest(snapshot.ids), "n_docs": snapshot.lexical.n_docs,
                "ef_search": ann.EF_SEARCH, "arrays": arrays, "collections": collections}
    partial = where / f"{token}.json.partial"
    partial.write_text(json.dumps(manifest, indent=1, ensure_ascii=False))
    os.replace(partial, where / f"{token}.json")
    conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                 (ann_sidecar.META_KEY, token))
    return token


def prune(db: Path, token: str | None, version: int) -> None:
    """After the COMMIT: earlier versions' files that this version does not use go."""
    ann_sidecar.prune(db, token, version)


def _previous(conn: sqlite3.Connection, db: Path, version: int) -> dict[str, dict[str, Any]]:
    """The collections of the previous version's manifest, if it was written for version - 1."""
    token = ann_sidecar.read_token(conn)
    if not token:
        return {}
    try:
        manifest = json.loads((ann_sidecar.folder(db) / f"{token}.json").read_text())
        if manifest.get("index_version") != version - 1:
            return {}
        return dict(manifest["collections"])
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def drop_collection(path: Path, collection: str, *, dry_run: bool = False) -> store.Dropped:
    """store.drop_collection, with the new version's search files written in its transaction."""
    tokens: list[str | None] = []
    dropped = store.drop_collection(path, collection, dry_run=dry_run,
                                    before_commit=lambda conn, version: tokens.append(write(conn, path, version)))
    if tokens and dropped.index_version is not None:
        prune(path, tokens[0], dropped.index_version)
    return dropped

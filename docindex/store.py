"""The SQLite file: schema, opening with checks, and the few writes ingest makes.

One file in WAL mode, so readers (the CLI, MCP servers) keep reading the last
committed index while an ingest writes the next one in a single transaction.

    meta       key → value: format, schema_version, embed_model, embed_dim, index_version,
               and `base_url:<collection>` for a collection ingested with --base-url (links.py)
    documents  one row per (collection, source): sha256, size, mtime_ns, title, metadata
    chunks     heading path, anchor, ordinal, text; FTS rowid = chunk id
    vectors    chunk id → float32 embedding (unit length)
    quote_vectors  chunk id → its quotable sentences' vectors, one blob (quotable.pack); added
               after schema 1 shipped, so an older file gains the table with the first chunks
               an ingest writes, and a reader treats a missing table or row as "none stored"
    chunks_fts FTS5 over heading path + text, CJK pre-segmented (see textsearch.py)
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import CollectionNotFound, EmbedderMismatch, NotAnIndex, SchemaMismatch, StoreError

FORMAT = "docindex"
SCHEMA_VERSION = 1
# FTS5's tokenizer for chunk text; docindex/lexical.py tokenizes queries with the same one.
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2"
BUSY_TIMEOUT_S = 30.0

QUOTE_TABLE = "CREATE TABLE IF NOT EXISTS quote_vectors (chunk_id INTEGER PRIMARY KEY, data BLOB NOT NULL)"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    id          INTEGER PRIMARY KEY,
    collection  TEXT NOT NULL,
    source      TEXT NOT NULL,      -- relative to the ingest root, '/'-separated
    path        TEXT NOT NULL,      -- absolute path at ingest time
    sha256      TEXT NOT NULL,
    size        INTEGER NOT NULL,
    mtime_ns    INTEGER NOT NULL,   -- with size: the no-hash fast path for unchanged files
    title       TEXT NOT NULL,
    metadata    TEXT NOT NULL DEFAULT '{}',
    ingested_at REAL NOT NULL,
    UNIQUE (collection, source)
);
CREATE TABLE chunks (
    id           INTEGER PRIMARY KEY,
    doc_id       INTEGER NOT NULL REFERENCES documents(id),
    collection   TEXT NOT NULL,
    ordinal      INTEGER NOT NULL,
    level        INTEGER NOT NULL,
    anchor       TEXT NOT NULL,
    heading_path TEXT NOT NULL,     -- JSON array
    text         TEXT NOT NULL
);
CREATE INDEX chunks_by_doc ON chunks(doc_id, ordinal);
CREATE INDEX chunks_by_collection ON chunks(collection, id);
CREATE TABLE vectors (chunk_id INTEGER PRIMARY KEY, embedding BLOB NOT NULL);
""" + QUOTE_TABLE + """;
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    body, collection UNINDEXED, tokenize = '""" + FTS_TOKENIZE + """'
);
"""


def connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable from any thread."""
    conn = sqlite3.connect(
        str(path), isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S
    )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    return conn


def open_existing(path: Path) -> tuple[sqlite3.Connection, dict[str, str]]:
    """Open an index for reading; raises StoreError, NotAnIndex or SchemaMismatch."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(f"{path}: no such index file (build one with `docindex ingest`)")
    conn = connect(path)
    try:
        meta = _checked_meta(conn, path)
    except Exception:
        conn.close()
        raise
    return conn, meta


def open_for_ingest(path: Path) -> tuple[sqlite3.Connection, dict[str, str]]:
    """Open an index for writing, creating it (schema committed alone) if new.

    A file that exists but is not ours is never modified.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise StoreError(f"{path}: not a file")
    if path.parent and not path.parent.exists():
        raise StoreError(f"{path.parent}: no such directory")
    conn = connect(path)
    try:
        if _is_blank_database(conn, path):
            _create_schema(conn)
        meta = _checked_meta(conn, path)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")   # WAL + NORMAL: durable at checkpoints, never corrupt
    except Exception:
        conn.close()
        raise
    return conn, meta


def _is_blank_database(conn: sqlite3.Connection, path: Path) -> bool:
    try:
        count: int = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        return count == 0
    except sqlite3.DatabaseError:
        raise NotAnIndex(f"{path}: not a docindex file (not an SQLite database)") from None


def _create_schema(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN IMMEDIATE")
    try:
        if conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
            conn.execute("ROLLBACK")      # someone else created it meanwhile
            return
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany(
            "INSERT INTO meta(key, value) VALUES (?, ?)",
            [("format", FORMAT), ("schema_version", str(SCHEMA_VERSION)),
             ("index_version", "0"), ("created_at", str(time.time()))],
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _checked_meta(conn: sqlite3.Connection, path: Path) -> dict[str, str]:
    try:
        rows = conn.execute("SELECT key, value FROM meta").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            raise NotAnIndex(f"{path}: not a docindex file (an SQLite database without its tables)") from None
        raise StoreError(f"{path}: cannot read the index ({exc})") from None
    except sqlite3.DatabaseError as exc:
        raise NotAnIndex(f"{path}: not a docindex file ({exc})") from None
    meta = dict(rows)
    if meta.get("format") != FORMAT:
        raise NotAnIndex(f"{path}: not a docindex file (an SQLite database of another program)")
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        raise NotAnIndex(f"{path}: not a docindex file (no schema version)") from None
    if version > SCHEMA_VERSION:
        raise SchemaMismatch(
            f"{path}: written by a newer docindex (schema {version}; this one reads {SCHEMA_VERSION}): upgrade docindex"
        )
    if version < SCHEMA_VERSION:
        raise SchemaMismatch(
            f"{path}: written by an older docindex (schema {version}; this one reads {SCHEMA_VERSION}): "
            "rebuild it with `docindex ingest` into a new file"
        )
    return meta


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT key, value FROM meta").fetchall())


_UPSERT_META = "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"
BASE_URL_KEY = "base_url:"     # + collection name; a key, not a column, so older indexes read unchanged
READING_KEY = "reading_version:"   # + collection name: the reading rules its chunks were made by (blocks.py)


def reading_version(meta: dict[str, str], collection: str) -> int | None:
    """The reading rules' version the collection was ingested with; None: before they were recorded."""
    value = meta.get(READING_KEY + collection)
    return int(value) if value is not None and value.isdigit() else None


def set_reading_version(conn: sqlite3.Connection, collection: str, version: int) -> None:
    conn.execute(_UPSERT_META, (READING_KEY + collection, str(version)))


def base_url(meta: dict[str, str], collection: str) -> str | None:
    """The collection's stored base URL (links.py), from a `meta` read."""
    return meta.get(BASE_URL_KEY + collection)


def read_base_url(conn: sqlite3.Connection, collection: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (BASE_URL_KEY + collection,)).fetchone()
    return None if row is None else str(row[0])


def check_embedder(meta: dict[str, str], name: str, dim: int, path: Path) -> None:
    """Refuse to mix vectors of two models in one index."""
    recorded = meta.get("embed_model")
    if recorded is None:
        return
    if recorded != name or int(meta.get("embed_dim", dim)) != dim:
        raise EmbedderMismatch(
            f"{path}: built with embedding model {recorded!r}, not {name!r}: "
            "use the same model or build a new index file"
        )


def has_quote_vectors(conn: sqlite3.Connection) -> bool:
    """Whether the file has the quote_vectors table (an index older than it has not)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'quote_vectors'").fetchone() \
        is not None


def read_quote_vectors(conn: sqlite3.Connection, chunk_ids: Sequence[int]) -> dict[int, bytes]:
    """chunk id → its stored quote-vector blob, for those of `chunk_ids` that have one."""
    if not chunk_ids or not has_quote_vectors(conn):
        return {}
    marks = ",".join("?" * len(chunk_ids))
    return {int(i): bytes(b) for i, b in conn.execute(
        f"SELECT chunk_id, data FROM quote_vectors WHERE chunk_id IN ({marks})", [int(i) for i in chunk_ids])}


# ---------------------------------------------------------------- writes (inside the ingest transaction)

def record_embedder(conn: sqlite3.Connection, name: str, dim: int) -> None:
    conn.executemany(_UPSERT_META, [("embed_model", name), ("embed_dim", str(dim))])


def bump_index_version(conn: sqlite3.Connection) -> int:
    conn.execute(
        "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'index_version'"
    )
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('updated_at', ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (str(time.time()),)
    )
    return int(conn.execute("SELECT value FROM meta WHERE key = 'index_version'").fetchone()[0])


def set_base_url(conn: sqlite3.Connection, collection: str, url: str) -> bool:
    """Store the collection's base URL (already checked by links.check_base_url); True when it changed."""
    if read_base_url(conn, collection) == url:
        return False
    conn.execute(_UPSERT_META, (BASE_URL_KEY + collection, url))
    return True


def delete_chunks(conn: sqlite3.Connection, doc_id: int) -> None:
    conn.execute("DELETE FROM chunks_fts WHERE rowid IN (SELECT id FROM chunks WHERE doc_id = ?)", (doc_id,))
    conn.execute("DELETE FROM vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE doc_id = ?)", (doc_id,))
    if has_quote_vectors(conn):
        conn.execute("DELETE FROM quote_vectors WHERE chunk_id IN (SELECT id FROM chunks WHERE doc_id = ?)", (doc_id,))
    conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))


def chunk_texts(conn: sqlite3.Connection, doc_ids: list[int]) -> Iterator[str]:
    """The chunk texts of `doc_ids`, in batches (SQLite bounds a statement's parameters)."""
    for at in range(0, len(doc_ids), 500):
        batch = doc_ids[at:at + 500]
        marks = ",".join("?" * len(batch))
        for (text,) in conn.execute(f"SELECT text FROM chunks WHERE doc_id IN ({marks})", batch):
            yield text


def delete_document(conn: sqlite3.Connection, doc_id: int) -> None:
    delete_chunks(conn, doc_id)
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


def update_document(conn: sqlite3.Connection, doc_id: int, *, source: str, path: str, sha256: str,
                    size: int, mtime_ns: int, title: str, metadata: dict[str, Any]) -> None:
    conn.execute(
        "UPDATE documents SET source = ?, path = ?, sha256 = ?, size = ?, mtime_ns = ?, title = ?, "
        "metadata = ?, ingested_at = ? WHERE id = ?",
        (source, path, sha256, size, mtime_ns, title, json.dumps(metadata, ensure_ascii=False), time.time(),
         doc_id),
    )


def insert_document(conn: sqlite3.Connection, *, collection: str, source: str, path: str,
                    sha256: str, size: int, mtime_ns: int, title: str, metadata: dict[str, Any]) -> int:
    cursor = conn.execute(
        "INSERT INTO documents(collection, source, path, sha256, size, mtime_ns, title, metadata, ingested_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (collection, source, path, sha256, size, mtime_ns, title, json.dumps(metadata, ensure_ascii=False),
         time.time()),
    )
    rowid = cursor.lastrowid
    assert rowid is not None    # an INSERT into a rowid table always sets it
    return int(rowid)


def update_stat(conn: sqlite3.Connection, doc_id: int, size: int, mtime_ns: int, path: str) -> None:
    conn.execute("UPDATE documents SET size = ?, mtime_ns = ?, path = ? WHERE id = ?", (size, mtime_ns, path, doc_id))


def insert_chunks(conn: sqlite3.Connection, doc_id: int, collection: str,
                  rows: Iterable[tuple[int, int, str, tuple[str, ...], str, str]],
                  vectors: np.ndarray, quotes: Sequence[bytes | None] | None = None) -> int:
    """rows: (ordinal, level, anchor, heading_path, text, fts_text), aligned with `vectors`
    and with `quotes` (each chunk's quote-vector blob, quotable.pack; None: none stored)."""
    rows = list(rows)
    blobs = list(quotes) if quotes is not None else [None] * len(rows)
    if len(blobs) != len(rows):
        raise ValueError(f"{len(rows)} chunks but {len(blobs)} quote-vector blobs")
    if any(blobs):
        conn.execute(QUOTE_TABLE)      # an index made before the table existed gains it, in this transaction
    count = 0
    for (ordinal, level, anchor, heading_path, text, fts_text), vector, blob in zip(rows, vectors, blobs,
                                                                                   strict=True):
        cursor = conn.execute(
            "INSERT INTO chunks(doc_id, collection, ordinal, level, anchor, heading_path, text) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (doc_id, collection, ordinal, level, anchor, json.dumps(list(heading_path), ensure_ascii=False), text),
        )
        chunk_id = cursor.lastrowid
        conn.execute("INSERT INTO vectors(chunk_id, embedding) VALUES (?, ?)",
                     (chunk_id, np.ascontiguousarray(vector, dtype=np.float32).tobytes()))
        conn.execute("INSERT INTO chunks_fts(rowid, body, collection) VALUES (?, ?, ?)",
                     (chunk_id, fts_text, collection))
        if blob:
            conn.execute("INSERT INTO quote_vectors(chunk_id, data) VALUES (?, ?)", (chunk_id, blob))
        count += 1
    return count


# ---------------------------------------------------------------- dropping a collection

@dataclass(frozen=True)
class Dropped:
    collection: str
    documents: int
    chunks: int
    sources: list[str]
    index_version: int | None       # after the drop; None in a dry run


def drop_collection(path: Path, collection: str, *, dry_run: bool = False,
                    before_commit: Callable[[sqlite3.Connection, int], object] | None = None) -> Dropped:
    """Remove one collection in one transaction that also bumps the index version, so
    open readers (Index, the MCP servers) reload without it. A dry run only reads.

    Raises CollectionNotFound (naming the collections there are) for an unknown one.
    `before_commit(conn, new_version)` runs in the transaction (ann_build.drop_collection's search files).
    """
    conn, _meta = open_existing(path)
    try:
        conn.execute("BEGIN" if dry_run else "BEGIN IMMEDIATE")
        try:
            sources = [s for (s,) in conn.execute(
                "SELECT source FROM documents WHERE collection = ? ORDER BY source", (collection,))]
            if not sources:
                names = [n for (n,) in conn.execute("SELECT DISTINCT collection FROM documents ORDER BY 1")]
                known = ", ".join(names) if names else "none: the index is empty"
                raise CollectionNotFound(f"no collection {collection!r} in {path} (collections: {known})")
            chunks = conn.execute("SELECT count(*) FROM chunks WHERE collection = ?", (collection,)).fetchone()[0]
            version = None
            if not dry_run:
                ids = "SELECT id FROM chunks WHERE collection = ?"
                conn.execute(f"DELETE FROM chunks_fts WHERE rowid IN ({ids})", (collection,))
                conn.execute(f"DELETE FROM vectors WHERE chunk_id IN ({ids})", (collection,))
                if has_quote_vectors(conn):
                    conn.execute(f"DELETE FROM quote_vectors WHERE chunk_id IN ({ids})", (collection,))
                conn.execute("DELETE FROM chunks WHERE collection = ?", (collection,))
                conn.execute("DELETE FROM documents WHERE collection = ?", (collection,))
                conn.execute("DELETE FROM meta WHERE key = ?", (BASE_URL_KEY + collection,))
                version = bump_index_version(conn)
                if before_commit is not None:
                    before_commit(conn, version)
            conn.execute("ROLLBACK" if dry_run else "COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except sqlite3.OperationalError as exc:
        raise StoreError(f"{path}: cannot drop {collection!r} ({exc})") from None
    finally:
        conn.close()
    return Dropped(collection, len(sources), int(chunks), sources, version)


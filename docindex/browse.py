"""Browsing an index without its vectors: the SQL behind collections, documents and chunk listings.

`Index` (index.py) calls these under its lock, inside one `ReadTransaction`,
so a listing never mixes two versions of the index. Every function takes the
open connection and reads only documents and chunks.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from typing import Any

from . import store
from .errors import CollectionNotFound, DocumentNotFound, InputError
from .links import chunk_url
from .types import DocumentInfo, Section


class ReadTransaction:
    """BEGIN … COMMIT around reads (a consistent snapshot in WAL mode); re-entrant-safe."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.owner = False

    def __enter__(self) -> ReadTransaction:
        if not self.conn.in_transaction:
            self.conn.execute("BEGIN")
            self.owner = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self.owner:
            self.conn.execute("COMMIT")


def collection_message(collection: str, names: list[str]) -> str:
    known = ", ".join(names) if names else "none: the index is empty"
    return f"no collection {collection!r} in this index (collections: {known})"


def require_collection(conn: sqlite3.Connection, collection: str) -> None:
    """Raise CollectionNotFound (naming the collections there are) unless `collection` has a document."""
    exists = conn.execute("SELECT 1 FROM documents WHERE collection = ? LIMIT 1", (collection,)).fetchone()
    if not exists:
        names = [n for (n,) in conn.execute("SELECT DISTINCT collection FROM documents ORDER BY 1")]
        raise CollectionNotFound(collection_message(collection, names))


def collection_counts(conn: sqlite3.Connection) -> list[tuple[str, int, int]]:
    """(name, documents, chunks) of every collection, by name."""
    return conn.execute(
        "SELECT d.collection, count(DISTINCT d.id), count(c.id) FROM documents d "
        "LEFT JOIN chunks c ON c.doc_id = d.id GROUP BY d.collection ORDER BY d.collection").fetchall()


def document_info(conn: sqlite3.Connection, *, source: str | None, doc_id: int | None,
                  collection: str | None) -> DocumentInfo:
    """One document by source or id. Raises InputError, CollectionNotFound, DocumentNotFound."""
    if (source is None) == (doc_id is None):
        raise InputError("give exactly one of source or doc_id")
    if collection is not None:
        require_collection(conn, collection)
    sql = ("SELECT id, collection, source, title, sha256, metadata FROM documents WHERE "
           + ("source = ?" if source is not None else "id = ?"))
    params: list[Any] = [source if source is not None else doc_id]
    if collection is not None:
        sql += " AND collection = ?"
        params.append(collection)
    found = conn.execute(sql, params).fetchall()
    if not found:
        what = f"source {source!r}" if source is not None else f"doc_id {doc_id}"
        where = f" in collection {collection!r}" if collection else ""
        raise DocumentNotFound(f"no document with {what}{where}")
    if len(found) > 1:
        names = ", ".join(sorted(row[1] for row in found))
        raise InputError(f"source {source!r} is in several collections ({names}): name one")
    doc, coll, src, title, sha, metadata = found[0]
    sections = conn.execute(
        "SELECT anchor, heading_path, level, min(ordinal) FROM chunks WHERE doc_id = ? "
        "GROUP BY anchor ORDER BY min(ordinal)", (doc,)).fetchall()
    count = conn.execute("SELECT count(*) FROM chunks WHERE doc_id = ?", (doc,)).fetchone()[0]
    return DocumentInfo(
        doc_id=doc, collection=coll, source=src, title=title, sha256=sha, chunk_count=count,
        sections=tuple(Section(anchor, tuple(json.loads(path)), level, ordinal)
                       for anchor, path, level, ordinal in sections),
        metadata=json.loads(metadata),
    )


def collection_chunks(conn: sqlite3.Connection, collection: str) -> list[tuple[Any, ...]]:
    """Every chunk row of a collection, by source then ordinal:
    (chunk_id, doc_id, source, doc title, anchor, heading_path JSON, level, ordinal, text, metadata JSON)."""
    require_collection(conn, collection)
    return conn.execute(
        "SELECT c.id, c.doc_id, d.source, d.title, c.anchor, c.heading_path, c.level, c.ordinal, "
        "c.text, d.metadata FROM chunks c JOIN documents d ON d.id = c.doc_id "
        "WHERE c.collection = ? ORDER BY d.source, c.ordinal", (collection,)).fetchall()


def chunk_dicts(rows: list[tuple[Any, ...]], base_url: str | None) -> Iterator[dict[str, Any]]:
    """`collection_chunks` rows as the dicts `Index.iter_chunks` yields (fetch_docs reads them);
    `url` is the chunk's citation link (links.chunk_url) or None."""
    for chunk_id, doc_id, source, title, anchor, path, level, ordinal, text, metadata in rows:
        yield {"chunk_id": chunk_id, "doc_id": doc_id, "source": source, "doc_title": title,
               "anchor": anchor, "heading_path": tuple(json.loads(path)), "level": level,
               "ordinal": ordinal, "text": text, "url": chunk_url(base_url, source, anchor, metadata)}


def content_hash(conn: sqlite3.Connection, collection: str) -> str:
    """SHA-256 over the (source, sha256) pairs of a collection's documents, in source order, and
    its base URL when it has one (the links in its doc tree change with it)."""
    require_collection(conn, collection)
    rows = conn.execute("SELECT source, sha256 FROM documents WHERE collection = ? ORDER BY source", (collection,))
    digest = hashlib.sha256()
    for source, sha in rows:
        digest.update(f"{source}\0{sha}\n".encode())
    base_url = store.read_base_url(conn, collection)
    if base_url is not None:
        digest.update(f"base_url\0{base_url}\n".encode())
    return digest.hexdigest()

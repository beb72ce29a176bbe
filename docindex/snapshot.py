"""What search needs in memory for one index version: vectors, ids, BM25 postings.

Loaded inside the caller's read transaction (index.py), so a snapshot never
mixes two versions of the index; reloaded only when the version changes.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import ann, ann_sidecar, doclexical, lexical


@dataclass(frozen=True)
class Snapshot:
    """One index version: rows grouped by collection, ascending chunk id within."""

    version: int
    ids: np.ndarray                          # chunk ids, grouped by collection, ascending within
    doc_ids: np.ndarray                      # document id per row
    matrix: np.ndarray                       # (n, dim) float32, unit rows, aligned with ids
    slices: dict[str, tuple[int, int]]       # collection → [start, end) rows
    collections: frozenset[str]              # collections with documents (some may have no chunks)
    id_order: np.ndarray                     # argsort of ids: chunk id → row without a dict
    lexical: lexical.Lexical                 # BM25 postings by row
    fields: dict[str, lexical.Lexical] = field(default_factory=dict, compare=False)  # built on first use
    anns: dict[str, ann.Ann] = field(default_factory=dict, compare=False)   # collection → ANN (ann_sidecar.py)
    documents: list[doclexical.DocumentPostings] = field(default_factory=list, compare=False)  # first use

    def rows_of(self, chunk_ids: np.ndarray) -> np.ndarray:
        return rows_of(self.ids, self.id_order, chunk_ids)

    def field_postings(self, conn: sqlite3.Connection) -> lexical.Lexical:
        """BM25 postings of the chunks' fields (title, heading path, file path), built on first use."""
        if "fields" not in self.fields:
            self.fields["fields"] = lexical.load_fields(conn, self.ids, self.rows_of)
        return self.fields["fields"]

    def document_postings(self) -> doclexical.DocumentPostings:
        """Whole-document BM25 postings (summed from the chunks'), built on first use."""
        if not self.documents:
            self.documents.append(doclexical.DocumentPostings.build(self.lexical, self.doc_ids))
        return self.documents[0]

    @classmethod
    def load(cls, conn: sqlite3.Connection, version: int, dim: int, db: Path | None = None) -> "Snapshot":
        """`db`: the index file, whose search files (ann_sidecar.py) are used when they match; None: not used."""
        rows = conn.execute(
            "SELECT c.id, c.collection, c.doc_id FROM chunks c JOIN vectors v ON v.chunk_id = c.id "
            "ORDER BY c.collection, c.id").fetchall()
        ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        doc_ids = np.fromiter((row[2] for row in rows), dtype=np.int64, count=len(rows))
        slices: dict[str, tuple[int, int]] = {}
        for row_index, row in enumerate(rows):
            start, _ = slices.get(row[1], (row_index, row_index))
            slices[row[1]] = (start, row_index + 1)
        names = frozenset(name for (name,) in conn.execute("SELECT DISTINCT collection FROM documents"))
        id_order = np.argsort(ids, kind="stable")
        opened = ann_sidecar.open_for(conn, db, version, ids, slices, dim)
        matrix = opened.matrix if opened.matrix is not None else _read_matrix(conn, len(ids), dim)
        postings = opened.postings or lexical.Lexical.load(conn, ids, lambda wanted: rows_of(ids, id_order, wanted))
        return cls(version, ids, doc_ids, matrix, slices, names, id_order, postings, anns=opened.anns)


def _read_matrix(conn: sqlite3.Connection, n: int, dim: int) -> np.ndarray:
    """The vectors in Snapshot.load's row order, from SQLite (no search files)."""
    blobs = conn.execute("SELECT v.embedding FROM chunks c JOIN vectors v ON v.chunk_id = c.id "
                         "ORDER BY c.collection, c.id").fetchall()
    if len(blobs) != n:    # cannot happen inside one read transaction; guard anyway
        raise ValueError(f"{len(blobs)} vectors for {n} chunks")
    matrix = np.frombuffer(b"".join(blob for (blob,) in blobs), dtype=np.float32).reshape(n, dim)
    # Vectors are stored normalized; normalize again so a foreign writer cannot skew cosines.
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.ascontiguousarray(matrix / np.maximum(norms, 1e-12), dtype=np.float32)


def rows_of(ids: np.ndarray, id_order: np.ndarray, chunk_ids: np.ndarray) -> np.ndarray:
    """Rows of `chunk_ids` in `ids` (id_order = argsort(ids)); -1 for an id not there."""
    if not len(ids):
        return np.full(len(chunk_ids), -1, dtype=np.int64)
    sorted_ids = ids[id_order]
    positions = np.clip(np.searchsorted(sorted_ids, chunk_ids), 0, len(ids) - 1)
    return np.where(sorted_ids[positions] == chunk_ids, id_order[positions], -1)

"""What search needs in memory for one index version: vectors, ids, BM25 postings.

Loaded inside the caller's read transaction (index.py), so a snapshot never
mixes two versions of the index; reloaded only when the version changes.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from . import ann, ann_sidecar, doclexical, lexical, score_fusion
from .lexical import Lexical  # the field `lexical` hides the module in annotations in the class body


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
    lexical: Lexical                         # BM25 postings by row
    fields: dict[str, Lexical] = field(default_factory=dict, compare=False)  # built on first use
    anns: dict[str, ann.Ann] = field(default_factory=dict, compare=False)   # collection → ANN (ann_sidecar.py)
    documents: list[doclexical.DocumentPostings] = field(default_factory=list, compare=False)  # first use
    centroids: list[score_fusion.Centroids] = field(default_factory=list, compare=False)  # first use
    # duplicates.twin_finder's answers, kept for the snapshot's life: does a long document copy pages (its
    # first chunk looked up decides), and each chunk looked up → the page's chunk it copies, or None
    copies_pages: dict[int, bool] = field(default_factory=dict, compare=False)
    page_twins: dict[int, tuple[int, int] | None] = field(default_factory=dict, compare=False)
    holds_pages: dict[int, bool] = field(default_factory=dict, compare=False)   # doc → duplicates.TwinFinder.holds
    release_notes: dict[int, bool] = field(default_factory=dict, compare=False)   # doc → release_notes.py's answer

    def rows_of(self, chunk_ids: np.ndarray) -> np.ndarray:
        return rows_of(self.ids, self.id_order, chunk_ids, self.sorted_ids)

    @cached_property
    def sorted_ids(self) -> np.ndarray:
        """ids in ascending order, kept: gathering them per search was ~2 ms at 1M chunks."""
        ordered: np.ndarray = self.ids[self.id_order]
        return ordered

    def vectors_of(self, chunk_ids: list[int]) -> np.ndarray:
        """The chunks' unit vectors, in the order given."""
        vectors: np.ndarray = self.matrix[self.rows_of(np.asarray(chunk_ids, dtype=np.int64))]
        return vectors

    @cached_property
    def doc_sizes(self) -> dict[int, int]:
        """Chunks per document (duplicates.py: of two copies, the smaller document's is kept)."""
        docs, counts = np.unique(self.doc_ids, return_counts=True)
        return dict(zip(docs.tolist(), counts.tolist()))

    def field_postings(self, conn: sqlite3.Connection) -> Lexical:
        """BM25 postings of the chunks' fields (title, heading path, file path), built on first use."""
        if "fields" not in self.fields:
            self.fields["fields"] = lexical.load_fields(conn, self.ids, self.rows_of)
        return self.fields["fields"]

    def document_postings(self) -> doclexical.DocumentPostings:
        """Whole-document BM25 postings (summed from the chunks'), built on first use."""
        if not self.documents:
            self.documents.append(doclexical.DocumentPostings.build(self.lexical, self.doc_ids))
        return self.documents[0]

    def document_centroids(self) -> score_fusion.Centroids:
        """Documents' centroids (the normalized mean of their chunk vectors), each made on first need."""
        if not self.centroids:
            self.centroids.append(score_fusion.Centroids(self.matrix, self.doc_ids))
        return self.centroids[0]

    @classmethod
    def load(cls, conn: sqlite3.Connection, version: int, dim: int, db: Path | None = None) -> Snapshot:
        """`db`: the index file, whose search files (ann_sidecar.py) are used when they match; None: not used.

        With search files, the rows come from the chunks table's two indexes alone (a few bytes per
        chunk): the files hold the vectors and postings, and their manifest's digest of the chunk ids,
        written in the transaction that wrote these rows, vouches that every chunk has a vector.
        Without (or when they do not match), the rows are those joined to a vector, read with the
        vectors themselves."""
        opened, by_index = ann_sidecar.Opened(), None
        if db is not None and ann_sidecar.read_token(conn):
            by_index, slices = read_ids(conn)
            opened = ann_sidecar.open_for(conn, db, version, by_index, slices, dim)
        if by_index is not None and opened.token is not None:
            ids, doc_ids = by_index, _read_doc_ids(conn, by_index)
        else:
            ids, doc_ids, slices = _read_rows(conn)
            if by_index is not None and not np.array_equal(by_index, ids):    # a chunk without a vector
                opened = ann_sidecar.open_for(conn, db, version, ids, slices, dim)
        names = frozenset(name for (name,) in conn.execute("SELECT DISTINCT collection FROM documents"))
        id_order = np.argsort(ids, kind="stable")
        matrix = opened.matrix if opened.matrix is not None else _read_matrix(conn, len(ids), dim)
        postings = opened.postings or lexical.Lexical.load(conn, ids, lambda wanted: rows_of(ids, id_order, wanted))
        return cls(version, ids, doc_ids, matrix, slices, names, id_order, postings, anns=opened.anns)


# Rows are read one group_concat per collection, parsed by numpy in C: a Python tuple per chunk,
# and the join to each chunk's vector page, made opening linear in the table's bytes
# (benchmarks/snapshot_open.py). group_concat's order is not defined: each group is sorted here.

def _parse(joined: str, count: int, what: str) -> np.ndarray:
    values = np.fromstring(joined, dtype=np.int64, sep=" ")
    if len(values) != count:
        raise ValueError(f"{len(values)} {what} parsed for {count} chunks")
    return values


def read_ids(conn: sqlite3.Connection) -> tuple[np.ndarray, dict[str, tuple[int, int]]]:
    """Every chunk's id, grouped by collection (SQLite's order of the names), ascending within;
    each collection's [start, end) rows. Reads the index chunks_by_collection only."""
    parts: list[np.ndarray] = []
    slices: dict[str, tuple[int, int]] = {}
    start = 0
    for name, count, joined in conn.execute(
            "SELECT collection, count(*), group_concat(id, ' ') FROM chunks GROUP BY collection ORDER BY collection"):
        parts.append(np.sort(_parse(joined, count, "chunk ids")))
        slices[name] = (start, start + count)
        start += count
    return (np.concatenate(parts) if parts else np.zeros(0, np.int64)), slices


def _read_doc_ids(conn: sqlite3.Connection, ids: np.ndarray) -> np.ndarray:
    """The document id of each of `ids` (all of the table's chunks). Reads the index chunks_by_doc only."""
    count, joined_ids, joined_docs = conn.execute(
        "SELECT count(*), group_concat(id, ' '), group_concat(doc_id, ' ') FROM chunks").fetchone()
    if count != len(ids):
        raise ValueError(f"{count} chunks, {len(ids)} chunk ids")
    if not count:
        return np.zeros(0, np.int64)
    chunk_ids, docs = _parse(joined_ids, count, "chunk ids"), _parse(joined_docs, count, "document ids")
    order = np.argsort(chunk_ids)
    at = np.searchsorted(chunk_ids, ids, sorter=order)
    return np.asarray(docs[order[at]], dtype=np.int64)


def _read_rows(conn: sqlite3.Connection) -> tuple[np.ndarray, np.ndarray, dict[str, tuple[int, int]]]:
    """Like read_ids, for the chunks with a vector only, and their document ids."""
    ids_parts, doc_parts = [], []
    slices: dict[str, tuple[int, int]] = {}
    start = 0
    for name, count, joined_ids, joined_docs in conn.execute(
            "SELECT c.collection, count(*), group_concat(c.id, ' '), group_concat(c.doc_id, ' ') "
            "FROM chunks c JOIN vectors v ON v.chunk_id = c.id GROUP BY c.collection ORDER BY c.collection"):
        chunk_ids, docs = _parse(joined_ids, count, "chunk ids"), _parse(joined_docs, count, "document ids")
        order = np.argsort(chunk_ids, kind="stable")
        ids_parts.append(chunk_ids[order])
        doc_parts.append(docs[order])
        slices[name] = (start, start + count)
        start += count
    if not ids_parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), slices
    return np.concatenate(ids_parts), np.concatenate(doc_parts), slices


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


def rows_of(ids: np.ndarray, id_order: np.ndarray, chunk_ids: np.ndarray,
            sorted_ids: np.ndarray | None = None) -> np.ndarray:
    """Rows of `chunk_ids` in `ids` (id_order = argsort(ids); sorted_ids = ids[id_order] if known);
    -1 for an id not there."""
    if not len(ids):
        return np.full(len(chunk_ids), -1, dtype=np.int64)
    if sorted_ids is None:
        sorted_ids = ids[id_order]
    positions = np.clip(np.searchsorted(sorted_ids, chunk_ids), 0, len(ids) - 1)
    return np.where(sorted_ids[positions] == chunk_ids, id_order[positions], -1)

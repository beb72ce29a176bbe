"""Score fusion: a convex combination of normalized scores instead of RRF over ranks.

RRF keeps only each retriever's ranks: a chunk 0.01 of cosine behind the
dense leader counts as much less as one far behind it. Over the candidates
(the union of the dense and BM25 top lists) this fusion min-max normalizes,
per query, the cosine, the BM25 score (computed for every candidate, also
those outside the BM25 list) and, optionally, the cosine of the question with
the chunk's *document centroid* (the normalized mean of the document's chunk
vectors: how much the page as a whole is about the question), and orders by

    dense_share × cosine' + (1 − dense_share) × bm25' + centroid_weight × centroid'

Document centroids come from the vectors already loaded (no embedding, no
re-ingest), each made when a search first needs it and kept for the index
version (snapshot.py).
Measured on the dev halves in benchmarks/results/retrieval_levers.md (Round 3).
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .lexical import IDF_FLOOR, K1, Lexical


class Centroids:
    """Each document's unit centroid (the normalized sum of its chunks' vectors), made on first
    need: a search computes only its candidates' documents not seen before, so opening or
    changing a large index costs one argsort of the document ids, not a pass over every vector.
    Callers serialize (index.py holds its lock around search)."""

    def __init__(self, matrix: np.ndarray, doc_ids: np.ndarray) -> None:
        """`doc_ids[i]` is the document of `matrix[i]`."""
        self._matrix = matrix
        self._order = np.argsort(doc_ids, kind="stable")
        self._sorted = doc_ids[self._order]
        self._docs, self._starts = np.unique(self._sorted, return_index=True)
        self._vectors = np.zeros((len(self._docs), matrix.shape[1]), dtype=np.float32)   # untouched pages: free
        self._made = np.zeros(len(self._docs), dtype=bool)

    def cosines(self, doc_ids: np.ndarray, query: np.ndarray) -> np.ndarray:
        """cos(query, centroid) for each of `doc_ids` (0.0 for a document without chunks)."""
        at = np.minimum(np.searchsorted(self._docs, doc_ids), max(len(self._docs) - 1, 0))
        known = (self._docs[at] == doc_ids) if len(self._docs) else np.zeros(len(doc_ids), bool)
        for slot in np.unique(at[known & ~self._made[at]]).tolist():
            lo = self._starts[slot]
            hi = self._starts[slot + 1] if slot + 1 < len(self._starts) else len(self._sorted)
            total = np.asarray(self._matrix[self._order[lo:hi]], dtype=np.float64).sum(axis=0)
            self._vectors[slot] = total / max(float(np.linalg.norm(total)), 1e-12)
            self._made[slot] = True
        cosines: np.ndarray = np.where(known, (self._vectors[at] @ query).astype(np.float64), 0.0) \
            if len(self._docs) else np.zeros(len(doc_ids), dtype=np.float64)
        return cosines


def bm25_at(lex: Lexical, phrases: list[tuple[str, ...]], rows: np.ndarray,
            phrase_scores: Callable[[int], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """BM25 of each of `rows` (snapshot rows) as Lexical.scores computes it; 0.0 where no phrase matches.
    `phrase_scores(i)`: (rows, scores) of the multi-token phrase `phrases[i]`, from FTS5."""
    out = np.zeros(len(rows), dtype=np.float64)
    for i, tokens in enumerate(phrases):
        if not tokens:
            continue
        if len(tokens) > 1:
            found, values = phrase_scores(i)
            order = np.argsort(found, kind="stable")      # FTS5 returns them by chunk id
            out += _lookup(found[order], values[order].astype(np.float64), rows)
            continue
        posting_rows, tf = lex.postings(tokens[0])
        hits = len(posting_rows)
        if not hits:
            continue
        idf = math.log((lex.n_docs - hits + 0.5) / (hits + 0.5))
        idf = idf if idf > 0 else IDF_FLOOR
        tf_at = _lookup(posting_rows, tf, rows)      # postings ascend by row
        out += np.where(tf_at > 0, idf * tf_at * (K1 + 1) / (tf_at + lex.norm[rows]), 0.0)
    return out


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """values[keys == w] for each w of `wanted` (keys ascending, unique); 0.0 where absent."""
    out = np.zeros(len(wanted), dtype=np.float64)
    if not len(keys):
        return out
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    hit = keys[at] == wanted
    out[hit] = values[at[hit]]
    return out


def min_max(values: np.ndarray) -> np.ndarray:
    """Scaled to [0, 1] over the candidates; all equal: all 0."""
    low, high = float(values.min()), float(values.max())
    if high <= low:
        return np.zeros_like(values, dtype=np.float64)
    return (values - low) / (high - low)


def convex(chunk_ids: np.ndarray, cosine: np.ndarray, bm25: np.ndarray, centroid: np.ndarray | None, *,
           dense_share: float, bm25_share: float, centroid_weight: float,
           doc_bm25: np.ndarray | None = None, doc_bm25_weight: float = 0.0) -> dict[int, float]:
    """chunk id → fused score over the candidates (arrays aligned with `chunk_ids`); `doc_bm25`:
    the whole-document BM25 of each candidate's document (0.0 outside its ranked documents)."""
    if not len(chunk_ids):
        return {}
    score = dense_share * min_max(cosine) + bm25_share * min_max(bm25)
    if centroid is not None and centroid_weight:
        score = score + centroid_weight * min_max(centroid)
    if doc_bm25 is not None and doc_bm25_weight:
        score = score + doc_bm25_weight * min_max(doc_bm25)
    return dict(zip(chunk_ids.tolist(), score.tolist()))

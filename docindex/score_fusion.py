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
re-ingest), built once per index version on first use (snapshot.py).
Measured on the dev halves in benchmarks/results/retrieval_levers.md (Round 3).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .lexical import IDF_FLOOR, K1, Lexical

_BLOCK = 65_536   # rows summed at a time when building centroids (bounds the temporary copy)


@dataclass(frozen=True)
class Centroids:
    """One unit vector per document: the normalized sum of its chunks' vectors."""

    doc_ids: np.ndarray    # ascending document ids
    vectors: np.ndarray    # (documents, dim) float32, unit rows, aligned with doc_ids

    @classmethod
    def build(cls, matrix: np.ndarray, doc_ids: np.ndarray) -> "Centroids":
        """`doc_ids[i]` is the document of `matrix[i]`."""
        docs, index = np.unique(doc_ids, return_inverse=True)
        sums = np.zeros((len(docs), matrix.shape[1]), dtype=np.float64)
        order = np.argsort(index, kind="stable")
        for at in range(0, len(order), _BLOCK):
            rows = order[at:at + _BLOCK]
            owner = index[rows]
            starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]])
            sums[owner[starts]] += np.add.reduceat(np.asarray(matrix[rows], dtype=np.float64), starts, axis=0)
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        vectors = (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        return cls(docs.astype(np.int64), vectors)

    def cosines(self, doc_ids: np.ndarray, query: np.ndarray) -> np.ndarray:
        """cos(query, centroid) for each of `doc_ids` (every one must have chunks)."""
        at = np.searchsorted(self.doc_ids, doc_ids)
        cosines: np.ndarray = np.einsum("ij,j->i", self.vectors[at], query).astype(np.float64)
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
            out += _lookup(found, values.astype(np.float64), rows)
            continue
        posting_rows, tf = lex.postings(tokens[0])
        hits = len(posting_rows)
        if not hits:
            continue
        idf = math.log((lex.n_docs - hits + 0.5) / (hits + 0.5))
        idf = idf if idf > 0 else IDF_FLOOR
        tf_at = _lookup(posting_rows, tf.astype(np.float64), rows)
        out += np.where(tf_at > 0, idf * tf_at * (K1 + 1) / (tf_at + lex.norm[rows]), 0.0)
    return out


def _lookup(keys: np.ndarray, values: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """values[keys == w] for each w of `wanted` (keys ascending, unique); 0.0 where absent."""
    out = np.zeros(len(wanted), dtype=np.float64)
    if not len(keys):
        return out
    if np.any(keys[1:] < keys[:-1]):
        order = np.argsort(keys, kind="stable")
        keys, values = keys[order], values[order]
    at = np.clip(np.searchsorted(keys, wanted), 0, len(keys) - 1)
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
           dense_share: float, bm25_share: float, centroid_weight: float) -> dict[int, float]:
    """chunk id → fused score over the candidates (arrays aligned with `chunk_ids`)."""
    if not len(chunk_ids):
        return {}
    score = dense_share * min_max(cosine) + bm25_share * min_max(bm25)
    if centroid is not None and centroid_weight:
        score = score + centroid_weight * min_max(centroid)
    return dict(zip(chunk_ids.tolist(), score.tolist()))

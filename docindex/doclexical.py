"""Whole-document BM25, built from the chunks' postings: a page-level lexical signal.

Out of sample, plain FTS5 BM25 over whole pages is a strong baseline at
recall@5 (benchmarks/results/retrieval_oos_*): a page that uses the question's
words all over ranks high even when no single chunk holds them all. Search can
fuse that ranking in (ranking.Ranking.doc_bm25_weight): the documents are
ranked by BM25 over their whole text, and every candidate chunk of a ranked
document gains weight / (rrf_k + the document's rank); each ranked document
also brings its chunk closest to the query (cosine) into the candidates, so a
page found only this way can still be shown.

A document's postings are the sum of its chunks' (term frequencies and
lengths add; a chunk's heading path is in its text, overlap counted twice),
scored with FTS5's BM25 (lexical.py: k1 1.2, b 0.75, idf floor), N = the
documents of all collections, avgdl over them. Postings carry no positions,
so a term FTS5 splits into several tokens counts here as those tokens.
Built from the snapshot's chunk postings on the first search that needs it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .lexical import K1, B, Lexical


@dataclass(frozen=True)
class DocumentPostings:
    """BM25 postings by document row; document rows follow the chunk rows' order (grouped by collection)."""

    lexical: Lexical               # rows are document rows; `chunk_ids` holds document ids (ties rank by them)
    row_of_chunk_row: np.ndarray   # chunk row → document row

    @classmethod
    def build(cls, chunks: Lexical, doc_ids: np.ndarray) -> DocumentPostings:
        """From a snapshot's chunk postings and its document id per chunk row."""
        unique, first = np.unique(doc_ids, return_index=True)
        doc_order = np.argsort(first, kind="stable")      # documents in order of their first chunk row
        position = np.empty(len(doc_order), dtype=np.int64)
        position[doc_order] = np.arange(len(doc_order))
        row_of_chunk_row = position[np.searchsorted(unique, doc_ids)] if len(doc_ids) else np.zeros(0, np.int64)
        n_docs = len(unique)
        terms = len(chunks.offsets) - 1
        term_of = np.repeat(np.arange(terms, dtype=np.int64), np.diff(chunks.offsets))
        doc_rows = row_of_chunk_row[chunks.rows] if len(chunks.rows) else np.zeros(0, np.int64)
        tf = chunks.tf.astype(np.float64)
        lengths = np.bincount(doc_rows, weights=tf, minlength=n_docs)
        if len(term_of):
            key = term_of * max(n_docs, 1) + doc_rows
            order = np.argsort(key, kind="stable")
            key, tf = key[order], tf[order]
            starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
            summed = np.add.reduceat(tf, starts)
            key = key[starts]
            term_of, doc_rows = key // max(n_docs, 1), key % max(n_docs, 1)
        else:
            summed = tf
        offsets = np.searchsorted(term_of, np.arange(terms + 1)).astype(np.int64)
        avg = float(lengths.sum()) / n_docs if n_docs else 1.0
        norm = K1 * (1 - B + B * lengths / max(avg, 1e-9))
        postings = Lexical(chunks.term_index, offsets, doc_rows.astype(np.int32),
                                   summed.astype(np.float32), norm, n_docs, unique[doc_order])
        return cls(postings, row_of_chunk_row)

    def rank(self, phrases: list[tuple[str, ...]], start: int, end: int,
             limit: int) -> tuple[np.ndarray, np.ndarray]:
        """(document ids, BM25 scores) of the best `limit` documents among chunk rows [start, end), best first."""
        if end <= start:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        tokens: list[tuple[str, ...]] = [(token,) for token in dict.fromkeys(t for phrase in phrases for t in phrase)]
        first, last = self.row_of_chunk_row[start], self.row_of_chunk_row[end - 1] + 1
        rows, scores = self.lexical.scores(tokens, int(first), int(last), limit, _no_phrases)
        return self.lexical.chunk_ids[rows], scores


def _no_phrases(i: int) -> tuple[np.ndarray, np.ndarray]:   # every token is passed alone
    raise AssertionError("document postings score single tokens only")


def best_chunks(doc_ids: np.ndarray, chunk_ids: np.ndarray, matrix: np.ndarray, query: np.ndarray,
                wanted: np.ndarray) -> dict[int, int]:
    """For each document in `wanted`: its chunk with the highest cosine to `query` (ties: lowest
    chunk id). `doc_ids`, `chunk_ids`, `matrix` (unit rows) are aligned: one collection's rows.
    Only the wanted documents' rows are scored (the dense stage may not have scanned them all)."""
    rows = np.flatnonzero(np.isin(doc_ids, wanted))
    if not len(rows):
        return {}
    cosines = np.zeros(len(doc_ids), dtype=np.float64)
    cosines[rows] = np.einsum("ij,j->i", matrix[rows], query)   # numpy's own loop, as index.py
    rows = rows[np.lexsort((chunk_ids[rows], -cosines[rows], doc_ids[rows]))]
    docs = doc_ids[rows]
    firsts = rows[np.r_[True, docs[1:] != docs[:-1]]]
    return dict(zip(doc_ids[firsts].tolist(), chunk_ids[firsts].tolist()))

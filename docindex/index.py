"""Reading an index: hybrid search (dense + BM25, fused as ranking.py says) and browsing.

The vectors of all chunks live in one float32 matrix, rows grouped by
collection, loaded once and reloaded only when the index version changes
(another process committed an ingest). Each search reads in one SQLite
transaction (version check, reload if needed, BM25, chunk rows), so a search
never mixes two versions of the index. BM25 is scored in memory over FTS5's
own postings (lexical.py), loaded with the vectors. Browsing (collections,
documents, chunk listings) reads no vectors: its SQL is in browse.py.

Thread safety: one connection opened with check_same_thread=False, guarded by
a lock; the query embedding runs outside the lock (ONNX Runtime sessions are
thread-safe), so concurrent searches only serialize on the SQLite part.
"""
from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from . import browse, doclexical, duplicates, language, lexical, phrase_postings, quote_blobs, score_fusion, store
from .ann import exact_top_ids
from .ann import top_ids as ann_top_ids
from .chunking import PATH_SEPARATOR
from .embedder import MODEL_DIM, MODEL_NAME, Embedder
from .errors import CollectionNotFound, EmptyQuery, InputError
from .links import chunk_url
from .minilm import default_embedder
from .query_embedding import QueryEmbedder
from .ranking import DEFAULT_RANKING, Ranking, fuse_documents, rank, rrf
from .release_notes import asks_about_releases, demote, release_notes_docs
from .snapshot import Snapshot
from .textsearch import cjk_share, query_terms
from .types import CollectionInfo, DocumentInfo, Hit, StoredQuotes

RRF_K = DEFAULT_RANKING.rrf_k   # the RRF constant; all ranking knobs are in ranking.py
CANDIDATES = DEFAULT_RANKING.candidates   # per retriever, before fusion (a Ranking's own `candidates` decides)
MAX_K = 100
MAX_QUERY_TERMS = 64     # a pasted page must not become a 500-term OR query
_MODES = ("hybrid", "dense", "bm25")
# An English-only embedder (all-MiniLM-L6-v2 was trained on English pairs) ranks
# Chinese/Japanese/Korean text barely better than chance (salon-zh: dense Hit@1
# 0.375 vs BM25 1.0). For a mostly-CJK query with such an embedder, the dense
# ranking keeps only this weight in the fusion: it breaks ties and fills in,
# it does not outvote BM25. `cosine` is still reported as is.
CJK_DENSE_WEIGHT = 0.1
_ONE_RETRIEVER = Ranking()   # mode "dense" / "bm25": that retriever's order, nothing on top


class Index:
    """An open docindex file. Raises StoreError (missing), NotAnIndex, SchemaMismatch, EmbedderMismatch."""

    def __init__(self, db_path: str | Path, *, embedder: Embedder | None = None,
                 ranking: Ranking | None = None, exact: bool = False) -> None:
        """`exact`: always scan all vectors and read BM25 postings from SQLite (the reference),
        even where the index has ANN and postings files (ann_sidecar.py)."""
        self.path = Path(db_path)
        self._exact = exact
        self.ranking = ranking or DEFAULT_RANKING
        self._conn, self._meta = store.open_existing(self.path)
        self._lock = threading.RLock()
        self._tokenizer = lexical.QueryTokenizer()
        self._embedder = embedder
        self._snapshot: Snapshot | None = None
        self._data_version: int | None = None
        self._queries = QueryEmbedder()
        try:
            lexical.prepare_connection(self._conn)
            self._check_model(self._meta)
            self.refresh()
        except Exception:
            self.close()
            raise

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._queries.close()

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def version(self) -> int:
        with self._lock:
            return self._read_version()

    def refresh(self) -> bool:
        """Reload the vectors if another process committed an ingest; True if it did."""
        with self._lock, self._read_transaction():
            return self._ensure_current()

    # ------------------------------------------------------------ search

    def search(self, query: str, k: int = 5, collection: str | None = None,
               *, mode: str = "hybrid", timings: dict[str, float] | None = None,
               ranking: Ranking | None = None, sentences: bool = False) -> list[Hit]:
        """Top-k chunks by the fusion of dense and BM25 (`ranking`, else self.ranking: RRF by
        default; score fusion with document centroids is ranking.DOCUMENT_RANKING; ranking.py).

        Raises EmptyQuery (empty, or only stopwords/punctuation), CollectionNotFound,
        InputError (k out of range). Returns [] when the index (or collection) has no chunks.
        `mode` "dense" or "bm25" ranks by one retriever alone (for evaluations).
        `timings`, if given, receives milliseconds for embed (its own run; beside BM25 on a large
        index, query_embedding.py), wait (blocked on it and the dense search after BM25), dense (the
        dense search alone, beside BM25 on a large index), bm25, fuse, total. `sentences`: each hit also
        carries its best quotable sentence's cosine (Hit.sentence_cosine, from stored quote vectors).
        """
        if mode not in _MODES:
            raise InputError(f"mode must be one of {', '.join(_MODES)}, not {mode!r}")
        if not isinstance(query, str) or not query.strip():
            raise EmptyQuery("the query is empty")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            raise InputError(f"k must be an integer from 1 to {MAX_K}, not {k!r}")
        terms = query_terms(query)[:MAX_QUERY_TERMS]
        if not terms:
            raise EmptyQuery("the query has only stopwords or punctuation: ask with content words")
        clock = time.perf_counter
        t0 = clock()
        snapshot = self._snapshot      # its size decides; the search re-reads it below, under the lock
        embedding = self._queries.start(self._get_embedder(), query, len(snapshot.ids) if snapshot else 0)
        with self._lock, self._read_transaction():
            self._ensure_current()
            snapshot = self._snapshot
            assert snapshot is not None     # _ensure_current() loads one whenever there is none
            if collection is not None and collection not in snapshot.collections:
                raise CollectionNotFound(self._unknown_collection_message(collection, snapshot))
            start, end = snapshot.slices.get(collection, (0, 0)) if collection else (0, len(snapshot.ids))
            if end == start:
                return []
            t1 = clock()
            ranking = ranking or self.ranking
            bm25: dict[int, float] = {}
            fields: dict[int, float] = {}
            bm25_ids = fields_ids = snapshot.ids[:0]
            doc_bm25: dict[int, float] = {}
            doc_best: dict[int, int] = {}
            doc_cosine: dict[int, float] = {}
            dense = self._queries.follow(
                embedding, lambda vector: self._dense_ids(snapshot, collection, start, end, vector, ranking.candidates),
                len(snapshot.ids))
            phrases = self._tokenizer.tokens(self._conn, terms) if mode != "dense" else []
            unknown = tuple(terms[i] for i in snapshot.lexical.unseen(phrases, start, end))   # in no chunk of it
            phrase_scores = functools.cache(lambda i: self._phrase_scores(terms[i], snapshot, "chunks_fts", phrases[i]))
            if mode != "dense":
                rows, values = snapshot.lexical.scores(phrases, start, end, ranking.candidates, phrase_scores)
                bm25_ids = snapshot.ids[rows]
                bm25 = dict(zip(bm25_ids.tolist(), values.tolist()))
                if mode == "hybrid" and ranking.fields_weight:
                    rows, values = snapshot.field_postings(self._conn).scores(
                        phrases, start, end, ranking.candidates,
                        lambda i: self._phrase_scores(terms[i], snapshot, lexical.FIELDS_TABLE))
                    fields_ids = snapshot.ids[rows]
                    fields = dict(zip(fields_ids.tolist(), values.tolist()))
            t2 = clock()
            # BM25 above ran while a large index's query was embedded and searched (query_embedding.py)
            query_vector, embed_ms, dense_ids, dense_ms = dense()
            t3 = clock()
            if mode == "hybrid" and ranking.doc_bm25_weight:
                docs, values = snapshot.document_postings().rank(phrases, start, end, ranking.candidates)
                doc_bm25 = dict(zip(docs.tolist(), values.tolist()))
                doc_best = doclexical.best_chunks(snapshot.doc_ids[start:end], snapshot.ids[start:end],
                                                  snapshot.matrix[start:end], query_vector, docs)
            t4 = clock()
            dense_factor = CJK_DENSE_WEIGHT if self._dense_is_blind_to(query) else 1.0
            rankings = {"hybrid": [(dense_ids, ranking.dense_weight * dense_factor), (bm25_ids, ranking.bm25_weight),
                                   (fields_ids, ranking.fields_weight)],
                        "dense": [(dense_ids, 1.0)], "bm25": [(bm25_ids, 1.0)]}[mode]
            convex = mode == "hybrid" and ranking.fusion == "convex"
            fused, doc_cosine = self._convex(snapshot, np.union1d(dense_ids, bm25_ids), query_vector, phrases,
                                             phrase_scores, dense_factor, ranking, doc_bm25, doc_best) \
                if convex else (rrf(rankings, ranking.rrf_k), {})
            for chunk_id in doc_best.values():
                fused.setdefault(chunk_id, 0.0)
            doc_of = dict(zip(fused, snapshot.doc_ids[snapshot.rows_of(
                np.fromiter(fused, dtype=np.int64, count=len(fused)))].tolist()))
            fuse_documents(fused, doc_of, list(doc_bm25), 0.0 if convex else ranking.doc_bm25_weight, ranking.rrf_k)
            demoted: set[int] = set()       # release-notes pages the ranking scaled down (release_notes.py)
            if mode == "hybrid" and ranking.release_notes < 1.0 and not asks_about_releases(query):
                demoted = release_notes_docs(self._conn, doc_of.values(), snapshot.release_notes)
                demote(fused, doc_of, demoted, ranking.release_notes)
            top = rank(fused, doc_of, ranking if mode == "hybrid" else _ONE_RETRIEVER)
            if mode == "hybrid":            # the question's language first, a copied passage once (language.py)
                twins = duplicates.twin_finder(snapshot, lambda v: self._dense_ids(snapshot, collection, start, end, v),
                                               self._chunk_texts, end - start)
                top = language.final_order(query, top, k, doc_of, snapshot, self._chunk_texts, ranking, twins)
            top = top[:k]
            top_ids = np.array([item.chunk_id for item in top], dtype=np.int64)
            top_rows = snapshot.rows_of(top_ids)
            cosines = np.einsum("ij,j->i", snapshot.matrix[top_rows], query_vector)
            coverage = snapshot.lexical.coverage(self._tokenizer.tokens(self._conn, terms), top_rows)
            chunk_rows = self._chunk_rows(top_ids.tolist())    # `rows` above holds BM25 rows (an array)
            quotes = store.read_quote_vectors(self._conn, top_ids.tolist()) if sentences else {}
            meta = self._meta       # read with this snapshot: a new base URL moves the index version
        hits = []
        for item, cosine, covered in zip(top, cosines, coverage.tolist()):
            row = chunk_rows.get(item.chunk_id)
            if row is None:   # cannot happen inside one transaction; guard anyway
                continue
            doc_id, coll, source, anchor, path_json, text, metadata = row
            heading_path = tuple(json.loads(path_json))
            url = chunk_url(store.base_url(meta, coll), source, anchor, metadata)
            hits.append(Hit(chunk_id=item.chunk_id, doc_id=doc_id, collection=coll, source=source, anchor=anchor,
                            title=PATH_SEPARATOR.join(heading_path), heading_path=heading_path, text=text,
                            cosine=float(cosine), bm25=bm25.get(item.chunk_id, 0.0), fusion=item.fusion,
                            fields_bm25=fields.get(item.chunk_id, 0.0), doc_bm25=doc_bm25.get(doc_id, 0.0),
                            doc_score=item.doc_score, score=item.score, coverage=covered,
                            doc_cosine=doc_cosine.get(doc_id, 0.0), url=url, copy_of=item.copy_of,
                            release_notes=doc_id in demoted, unknown_terms=unknown,
                            sentence_cosine=quote_blobs.best_cosine(quotes[item.chunk_id], query_vector)
                            if item.chunk_id in quotes else None))
        if timings is not None:
            t5 = clock()
            timings.update(embed=embed_ms, wait=(t3 - t2) * 1e3, dense=dense_ms + (t4 - t3) * 1e3,
                           bm25=(t2 - t1) * 1e3, fuse=(t5 - t4) * 1e3, total=(t5 - t0) * 1e3)
        return hits

    def _convex(self, snapshot: Snapshot, candidates: np.ndarray, query_vector: np.ndarray,
                phrases: list[tuple[str, ...]], phrase_scores: Callable[[int], tuple[np.ndarray, np.ndarray]],
                dense_factor: float, ranking: Ranking, doc_bm25: dict[int, float], doc_best: dict[int, int],
                ) -> tuple[dict[int, float], dict[int, float]]:
        """score_fusion.py over the candidates and doc_best's chunks: (chunk → fused score, doc → centroid cosine)."""
        candidates = np.union1d(candidates, np.fromiter(doc_best.values(), np.int64))
        rows = snapshot.rows_of(candidates)
        docs = snapshot.doc_ids[rows]
        cosine = np.einsum("ij,j->i", snapshot.matrix[rows], query_vector).astype(np.float64)
        bm25 = score_fusion.bm25_at(snapshot.lexical, phrases, rows, phrase_scores)
        centroid, by_doc = None, {}
        if ranking.centroid_weight:
            centroid = snapshot.document_centroids().cosines(docs, query_vector)
            by_doc = dict(zip(docs.tolist(), centroid.tolist()))
        whole = np.array([doc_bm25.get(d, 0.0) for d in docs.tolist()], dtype=np.float64) if doc_bm25 else None
        fused = score_fusion.convex(candidates, cosine, bm25, centroid,
                                    dense_share=ranking.convex_dense * dense_factor,
                                    bm25_share=1.0 - ranking.convex_dense,
                                    centroid_weight=ranking.centroid_weight * dense_factor,
                                    doc_bm25=whole, doc_bm25_weight=ranking.doc_bm25_weight)
        return fused, by_doc

    def _dense_is_blind_to(self, query: str) -> bool:
        """True for a mostly-CJK query and an embedder that does not declare CJK training."""
        if getattr(self._embedder, "reads_cjk", True):
            return False
        return cjk_share(query) > 0.5

    def _dense_ids(self, snapshot: Snapshot, collection: str | None, start: int, end: int,
                   vector: np.ndarray, n: int = CANDIDATES) -> np.ndarray:
        """The `n` chunk ids nearest `vector` in the collection (its rows start..end): the ANN
        graph, else the exact scan."""
        dense_ids = None if self._exact else ann_top_ids(
            snapshot.anns, snapshot.slices, snapshot.ids, snapshot.matrix, collection, vector, n)
        if dense_ids is None:   # no ANN file covers it: the exact scan
            # einsum: numpy's own single-threaded loop; a multi-threaded BLAS gemv was
            # 3-5x slower here whenever another process held the other core.
            scores = np.einsum("ij,j->i", snapshot.matrix[start:end], vector)
            dense_ids = exact_top_ids(scores, snapshot.ids[start:end], n)
        return dense_ids

    def _phrase_scores(self, term: str, snapshot: Snapshot, table: str = "chunks_fts",
                       tokens: tuple[str, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
        """FTS5's own BM25 for one multi-token term (a phrase) in `table`, as (snapshot rows, scores):
        from the search files when they hold the phrase (`tokens`, phrase_postings.py), else from FTS5."""
        stored = snapshot.lexical.phrases.get(tokens) if table == "chunks_fts" and tokens else None
        return stored if stored is not None else phrase_postings.fts5_scores(self._conn, term, snapshot.rows_of, table)

    def _chunk_texts(self, chunk_ids: list[int]) -> dict[int, str]:
        return {chunk_id: row[5] for chunk_id, row in self._chunk_rows(chunk_ids).items()}     # row: _chunk_rows'

    def _chunk_rows(self, chunk_ids: list[int]) -> dict[int, tuple[Any, ...]]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self._conn.execute(
            "SELECT c.id, c.doc_id, c.collection, d.source, c.anchor, c.heading_path, c.text, d.metadata "
            f"FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})", chunk_ids)
        return {row[0]: row[1:] for row in rows}

    # ------------------------------------------------------------ browsing

    def collections(self) -> list[CollectionInfo]:
        with self._lock, self._read_transaction():
            version = self._read_version()
            model = self._read_meta().get("embed_model", "")
            rows = browse.collection_counts(self._conn)
        return [CollectionInfo(name, docs, chunks, model, version) for name, docs, chunks in rows]

    def stats(self) -> dict[str, Any]:
        collections = self.collections()
        with self._lock:
            meta = self._read_meta()
        size = sum(p.stat().st_size for p in (self.path, Path(f"{self.path}-wal")) if p.exists())
        return {
            "path": str(self.path),
            "collections": [asdict(c) for c in collections],
            "documents": sum(c.documents for c in collections),
            "chunks": sum(c.chunks for c in collections),
            "embed_model": meta.get("embed_model"),
            "embed_dim": int(meta["embed_dim"]) if "embed_dim" in meta else None,   # None: nothing embedded yet
            "index_version": int(meta.get("index_version", 0)),
            "schema_version": int(meta.get("schema_version", 0)),
            "size_bytes": size,
        }

    def is_empty(self, collection: str | None = None) -> bool:
        with self._lock:
            if collection is None:
                row = self._conn.execute("SELECT 1 FROM chunks LIMIT 1").fetchone()
            else:
                row = self._conn.execute("SELECT 1 FROM chunks WHERE collection = ? LIMIT 1",
                                         (collection,)).fetchone()
        return row is None

    def get_document(self, *, source: str | None = None, doc_id: int | None = None,
                     collection: str | None = None) -> DocumentInfo:
        with self._lock, self._read_transaction():
            return browse.document_info(self._conn, source=source, doc_id=doc_id, collection=collection)

    def iter_chunks(self, collection: str) -> Iterator[dict[str, Any]]:
        """Every chunk of a collection, by source then ordinal (read in one transaction)."""
        with self._lock, self._read_transaction():
            rows = browse.collection_chunks(self._conn, collection)
            base_url = store.read_base_url(self._conn, collection)
        yield from browse.chunk_dicts(rows, base_url)

    def quote_vectors(self, chunk_ids: Sequence[int]) -> StoredQuotes:
        """The stored quote vectors (docindex/quotable.py) of those of `chunk_ids` that have them."""
        with self._lock, self._read_transaction():
            meta = self._read_meta()
            dim = int(meta["embed_dim"]) if "embed_dim" in meta else None
            return StoredQuotes(meta.get("embed_model"), dim, store.read_quote_vectors(self._conn, chunk_ids))

    def content_hash(self, collection: str) -> str:
        """SHA-256 over the (source, sha256) pairs of a collection's documents, in source order."""
        with self._lock, self._read_transaction():
            return browse.content_hash(self._conn, collection)

    # ------------------------------------------------------------ internals

    def _get_embedder(self) -> Embedder:
        if self._embedder is None:
            embedder = default_embedder(threads=1)
            self._check_embedder(embedder, self._meta)
            self._embedder = embedder
        return self._embedder

    def _check_model(self, meta: dict[str, str]) -> None:
        if self._embedder is not None:
            self._check_embedder(self._embedder, meta)
        elif meta.get("embed_model") not in (None, MODEL_NAME):
            # The default embedder cannot read this index: say so before loading anything.
            store.check_embedder(meta, MODEL_NAME, MODEL_DIM, self.path)

    def _check_embedder(self, embedder: Embedder, meta: dict[str, str]) -> None:
        store.check_embedder(meta, embedder.name, embedder.dim, self.path)

    def _read_transaction(self) -> browse.ReadTransaction:
        return browse.ReadTransaction(self._conn)

    def _read_meta(self) -> dict[str, str]:
        return dict(self._conn.execute("SELECT key, value FROM meta").fetchall())

    def _read_version(self) -> int:
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'index_version'").fetchone()
        return int(row[0]) if row else 0

    def _ensure_current(self) -> bool:
        """Inside a read transaction: reload the snapshot if the index version moved."""
        data_version = self._conn.execute("PRAGMA data_version").fetchone()[0]
        if self._snapshot is not None and data_version == self._data_version:
            return False   # nobody else committed since we last looked
        self._data_version = data_version
        version = self._read_version()
        if self._snapshot is not None and version == self._snapshot.version:
            return False
        meta = self._read_meta()
        self._check_model(meta)
        self._meta = meta
        dim = int(meta.get("embed_dim", self._embedder.dim if self._embedder else MODEL_DIM))
        self._snapshot = Snapshot.load(self._conn, version, dim, None if self._exact else self.path)
        return True

    def _unknown_collection_message(self, collection: str, snapshot: Snapshot) -> str:
        return browse.collection_message(collection, sorted(snapshot.collections))


__all__ = ["Index", "Ranking", "RRF_K", "CANDIDATES"]

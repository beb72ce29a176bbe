"""The query's vector and its dense search, computed beside BM25 on a large index.

At 1M chunks BM25 takes ~8-20 ms, the query embedding ~3-11 ms and the ANN
search ~3-6 ms on one core (KNOWN_LIMITATIONS.md, "A million chunks"). ONNX
Runtime and faiss release the GIL, so from PARALLEL_EMBED_MIN_CHUNKS chunks
`Index.search` starts the embedding in a worker thread (`start`), then, once it
holds the index's current snapshot, the dense search on that vector in another
(`follow`), and scores BM25 meanwhile; below, both run in the caller, the
embedding first, as before (a thread hand-off would cost more than it saves).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

import numpy as np

from .embedder import Embedder

_T = TypeVar("_T")

PARALLEL_EMBED_MIN_CHUNKS = 50_000
"""From this many chunks in the index, the query is embedded and searched while BM25 runs."""

Pending = Callable[[], tuple[np.ndarray, float]]
"""A call that returns the query's vector and the milliseconds its embedding took."""
Dense = Callable[[], tuple[np.ndarray, float, np.ndarray, float]]
"""A call that returns the query's vector, its embedding's milliseconds, the dense
search's chunk ids and that search's milliseconds."""


class QueryEmbedder:
    """Embeds queries and searches their vectors in the caller, or in worker threads for a large index."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def start(self, embedder: Embedder, query: str, chunks: int) -> Pending:
        def embed() -> tuple[np.ndarray, float]:
            began = time.perf_counter()
            vector = embedder.embed([query])[0]
            return vector, (time.perf_counter() - began) * 1e3

        if chunks < PARALLEL_EMBED_MIN_CHUNKS:
            done = embed()
            return lambda: done
        return self._submit(embed)

    def follow(self, pending: Pending, search: Callable[[np.ndarray], np.ndarray], chunks: int) -> Dense:
        """`search` on the vector `pending` returns: in a worker thread as soon as the vector is
        there, for a large index; else in the caller, when the returned call is made."""
        def dense() -> tuple[np.ndarray, float, np.ndarray, float]:
            vector, embed_ms = pending()
            began = time.perf_counter()
            ids = search(vector)
            return vector, embed_ms, ids, (time.perf_counter() - began) * 1e3

        return dense if chunks < PARALLEL_EMBED_MIN_CHUNKS else self._submit(dense)

    def _submit(self, work: Callable[[], _T]) -> Callable[[], _T]:
        # A `follow` task waits on an embedding submitted before it (first in, first out), so it
        # never holds a worker that its own embedding needs; the third worker is slack for the
        # embeddings of searches waiting for the index's lock.
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=3, thread_name_prefix="docindex-query")
            return self._pool.submit(work).result

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None

"""The query's vector for a search, computed beside BM25 on a large index.

At 1M chunks BM25 takes ~20 ms and the query embedding ~8-11 ms on one core
(KNOWN_LIMITATIONS.md, "A million chunks"). ONNX Runtime releases the GIL, so
from PARALLEL_EMBED_MIN_CHUNKS chunks `Index.search` starts the embedding in a
worker thread and scores BM25 meanwhile; below, the embedding runs in the
caller first, as before (a thread hand-off would cost more than it saves).
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from .embedder import Embedder

PARALLEL_EMBED_MIN_CHUNKS = 50_000
"""From this many chunks in the index, the query is embedded while BM25 runs."""

Pending = Callable[[], tuple[np.ndarray, float]]
"""A call that returns the query's vector and the milliseconds its embedding took."""


class QueryEmbedder:
    """Embeds queries in the caller, or in a worker thread for a large index."""

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
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="docindex-query")
            return self._pool.submit(embed).result

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False)
                self._pool = None

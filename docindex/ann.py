"""The approximate dense index of one collection: an HNSW graph (faiss) over its chunk vectors.

Below `min_chunks()` chunks a collection is scanned exactly (index.py); at or
above it, ingest builds one of these per collection, keyed by chunk id, into a
file beside the SQLite index (ann_sidecar.py says which files belong to which
index version). The library and its parameters were chosen by
benchmarks/ann_compare.py (benchmarks/results/ann_compare_100000.md): faiss
(MIT, wheels, maintained); hnswlib ships no wheel (a C++ compiler at install)
and has had no release since 2023; usearch 2.26 crashed the process when
onnxruntime (the embedder) was imported after it. The graph: 16 links per node
(32 on the base layer), construction breadth 128, inner product on unit
vectors. Search breadth EF_SEARCH: on synthetic clustered vectors ef 48 already
reached recall@10 0.997 (ann_compare); on real MiniLM vectors it takes more
(benchmarks/results/ann_real_postgresql.md, 11,900 chunks: ef 64 → 0.961,
ef 192 → 0.993, and 0.987 of the 50 candidates a search takes), so 192. At a
fixed ef, recall falls as the graph grows: ef 192 gave synthetic recall@10 1.0
at 100k and 200k (benchmarks/results/scale_*.md) but 0.94 at 1M, where ef 768
reached 0.98 on held-out queries (benchmarks/results/ann_ef_1000000.md, 1.4 ms
more per search); so a graph of more than LARGE vectors searches with
EF_SEARCH_LARGE (`ef_for`).

The exact scan stays the reference: `Index(..., exact=True)` never uses these,
and tests compare the two.
"""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np

MIN_CHUNKS_DEFAULT = 50_000
MIN_CHUNKS_ENV = "DOCINDEX_ANN_MIN_CHUNKS"
LINKS = 16
EF_CONSTRUCTION = 128
EF_SEARCH = 192
EF_SEARCH_LARGE = 768
LARGE = 200_000       # the largest graph measured with recall@10 1.0 at EF_SEARCH
SUFFIX = ".faiss"
# faiss logs which CPU build it loads at INFO ("Could not load library with AVX2 support ..."): not news.
logging.getLogger("faiss.loader").setLevel(logging.WARNING)


def min_chunks() -> int:
    """The chunk count from which a collection gets an ANN file (setting: DOCINDEX_ANN_MIN_CHUNKS)."""
    raw = os.environ.get(MIN_CHUNKS_ENV, "").strip()
    if not raw:
        return MIN_CHUNKS_DEFAULT
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{MIN_CHUNKS_ENV} must be a whole number of chunks, not {raw!r}") from None
    if value < 1:
        raise ValueError(f"{MIN_CHUNKS_ENV} must be at least 1, not {value}")
    return value


def ef_for(count: int) -> int:
    """The search breadth for a graph of `count` vectors (module doc)."""
    return EF_SEARCH if count <= LARGE else EF_SEARCH_LARGE


def build(keys: np.ndarray, vectors: np.ndarray, path: Path, *, threads: int = 1) -> None:
    """Write an ANN file of `vectors` (unit rows) keyed by `keys` (chunk ids) to `path`, atomically."""
    import faiss

    graph = faiss.IndexHNSWFlat(vectors.shape[1], LINKS, faiss.METRIC_INNER_PRODUCT)
    graph.hnsw.efConstruction = EF_CONSTRUCTION
    index = faiss.IndexIDMap2(graph)
    faiss.omp_set_num_threads(max(1, threads))
    try:
        index.add_with_ids(np.ascontiguousarray(vectors, dtype=np.float32), np.ascontiguousarray(keys, np.int64))
    finally:
        faiss.omp_set_num_threads(1)
    partial = path.with_name(path.name + ".partial")
    faiss.write_index(index, str(partial))
    os.replace(partial, path)


class Ann:
    """An ANN file opened for search; its keys must be `ids` (the collection's chunk ids, in order).
    The file must not change while open: ann_build writes each under a new name and only deletes old ones."""

    def __init__(self, path: Path, *, ids: np.ndarray, dim: int, ef_search: int | None = None) -> None:
        import faiss

        # Mapped in place where faiss can (1.11+): opening reads no vectors; pages load as searches touch them.
        flags = getattr(faiss, "IO_FLAG_MMAP_IFC", 0)
        try:
            index = faiss.read_index(str(path), flags)
        except RuntimeError as exc:      # faiss reports a bad file as RuntimeError
            raise ValueError(f"{path}: not an ANN file ({str(exc).splitlines()[0]})") from None
        if not isinstance(index, faiss.IndexIDMap2) or index.d != dim:
            raise ValueError(f"{path}: not an ANN file of {dim}-d vectors keyed by chunk id")
        keys = faiss.vector_to_array(index.id_map)
        if not np.array_equal(keys, ids):
            raise ValueError(f"{path}: keyed by other chunk ids than the collection's")
        faiss.omp_set_num_threads(1)     # one query at a time per search; the server runs several searches
        graph: Any = faiss.downcast_index(index.index)
        graph.hnsw.efSearch = ef_search if ef_search is not None else ef_for(int(index.ntotal))
        self._index = index
        self.path = path

    def __len__(self) -> int:
        return int(self._index.ntotal)

    def search(self, query: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, inner products) of about the `limit` nearest, best first."""
        limit = min(limit, len(self))
        if limit < 1:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        scores, keys = self._index.search(np.asarray(query, dtype=np.float32).reshape(1, -1), limit)
        found = keys[0] >= 0
        return keys[0][found].astype(np.int64), scores[0][found]


def top_ids(anns: dict[str, Ann], slices: dict[str, tuple[int, int]], ids: np.ndarray, matrix: np.ndarray,
            collection: str | None, query: np.ndarray, limit: int) -> np.ndarray | None:
    """Chunk ids of about the `limit` nearest to `query` in `collection` (None: all), best first,
    through the ANN files where there are some; None when none covers the request (scan exactly)."""
    names = [collection] if collection is not None else list(slices)
    if not any(name in anns for name in names):
        return None
    found_ids, found_scores = [], []
    for name in names:
        if name in anns:
            keys, scores = anns[name].search(query, limit)
        else:
            start, end = slices.get(name, (0, 0))
            scores = np.einsum("ij,j->i", matrix[start:end], query)
            keep = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
            keys, scores = ids[start:end][keep], scores[keep]
        found_ids.append(keys)
        found_scores.append(scores.astype(np.float32))
    keys, scores = np.concatenate(found_ids), np.concatenate(found_scores)
    return keys[np.lexsort((keys, -scores))][:limit]


def exact_top_ids(scores: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """The exact scan's answer: the `n` ids of the highest scores, best first (equal scores: in row order)."""
    n = min(n, len(scores))
    candidates = np.argpartition(-scores, n - 1)[:n] if n < len(scores) else np.arange(len(scores))
    ranked = candidates[np.argsort(-scores[candidates], kind="stable")]
    top: np.ndarray = ids[ranked]
    return top

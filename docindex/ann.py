"""The approximate dense index of one collection: an HNSW graph (usearch) over its chunk vectors.

Below `min_chunks()` chunks a collection is scanned exactly (index.py); at or
above it, ingest builds one of these per collection, keyed by chunk id, into a
file beside the SQLite index (ann_sidecar.py says which files belong to which
index version). The library and its parameters were chosen by
benchmarks/ann_compare.py (results in benchmarks/results/ann_compare_100000.md):
16 links per node, construction breadth 128, inner product on unit vectors,
search breadth EF_SEARCH — the smallest that reached recall@10 ≥ 0.99 against
the exact scan on the benchmark's tune queries.

The exact scan stays the reference: `Index(..., exact=True)` never uses these,
and tests compare the two.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

MIN_CHUNKS_DEFAULT = 50_000
MIN_CHUNKS_ENV = "DOCINDEX_ANN_MIN_CHUNKS"
CONNECTIVITY = 16
EXPANSION_ADD = 128
EF_SEARCH = 96
SUFFIX = ".usearch"


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


def build(keys: np.ndarray, vectors: np.ndarray, path: Path, *, threads: int = 0) -> None:
    """Write an ANN file of `vectors` (unit rows) keyed by `keys` (chunk ids) to `path`, atomically."""
    from usearch.index import Index as UIndex

    index = UIndex(ndim=vectors.shape[1], metric="ip", dtype="f32", connectivity=CONNECTIVITY,
                   expansion_add=EXPANSION_ADD, expansion_search=EF_SEARCH)
    if len(keys):
        index.add(np.ascontiguousarray(keys, dtype=np.uint64), np.ascontiguousarray(vectors, dtype=np.float32),
                  threads=threads)
    partial = path.with_name(path.name + ".partial")
    index.save(str(partial))
    os.replace(partial, path)


class Ann:
    """An ANN file opened for search (memory-mapped: opening reads no vectors)."""

    def __init__(self, path: Path, *, count: int, dim: int, ef_search: int = EF_SEARCH) -> None:
        from usearch.index import Index as UIndex

        index = UIndex.restore(str(path), view=True, expansion_search=ef_search)
        if index is None:
            raise ValueError(f"{path}: not an ANN file")
        if len(index) != count or index.ndim != dim:
            raise ValueError(f"{path}: holds {len(index)} vectors of {index.ndim} dimensions, "
                             f"not {count} of {dim}")
        self._index = index
        self.path = path

    def __len__(self) -> int:
        return len(self._index)

    def search(self, query: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, inner products) of about the `limit` nearest, best first."""
        limit = min(limit, len(self._index))
        if limit < 1:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        found = self._index.search(np.asarray(query, dtype=np.float32), limit, threads=1)
        keys = np.asarray(found.keys, dtype=np.int64)
        return keys, (1.0 - np.asarray(found.distances, dtype=np.float32))


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

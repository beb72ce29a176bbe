"""Synthetic clustered unit vectors shaped like sentence embeddings (for ANN and scale benchmarks).

Real MiniLM chunk vectors are not uniform on the sphere: chunks of one page sit
close together and pages of one topic near each other. Here: `topics` random
directions; each has `subtopics` children (topic + 0.8 × noise); each point is
a child + 0.9 × noise, normalised (cosine to its child ≈ 0.7, to a sibling ≈ 0.5).
Queries are drawn the same way with more noise (1.1), as questions are farther
from any chunk than chunks are from each other. Deterministic given the seed
and independent of n for the cluster centres (seed 0), so a 100k and a 1M set
share their topics.
"""
from __future__ import annotations

import numpy as np

DIM = 384


def _centres(dim: int, topics: int = 200, subtopics: int = 25) -> np.ndarray:
    rng = np.random.default_rng(0)
    top = rng.standard_normal((topics, dim)).astype(np.float32)
    top /= np.linalg.norm(top, axis=1, keepdims=True)
    noise = rng.standard_normal((topics, subtopics, dim)).astype(np.float32) / np.sqrt(dim)
    sub = (top[:, None, :] + 0.8 * noise).reshape(-1, dim)
    return sub / np.linalg.norm(sub, axis=1, keepdims=True)


def clustered(n: int, seed: int, *, dim: int = DIM, spread: float = 0.9, batch: int = 65536) -> np.ndarray:
    """(n, dim) float32 unit rows; rows of one seed are the same whatever n (a prefix)."""
    centres = _centres(dim)
    rng = np.random.default_rng(seed)
    out = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, batch):
        m = min(batch, n - start)
        which = rng.integers(0, len(centres), m)
        block = centres[which] + spread * rng.standard_normal((m, dim)).astype(np.float32) / np.sqrt(dim)
        out[start:start + m] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def queries(n: int, seed: int, *, dim: int = DIM) -> np.ndarray:
    return clustered(n, seed, dim=dim, spread=1.1)


def exact_top(matrix: np.ndarray, qs: np.ndarray, k: int) -> np.ndarray:
    """(len(qs), k) row indices of the exact inner-product top-k, best first."""
    out = np.empty((len(qs), k), dtype=np.int64)
    for i in range(0, len(qs), 64):
        scores = qs[i:i + 64] @ matrix.T
        part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(scores, part, axis=1), axis=1)
        out[i:i + 64] = np.take_along_axis(part, order, axis=1)
    return out


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of the exact top-k found among the approximate top-k."""
    k = truth.shape[1]
    return float(np.mean([len(set(f[:k].tolist()) & set(t.tolist())) / k for f, t in zip(found, truth)]))

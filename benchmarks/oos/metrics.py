"""Retrieval metrics over distinct documents, and bootstrap confidence intervals.

A search returns chunks; a reader cares about pages. `distinct` turns ranked
chunk sources into ranked documents (first occurrence wins). A question's
relevant set is its gold page plus its `also` pages; a hit is any of them.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

DOC_CUTOFFS = (1, 3, 5, 10)
CHUNKS_TO_MODEL = 4       # what the model receives (settings.prompt_max_sources)
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261201


def distinct(sources: Sequence[str]) -> list[str]:
    """Sources in rank order, each kept at its first (best) rank."""
    return list(dict.fromkeys(sources))


def first_hit(ranked_docs: Sequence[str], relevant: set[str], depth: int = 10) -> int | None:
    """1-based rank of the first relevant document within `depth`, or None."""
    for rank, doc in enumerate(ranked_docs[:depth], start=1):
        if doc in relevant:
            return rank
    return None


def ndcg(ranked_docs: Sequence[str], relevant: set[str], depth: int = 10) -> float:
    """Binary-gain nDCG@depth: every relevant page has gain 1, the ideal ranks them all first."""
    dcg = sum(1.0 / math.log2(rank + 1) for rank, doc in enumerate(ranked_docs[:depth], start=1)
              if doc in relevant)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(relevant), depth) + 1))
    return dcg / ideal if ideal else 0.0


def per_question(ranked_docs: Sequence[str], relevant: set[str],
                 chunk_sources: Sequence[str] | None) -> dict[str, float]:
    """Every metric for one question (1.0/0.0 for hits); chunk recall only when chunks exist."""
    rank = first_hit(ranked_docs, relevant)
    scores = {f"recall@{n}": float(rank is not None and rank <= n) for n in DOC_CUTOFFS}
    scores["mrr@10"] = 1.0 / rank if rank else 0.0
    scores["ndcg@10"] = ndcg(ranked_docs, relevant)
    if chunk_sources is not None:
        scores[f"chunk_recall@{CHUNKS_TO_MODEL}"] = float(
            any(s in relevant for s in chunk_sources[:CHUNKS_TO_MODEL]))
    return scores


def bootstrap_ci(values: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES,
                 seed: int = BOOTSTRAP_SEED) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95 % percentile bootstrap interval."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return (math.nan, math.nan, math.nan)
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(resamples, arr.size))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return (float(arr.mean()), float(low), float(high))


def paired_ci(ours: Sequence[float], baseline: Sequence[float], **kw) -> tuple[float, float, float]:
    """Mean paired difference ours − baseline with its 95 % bootstrap interval (same questions resampled)."""
    return bootstrap_ci(np.asarray(ours, dtype=float) - np.asarray(baseline, dtype=float), **kw)


def spread(values: Sequence[float]) -> dict[str, float]:
    """min, 5th/25th/50th/75th/95th percentiles, max."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return {}
    points = np.percentile(arr, [0, 5, 25, 50, 75, 95, 100])
    return {k: round(float(v), 4) for k, v in zip(("min", "p5", "p25", "p50", "p75", "p95", "max"), points)}


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """P(score of a random positive > score of a random negative), ties count half."""
    pos, neg = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    if not pos.size or not neg.size:
        return math.nan
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (pos.size * neg.size))


"""The one percentile definition behind every P50/P95 askdocs reports: GET
/stats, benchmarks/ (serve overhead, MCP round trip, docindex search, ranking,
retrieval levers, scale) and their write-ups in docs/numbers.md.

Nearest rank, no interpolation: the P-th percentile of n values is the
ceil(P/100 · n)-th smallest, a value some request really had. (numpy's default
interpolates between neighbours; `statistics.median` averages the middle two.)
The load test's percentiles are Locust's own (loadtest/summarize.py).
"""
from __future__ import annotations

import math
from collections.abc import Iterable


def percentile(values: Iterable[float], q: float) -> float | None:
    """The nearest-rank `q`-th percentile (0 < q ≤ 100); None for no values."""
    if not 0 < q <= 100:
        raise ValueError(f"percentile q must be in (0, 100], got {q!r}")
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def p50_p95(values: Iterable[float], ndigits: int = 3) -> dict[str, float | None]:
    """{"p50", "p95"}, rounded: the pair every latency figure reports."""
    ordered = sorted(values)
    return {key: None if (v := percentile(ordered, q)) is None else round(v, ndigits)
            for key, q in (("p50", 50), ("p95", 95))}

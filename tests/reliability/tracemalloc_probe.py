"""tracemalloc inside a Serve replica, driven from the cluster's driver
(cluster_main.py) through Ray's `actor.__ray_call__`: no route, no code in
the replica itself. `start` begins tracing and keeps a first snapshot;
`top_growth` compares a second snapshot with it and returns the largest
growths by source line. Both run in the replica's process (this module is
importable there: the cluster's workers have the checkout on PYTHONPATH)."""
from __future__ import annotations

import tracemalloc
from typing import Any

FRAMES = 8
_first: list[tracemalloc.Snapshot] = []


def start(_replica: Any) -> int:
    tracemalloc.start(FRAMES)
    _first[:] = [tracemalloc.take_snapshot()]
    return tracemalloc.get_traced_memory()[0]


def top_growth(_replica: Any, limit: int = 15) -> dict[str, Any]:
    snapshot = tracemalloc.take_snapshot()
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = snapshot.filter_traces(ignore).compare_to(_first[0].filter_traces(ignore), "traceback")
    traced, peak = tracemalloc.get_traced_memory()
    return {"traced_now_mb": round(traced / 2**20, 2), "traced_peak_mb": round(peak / 2**20, 2),
            "top": [{"size_diff_kb": round(d.size_diff / 1024, 1), "count_diff": d.count_diff,
                     "traceback": [f"{f.filename}:{f.lineno}" for f in d.traceback]}
                    for d in diff[:limit]]}

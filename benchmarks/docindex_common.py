"""Shared bits of the docindex benchmarks: machine description and result files."""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
from pathlib import Path

from serve_app.percentile import p50_p95

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
CORPORA = REPO / "corpora"
INGEST_SUMMARY = re.compile(r"; (\d+) chunks in ([\d.]+) s")   # `docindex ingest`'s last line


def machine() -> dict:
    return {
        "machine": f"{os.cpu_count()}-core {platform.machine()} VM, "
                   f"{round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30)} GiB, no GPU",
        "python": platform.python_version(),
        "date": dt.date.today().isoformat(),
        "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }


def percentiles(values: list[float]) -> dict:
    """P50/P95 by the one definition (serve_app.percentile: nearest rank)."""
    return p50_p95(values)


def write_results(name: str, payload: dict, markdown: str) -> None:
    """Write <name>.json and <name>.md; flags runs made while other jobs crowded the cores."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    info = payload.get("machine", {})
    info["load_avg_1m_at_end"] = round(os.getloadavg()[0], 2)
    cores = os.cpu_count() or 1
    if max(info.get("load_avg_1m_at_start", 0), info["load_avg_1m_at_end"]) > 2 * cores:
        markdown += (f"\n**Caveat:** the 1-minute load average was {info.get('load_avg_1m_at_start')} at the start and "
                     f"{info['load_avg_1m_at_end']} at the end on {cores} cores (other sessions' builds and tests): "
                     "timings here measure contention as much as this code.\n")
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    (RESULTS / f"{name}.md").write_text(markdown)
    print(markdown)

"""One percentile definition (serve_app/percentile.py, nearest rank) behind
/stats, every benchmark's P50/P95 and the reliability load report
(tests/reliability/load.py); the scan covers benchmarks/, loadtest/,
tests/reliability/, evals/ and the three packages."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from serve_app import stats
from serve_app.percentile import p50_p95, percentile

REPO = Path(__file__).resolve().parents[2]

# Medians and percentiles that are not a reported P50/P95 latency, each with why.
NOT_A_P50 = {
    "benchmarks/oos/metrics.py": "bootstrap confidence intervals and a score distribution",
    "benchmarks/engines.py": "the median of a few sequential runs per engine",
    "benchmarks/llamacpp_prefill.py": "the median rate of a few runs",
    "benchmarks/snapshot_open.py": "the median of a few repeated index opens, not a request latency",
    "evals/calibrate.py": "the median of Gate scores, not a latency",
    "evals/metrics.py": "bootstrap confidence intervals",
}
OWN_PERCENTILE = re.compile(r"np\.(nan)?(percentile|quantile)\(|statistics\.(median|quantiles)\(|"
                            r"\[\s*(round|int|math\.ceil)\(\s*q\s*[*/]")


def test_nearest_rank_is_a_value_some_request_really_had() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 9.0, 8.0, 7.0, 6.0]
    assert percentile(values, 50) == 5.0        # numpy would interpolate 5.5
    assert percentile(values, 95) == 10.0
    assert percentile(values, 100) == 10.0
    assert percentile(values, 10) == 1.0
    assert percentile([42.0], 50) == 42.0 and percentile([], 50) is None


@pytest.mark.parametrize("q", [0, -1, 101])
def test_a_percentile_outside_0_to_100_is_refused(q: float) -> None:
    with pytest.raises(ValueError, match="percentile q"):
        percentile([1.0], q)


def test_the_p50_p95_pair_is_rounded() -> None:
    assert p50_p95([0.12345, 0.23456], ndigits=2) == {"p50": 0.12, "p95": 0.23}
    assert p50_p95([]) == {"p50": None, "p95": None}


def test_stats_and_the_benchmarks_use_the_one_definition() -> None:
    assert stats.percentile is percentile
    for path in ["benchmarks/docindex_common.py", "benchmarks/serve_overhead.py", "benchmarks/mcp_roundtrip.py",
                 "benchmarks/retrieval_levers.py", "benchmarks/ranking_latency.py", "tests/reliability/load.py"]:
        assert "from serve_app.percentile import" in (REPO / path).read_text(encoding="utf-8"), path


def test_no_module_computes_a_percentile_of_its_own() -> None:
    offenders = []
    for folder in ("benchmarks", "loadtest", "tests/reliability", "evals", "serve_app", "deployments", "docindex"):
        for path in sorted((REPO / folder).rglob("*.py")):
            name = path.relative_to(REPO).as_posix()
            if name in NOT_A_P50 or name == "serve_app/percentile.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
                if OWN_PERCENTILE.search(line):
                    offenders.append(f"{name}:{number}: {line.strip()}")
    assert not offenders, "use serve_app.percentile:\n" + "\n".join(offenders)

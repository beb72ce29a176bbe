"""Slow: rebuild the eval index with the current docindex and re-score retrieval.

Catches a docindex change (chunking, embedding, ranking) that would make the
committed retrieval results stale: the live run must not regress against them
by the gate's own rule. ~2 minutes on 2 cores (embedding 820 chunks).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from evals import build_index, gate
from evals.cases import load_cases
from evals.report import load_run
from evals.run import retrieval_records

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not build_index.DEFAULT_SOURCE.is_dir(), reason="dev corpus not present"),
]


def test_live_retrieval_does_not_regress_against_the_committed_baseline(tmp_path):
    db = tmp_path / "eval.db"
    assert build_index.main(["--db", str(db)]) == 0
    cases = load_cases()
    live = retrieval_records(cases, str(db), "cmcp", 5)
    entry = gate.load_gate()["entries"]["retrieval"]
    _, committed = load_run(REPO / entry["results"])
    noise = {m: f["noise"] for m, f in entry["metrics"].items()}
    regressions = [v.metric for v in gate.compare_runs(cases, committed, live, noise, gate.GATED["retrieval"])
                   if v.regression and v.gated]
    assert regressions == []

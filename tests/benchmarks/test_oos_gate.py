"""The out-of-sample benchmark's Gate replica decides as deployments.gate.decide does."""
from __future__ import annotations

import itertools

import pytest

from benchmarks.retrieval_oos import gate_passes, shipped_gate

gate = pytest.importorskip("deployments.gate")
from deployments.passage import Passage  # noqa: E402

VALUES = (0.0, 0.2, 0.29, 0.3, 0.45, 0.5, 0.7)


def test_the_replica_matches_the_gate_on_every_small_case() -> None:
    rules = [shipped_gate(), {"min_cosine": 0.29}, {"min_cosine": 0.29, "min_coverage": 0.5, "sure_cosine": None}]
    pairs = list(itertools.product(VALUES, VALUES))
    for rule in rules:
        for passages in itertools.chain([[]], ([p] for p in pairs), itertools.combinations(pairs, 2)):
            expected = gate.decide([Passage(source="s", text="t", cosine=c, coverage=v) for c, v in passages],
                                   **rule).passed
            assert gate_passes(list(passages), **rule) == expected, (rule, passages)


def test_the_shipped_settings_are_read_from_the_settings_defaults() -> None:
    shipped = shipped_gate()
    assert set(shipped) == {"min_cosine", "min_coverage", "sure_cosine"}
    assert isinstance(shipped["min_cosine"], float)

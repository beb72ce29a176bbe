"""The out-of-sample benchmark scores the Gate's own rule with the shipped settings."""
from __future__ import annotations

import itertools

from benchmarks.retrieval_oos import gate_passes, shipped_gate
from deployments.gate_rule import decide
from deployments.passage import Passage

VALUES = (0.0, 0.2, 0.29, 0.3, 0.45, 0.5, 0.7)


def test_the_benchmark_decides_as_the_gate_on_every_small_case() -> None:
    rules = [shipped_gate(), {**shipped_gate(), "score_weights": None}, {"min_cosine": 0.29}, {"min_cosine": 0.29, "coverage_weight": 0.5, "min_evidence": 0.6}]
    # cosine, coverage, noise floor, best sentence's cosine, sentence floor
    triples = list(itertools.product(VALUES, VALUES, (None, 0.2), (None, 0.5), (None, 0.3)))
    for rule in rules:
        for passages in itertools.chain([[]], ([p] for p in triples), itertools.combinations(triples[::7], 2)):
            expected = decide([Passage(source="s", text="t", cosine=c, coverage=v, noise_floor=f, sentence_cosine=sc,
                                       sentence_floor=sf) for c, v, f, sc, sf in passages], **rule).passed
            assert gate_passes(list(passages), **rule) == expected, (rule, passages)


def test_the_shipped_settings_are_read_from_the_settings_defaults() -> None:
    shipped = shipped_gate()
    assert set(shipped) == {"min_cosine", "coverage_weight", "min_evidence", "noise_margin", "sentence_margin",
                            "score_weights", "name_margin"}
    assert isinstance(shipped["min_cosine"], float)
    assert gate_passes([(0.46, 0.0, 0.3, None, None)], **shipped) and not gate_passes([(0.46, 0.0, None, None, None)],
                                                                                       **shipped)
    # the learned score (stop 47) weighs the passages' mean cosine against the floor
    assert gate_passes([(0.35, 0.0, 0.3), (0.27, 0.0, 0.3)], **shipped)
    assert not gate_passes([(0.35, 0.0, 0.3), (0.20, 0.0, 0.3)], **shipped)
    clauses = {**shipped, "score_weights": None}
    assert gate_passes([(0.35, 0.0, 0.3, 0.5, 0.35)], **clauses)         # the best sentence clears its floor
    assert not gate_passes([(0.35, 0.0, 0.3, 0.42, 0.35)], **clauses)


def test_the_benchmark_replays_the_name_clause_from_the_recorded_names() -> None:
    shipped = shipped_gate()
    weak = [(0.35, 0.0, 0.3), (0.30, 0.0, 0.3)]            # mean 0.325: score 0.77, under the name margin (2)
    assert gate_passes(weak, (), **shipped) and not gate_passes(weak, ("Netflix",), **shipped)
    assert gate_passes(weak, ("Netflix",), **{**shipped, "name_margin": None})

"""The Gate's optional lexical evidence (coverage) beside its cosine floor."""
from __future__ import annotations

from deployments.gate import decide
from deployments.passage import Passage


def passage(cosine: float, coverage: float | None) -> Passage:
    return Passage(source="a.md", text="t", cosine=cosine, coverage=coverage)


def test_without_min_coverage_the_gate_is_the_cosine_floor_alone():
    assert decide([passage(0.30, 0.0)], min_cosine=0.29).passed
    assert not decide([passage(0.28, 1.0)], min_cosine=0.29).passed


def test_an_everyday_question_with_a_fair_cosine_but_none_of_its_words_is_refused():
    decision = decide([passage(0.34, 0.05), passage(0.31, 0.0)], min_cosine=0.29, min_coverage=0.4)
    assert not decision.passed and decision.best_cosine == 0.34


def test_one_passage_must_carry_both_the_cosine_and_the_words():
    passages = [passage(0.35, 0.1), passage(0.20, 0.9)]
    assert not decide(passages, min_cosine=0.29, min_coverage=0.4).passed
    assert decide([*passages, passage(0.30, 0.5)], min_cosine=0.29, min_coverage=0.4).passed


def test_a_sure_cosine_passes_whatever_the_words():
    assert decide([passage(0.55, 0.0)], min_cosine=0.29, min_coverage=0.4, sure_cosine=0.5).passed
    assert not decide([passage(0.45, 0.0)], min_cosine=0.29, min_coverage=0.4, sure_cosine=0.5).passed


def test_passages_without_coverage_are_judged_on_cosine_alone():
    assert decide([passage(0.30, None)], min_cosine=0.29, min_coverage=0.4).passed
    assert not decide([passage(0.20, None)], min_cosine=0.29, min_coverage=0.4).passed


def test_nothing_retrieved_is_refused():
    decision = decide([], min_cosine=0.29, min_coverage=0.4)
    assert not decision.passed and decision.best_cosine is None

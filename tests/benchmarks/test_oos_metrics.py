"""Distinct-document retrieval metrics and their bootstrap intervals."""
from __future__ import annotations

import math

import pytest

from benchmarks.oos import metrics


def test_distinct_keeps_each_document_at_its_best_rank():
    assert metrics.distinct(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]


def test_a_hit_at_rank_two_counts_from_recall_at_three_and_gives_half_reciprocal_rank():
    scores = metrics.per_question(["x", "gold", "y"], {"gold"}, ["x", "x", "x", "gold", "y"])
    assert scores["recall@1"] == 0.0 and scores["recall@3"] == 1.0 and scores["recall@10"] == 1.0
    assert scores["mrr@10"] == 0.5
    assert scores["ndcg@10"] == pytest.approx(1 / math.log2(3))
    assert scores["chunk_recall@4"] == 1.0


def test_an_accepted_alternative_page_is_a_hit_and_a_miss_scores_zero():
    assert metrics.per_question(["alt"], {"gold", "alt"}, None)["recall@1"] == 1.0
    missed = metrics.per_question(["x"] * 10, {"gold"}, ["x"] * 4 + ["gold"])
    assert missed["mrr@10"] == 0.0 and missed["chunk_recall@4"] == 0.0


def test_ndcg_is_one_when_every_relevant_page_leads():
    assert metrics.ndcg(["a", "b", "c"], {"a", "b"}) == pytest.approx(1.0)


def test_bootstrap_is_reproducible_and_brackets_the_mean():
    values = [1.0] * 30 + [0.0] * 10
    mean, low, high = metrics.bootstrap_ci(values)
    assert mean == 0.75 and low < mean < high
    assert metrics.bootstrap_ci(values) == (mean, low, high)


def test_paired_difference_of_identical_systems_is_exactly_zero():
    assert metrics.paired_ci([1.0, 0.0, 1.0], [1.0, 0.0, 1.0]) == (0.0, 0.0, 0.0)


def test_auc_counts_ties_half():
    assert metrics.auc([0.9, 0.8], [0.1, 0.2]) == 1.0
    assert metrics.auc([0.5], [0.5]) == 0.5

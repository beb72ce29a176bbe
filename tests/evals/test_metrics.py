"""Metric arithmetic on tiny hand-made inputs."""
from __future__ import annotations

import math

import numpy as np
import pytest

from evals.cases import parse_case
from evals.metrics import METRICS_BY_NAME, aggregate, aggregate_table, fact_present, paired_difference, word_recall

FACTUAL = parse_case({"id": "f", "kind": "factual", "question": "q", "sources": [["a.md", "b.md"]],
                      "anchors": ["a.md#x"], "key_facts": ["libcurl", "50,487|50487"]})
TWO = parse_case({"id": "t", "kind": "two_source", "question": "q", "sources": [["a.md"], ["c.md"]],
                  "key_facts": ["0.38"]})
UNANSWERABLE = parse_case({"id": "u", "kind": "unanswerable", "question": "q", "note": "n"})
OFF = parse_case({"id": "o", "kind": "off_topic", "question": "q"})


def srcs(*names: str) -> list[dict]:
    return [{"source": n, "anchor": "x", "cosine": 0.5} for n in names]


def score(metric: str, case, record: dict):
    return METRICS_BY_NAME[metric].score(case, record)


def test_recall_at_k_counts_source_groups_and_accepts_any_alternative():
    record = {"mode": "retrieval", "sources": srcs("z.md", "b.md", "c.md")}
    assert score("recall@1", FACTUAL, record) == (0.0, 1.0)
    assert score("recall@3", FACTUAL, record) == (1.0, 1.0)           # b.md is an alternative of the group
    assert score("recall@1", TWO, record) == (0.0, 2.0)
    assert score("recall@3", TWO, record) == (1.0, 2.0)               # c.md found, a.md not
    assert score("recall@5", UNANSWERABLE, record) is None            # not an answerable case


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_passage():
    assert score("mrr", FACTUAL, {"sources": srcs("z.md", "y.md", "a.md")}) == (pytest.approx(1 / 3), 1.0)
    assert score("mrr", FACTUAL, {"sources": srcs("z.md")}) == (0.0, 1.0)
    assert score("mrr", FACTUAL, {"error": {"status": 502}, "sources": srcs("a.md")}) == (0.0, 1.0)


def test_key_facts_match_alternatives_case_and_number_formatting():
    assert fact_present("It needs `LibCurl` only.", "libcurl")
    assert fact_present("about 50487 calls/s", "50,487|50487")
    assert fact_present("about 50,487 calls/s", "50487")
    assert not fact_present("about 50 calls/s", "50487")
    answered = {"mode": "service", "answer": "Only libcurl [1].", "refused": False}
    assert score("key_fact_recall", FACTUAL, answered) == (1.0, 2.0)
    refused = {"mode": "service", "answer": "libcurl", "refused": True, "refusal_stage": "model"}
    assert score("key_fact_recall", FACTUAL, refused) == (0.0, 2.0)   # a refusal states no facts


@pytest.mark.parametrize("text, fact, present", [
    ("fence a47f opened", "47", False),        # inside a token
    ("limit 147 calls", "47", False),          # part of a longer number
    ("version 4.47", "47", False),             # a number continues before it
    ("47.5 ms", "47", False),                  # ... or after it
    ("exactly 47.", "47", True),               # sentence punctuation is a boundary
    ("(47)", "47", True),
    ("a redirect rule", "dir", False),
    ("the dir argument", "dir", True),
    ("libcmcp_core", "core", False),           # underscores join identifiers
    ("libcmcp_core", "core|libcmcp_core", True),
    ("dimension", "dim", False),
    ("run with --db var/x.db", "--db", True),  # a fact that starts with punctuation
    ("about 1,048,576 bytes", "1048576", True),
    ("0.50 floor", "0.5", False),
])
def test_key_facts_match_on_token_boundaries_and_numbers_as_whole_numbers(text, fact, present):
    assert fact_present(text, fact) is present


def test_context_recall_is_zero_after_a_gate_refusal():
    gate_refused = {"mode": "service", "sources": srcs("a.md"), "refused": True, "refusal_stage": "gate"}
    model_refused = {**gate_refused, "refusal_stage": "model"}
    assert score("context_recall", FACTUAL, gate_refused) == (0.0, 1.0)
    assert score("context_recall", FACTUAL, model_refused) == (1.0, 1.0)


def test_refusals_are_split_by_kind_and_stage():
    gate = {"mode": "service", "refused": True, "refusal_stage": "gate"}
    model = {"mode": "service", "refused": True, "refusal_stage": "model"}
    answer = {"mode": "service", "refused": False, "refusal_stage": None}
    assert score("wrong_refusals", FACTUAL, model) == (1.0, 1.0)
    assert score("wrong_gate_refusals", FACTUAL, model) == (0.0, 1.0)
    assert score("correct_refusals", OFF, gate) == (1.0, 1.0)
    assert score("correct_refusals", UNANSWERABLE, answer) == (0.0, 1.0)
    assert score("off_topic_gate_refusals", OFF, model) == (0.0, 1.0)
    assert score("gate_refusals", FACTUAL, gate) == (1.0, 1.0)
    assert score("model_refusals", OFF, gate) == (0.0, 1.0)
    assert score("correct_refusals", OFF, {"mode": "retrieval"}) is None
    errored = {"mode": "service", "error": {"status": 502}, "refused": True}
    assert score("correct_refusals", OFF, errored) == (0.0, 1.0)      # an error is not a refusal


def test_invalid_citation_rate_and_support_only_count_answers():
    record = {"mode": "service", "refused": False, "citations": [1, 2], "invalid_citations": [7], "support": 0.25}
    assert score("invalid_citation_rate", FACTUAL, record) == (1.0, 3.0)
    assert score("mean_support", FACTUAL, record) == (0.25, 1.0)
    assert score("mean_support", FACTUAL, {**record, "refused": True}) is None
    assert score("faithfulness", FACTUAL, record) is None             # no judge configured
    assert score("faithfulness", FACTUAL, {**record, "judge": {"asked": 4, "supported": 3}}) == (3.0, 4.0)


def test_aggregate_is_a_ratio_of_sums_with_a_deterministic_interval():
    table = np.array([[1, 1], [0, 1], [1, 2], [2, 2]], dtype=float)
    first, again = aggregate_table("recall@5", table), aggregate_table("recall@5", table)
    assert first.value == pytest.approx(4 / 6) and (first.numerator, first.denominator) == (4, 6)
    assert first.ci_low <= first.value <= first.ci_high
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    constant = aggregate_table("recall@5", np.array([[1, 1]] * 5, dtype=float))
    assert (constant.ci_low, constant.ci_high) == (1.0, 1.0)


def test_aggregate_skips_metrics_that_apply_to_no_case():
    records = {"f": {"mode": "retrieval", "sources": srcs("a.md")}}
    names = set(aggregate([FACTUAL], records))
    assert {"recall@1", "mrr"} <= names and "key_fact_recall" not in names


def test_paired_difference_of_identical_runs_is_exactly_zero():
    cases = [parse_case({"id": str(i), "kind": "factual", "question": "q", "sources": [["a.md"]],
                         "key_facts": ["x"]}) for i in range(20)]
    run = {str(i): {"mode": "retrieval", "sources": srcs("a.md" if i % 3 else "z.md")} for i in range(20)}
    diff = paired_difference(METRICS_BY_NAME["recall@1"], cases, run, run)
    assert diff.delta == 0 and diff.ci_low == 0 and diff.ci_high == 0
    worse = {k: {"mode": "retrieval", "sources": srcs("z.md")} for k in run}
    diff = paired_difference(METRICS_BY_NAME["recall@1"], cases, run, worse)
    assert math.isclose(diff.delta, -diff.base) and diff.ci_high < 0


def test_word_recall_counts_the_reference_content_words_held_as_whole_tokens():
    gold = "Set the port with `--port`; the default is 8080."
    assert word_recall(gold, "The server's port is set by --port, 8080 by default [1].") == 1.0
    assert word_recall(gold, "Ports are configured elsewhere [2].") == 0.0     # "ports" is not "port"
    assert word_recall(gold, "The default port [1].") == 0.5      # port, default of set, port, default, 8080
    assert word_recall("", "anything") == 1.0

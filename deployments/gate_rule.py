"""The Gate's rule: is any retrieved passage relevant enough to ask the model?

Cosine is the only calibrated score of the embedder (BM25 and RRF fusion are
rank-relative), so the first test is a cosine floor on the index's embedding
model: the best passage's cosine must reach `min_cosine`. An everyday question
("how do I tune a guitar?") can still reach a cosine of 0.3-0.5 on technical
documentation, but its words are not there; so, with `coverage_weight` set,
the Gate also asks for lexical agreement. `coverage` is the idf-weighted
share of the question's words found in a passage (docindex computes it per
hit, 0-1; a word the collection never uses weighs most). The question's
evidence is

    best cosine + coverage_weight × best coverage      (over the passages given)

and it passes when that reaches `min_evidence`: a high cosine makes up for
paraphrased words, many of the question's rare words make up for a modest
cosine. Passages that carry no coverage (an older or foreign MCP server) are
judged on the cosine floor alone. Figures and the sweep that chose the
settings: benchmarks/results/gate_evidence.md.

Ray-free (benchmarks replay it over recorded scores); deployments/gate.py
wraps it in a Serve deployment.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from deployments.passage import Passage


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    best_cosine: float | None   # None when nothing was retrieved


def evidence(passages: Sequence[Passage], coverage_weight: float) -> float | None:
    """best cosine + coverage_weight × best coverage; None when no passage carries coverage (or none given)."""
    coverages = [p.coverage for p in passages if p.coverage is not None]
    if not coverages:
        return None
    return max(p.cosine for p in passages) + coverage_weight * max(coverages)


def decide(passages: Sequence[Passage], *, min_cosine: float, coverage_weight: float | None = None,
           min_evidence: float | None = None) -> GateDecision:
    """Pass when the best cosine reaches `min_cosine` and, with both `coverage_weight` and
    `min_evidence` set, the evidence (module docstring) reaches `min_evidence`."""
    if not passages:
        return GateDecision(passed=False, best_cosine=None)
    best = max(p.cosine for p in passages)
    passed = best >= min_cosine
    if passed and coverage_weight is not None and min_evidence is not None:
        score = evidence(passages, coverage_weight)
        passed = score is None or score >= min_evidence
    return GateDecision(passed=passed, best_cosine=best)

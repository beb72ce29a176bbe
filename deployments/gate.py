"""Gate: refuse before the model when no passage is relevant enough.

Cosine is the only calibrated score of the embedder (BM25 and RRF fusion are
rank-relative), so the first test is a cosine floor on the index's embedding
model. Optionally the Gate also asks for lexical agreement: `coverage`, the
idf-weighted share of the question's words found in a passage (docindex
computes it per hit, 0-1; a word the collection never uses weighs most). An
everyday question ("how do I tune a guitar?") can reach a cosine of 0.3-0.35
on technical documentation, but its words are not there. With
`min_coverage` set, a question passes when some passage has
cosine ≥ min_cosine and coverage ≥ min_coverage, or (with `sure_cosine`)
when some passage has cosine ≥ sure_cosine whatever its words. Passages that
carry no coverage (an older or foreign MCP server) are judged on cosine
alone. Figures: benchmarks/results/retrieval_levers.md (the Gate section).

A refusal here costs no generation at all; questions that are in-domain but
unanswerable still pass and rely on the model's own refusal (see
`deployments/prompt.py`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ray import serve

from deployments import tracing
from deployments.passage import Passage

SPAN = "gate.decide"


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    best_cosine: float | None   # None when nothing was retrieved


def decide(passages: Sequence[Passage], *, min_cosine: float, min_coverage: float | None = None,
           sure_cosine: float | None = None) -> GateDecision:
    """Pass when some passage is relevant enough (see the module docstring)."""
    if not passages:
        return GateDecision(passed=False, best_cosine=None)
    best = max(p.cosine for p in passages)
    if min_coverage is None or all(p.coverage is None for p in passages):
        return GateDecision(passed=best >= min_cosine, best_cosine=best)
    passed = any(p.cosine >= min_cosine and (p.coverage is None or p.coverage >= min_coverage)
                 for p in passages)
    if sure_cosine is not None:
        passed = passed or best >= sure_cosine
    return GateDecision(passed=passed, best_cosine=best)


@serve.deployment
class Gate:
    """Thin deployment around `decide`; holds only the calibrated settings."""

    def __init__(self, min_cosine: float, otel_endpoint: str | None = None, *,
                 min_coverage: float | None = None, sure_cosine: float | None = None) -> None:
        tracing.setup_tracing("askdocs-gate", otel_endpoint)
        self.min_cosine = min_cosine
        self.min_coverage = min_coverage
        self.sure_cosine = sure_cosine

    async def decide(self, question: str, passages: list[Passage],
                     trace: dict[str, str] | None = None) -> GateDecision:
        with tracing.replica_span(SPAN, trace):
            return decide(passages, min_cosine=self.min_cosine, min_coverage=self.min_coverage,
                          sure_cosine=self.sure_cosine)

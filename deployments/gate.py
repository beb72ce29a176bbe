"""Gate: refuse before the model when no passage is relevant enough.

Cosine is the only calibrated score (BM25 and RRF fusion are rank-relative),
so the floor is a cosine on the index's embedding model. A refusal here costs
no generation at all; questions that are in-domain but unanswerable still
pass and rely on the model's own refusal (see `deployments/prompt.py`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ray import serve

from deployments.passage import Passage
from deployments import tracing

SPAN = "gate.decide"


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    best_cosine: float | None   # None when nothing was retrieved


def decide(passages: Sequence[Passage], *, min_cosine: float) -> GateDecision:
    """Pass when at least one passage has cosine >= `min_cosine`."""
    if not passages:
        return GateDecision(passed=False, best_cosine=None)
    best = max(p.cosine for p in passages)
    return GateDecision(passed=best >= min_cosine, best_cosine=best)


@serve.deployment
class Gate:
    """Thin deployment around `decide`; holds only the calibrated floor."""

    def __init__(self, min_cosine: float, otel_endpoint: str | None = None) -> None:
        tracing.setup_tracing("askdocs-gate", otel_endpoint)
        self.min_cosine = min_cosine

    async def decide(self, question: str, passages: list[Passage],
                     trace: dict[str, str] | None = None) -> GateDecision:
        with tracing.replica_span(SPAN, trace):
            return decide(passages, min_cosine=self.min_cosine)

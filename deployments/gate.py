"""Gate: refuse before the model when no passage is relevant enough.

The rule (a cosine floor, then, where docindex sends its noise floors, a learned
score over the passages' cosines against them; else best cosine + weight × best
coverage against a threshold) is `deployments.gate_rule.decide`, Ray-free so that
benchmarks can replay it; this module holds the Serve deployment around it.
Figures: benchmarks/results/gate_learned.md, gate_evidence.md.

A refusal here costs no generation at all; questions that are in-domain but
unanswerable still pass and rely on the model's own refusal (see
`deployments/prompt.py`).
"""
from __future__ import annotations

from ray import serve

from deployments import tracing
from deployments.gate_rule import GateDecision, GateRule, decide
from deployments.passage import Passage

__all__ = ["Gate", "GateDecision", "SPAN", "decide"]

SPAN = "gate.decide"


@serve.deployment
class Gate:
    """Thin deployment around `decide`; holds only the calibrated settings."""

    def __init__(self, rule: GateRule, otel_endpoint: str | None = None) -> None:
        tracing.setup_tracing("askdocs-gate", otel_endpoint)
        self.rule = rule

    async def decide(self, question: str, passages: list[Passage],
                     trace: dict[str, str] | None = None) -> GateDecision:
        with tracing.replica_span(SPAN, trace):
            return decide(passages, **self.rule, question=question)

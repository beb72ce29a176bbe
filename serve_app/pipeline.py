"""What the ingress needs from the rest of the graph, as one small interface.

Two implementations: `serve_app.handles.HandlePipeline` (Serve deployment
handles, the deployed graph) and `serve_app.local.LocalPipeline` (the same
deployment logic called in-process: tests, the in-process benchmark, running
the ingress under plain uvicorn).

Tracing: a pipeline that sets `propagates_trace = True` accepts a keyword
`trace` (a small `deployments.tracing.inject` carrier) on search/decide/stream/
check and opens its own spans under it. The answer path sends it only to such
pipelines, so simpler pipelines (test doubles) keep working untraced below
the ingress's own spans.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Protocol

from deployments.citations import CheckResult
from deployments.engines.base import Delta, GenParams, Prompt
from deployments.errors import Busy as Busy  # re-exported: it lived here before
from deployments.gate import GateDecision
from deployments.passage import Passage


Carrier = dict[str, str]   # {"traceparent": ...}, see deployments.tracing.inject


class Pipeline(Protocol):
    async def search(self, question: str, k: int, collection: str | None) -> list[Passage]: ...

    async def decide(self, question: str, passages: list[Passage]) -> GateDecision: ...

    def stream(self, prompt: Prompt, params: GenParams) -> AsyncIterator[Delta]:
        """An async generator: close it (`aclose()`) to cancel generation."""
        ...

    async def check(self, answer: str, passages: list[Passage]) -> CheckResult: ...

    async def info(self) -> dict[str, Any]:
        """{"engine", "model", "slots", "index": {"chunks", "version"}}"""
        ...

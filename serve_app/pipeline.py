"""What the ingress needs from the rest of the graph, as one small interface.

Two implementations: `serve_app.handles.HandlePipeline` (Serve deployment
handles, the deployed graph) and `serve_app.local.LocalPipeline` (the same
deployment logic called in-process: tests, the in-process benchmark, running
the ingress under plain uvicorn).

Tracing: every call takes a keyword `trace`, a small `deployments.tracing.inject`
carrier (None when tracing is off or the answer's span is not recorded); a
pipeline opens its own spans under it, or ignores it (they then begin traces
of their own).
"""
from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any, Protocol

from deployments.citations import CheckResult
from deployments.engines.base import Delta, GenParams, Prompt
from deployments.errors import Busy as Busy  # re-exported: it lived here before
from deployments.gate import GateDecision
from deployments.passage import Passage

Carrier = dict[str, str]   # {"traceparent": ...}, see deployments.tracing.inject


class Pipeline(Protocol):
    async def search(self, question: str, k: int, collection: str | None,
                     trace: Carrier | None = None) -> list[Passage]: ...

    async def decide(self, question: str, passages: list[Passage], trace: Carrier | None = None) -> GateDecision: ...

    def stream(self, prompt: Prompt, params: GenParams, trace: Carrier | None = None) -> AsyncGenerator[Delta, None]:
        """An async generator: close it (`aclose()`) to cancel generation."""
        ...

    async def check(self, answer: str, passages: list[Passage], trace: Carrier | None = None) -> CheckResult: ...

    async def info(self) -> dict[str, Any]:
        """`index_figures` of the Retriever's index_info; the local pipeline adds "engine", "model", "slots"."""
        ...


def index_figures(index: dict[str, Any]) -> dict[str, Any]:
    """What /healthz and GET /collections take from the Retriever's `index_info`: the index's figures, the
    query embedder's file (served.embedder) and the collection names. One shape for both pipelines."""
    return {"index": {"chunks": index["chunks"], "version": index["version"]},
            "embedder": index.get("embedder"),
            "collections": index.get("collections", [])}

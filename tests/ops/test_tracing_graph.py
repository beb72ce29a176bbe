"""The graph's answer path produces the documented trace (in process).

LocalPipeline runs the deployments' own code (stub MCP index, fake engine) in
this process, passing the same carriers the Serve handles pass, so the whole
span tree can be checked with an in-memory exporter. The cross-process
version is tests/serve/test_cluster_tracing.py.
"""
from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
import pytest_asyncio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from deployments import tracing
from deployments.generator import make_engine
from deployments.retriever import McpPool
from serve_app import ingress, local
from serve_app.answer import answer_events, new_trace_id
from serve_app.local import LocalPipeline
from serve_app.protocol import AskRequest, DoneEvent, ErrorEvent, Event
from tests.serve.conftest import fake_settings, stub_command

QUESTION = "What does the proxy answer when the queue is full?"

# name → parent's name: ingress stage spans, each with its deployment's span under it.
TREE = {
    "askdocs.answer": None,
    "retrieval": "askdocs.answer",
    "tools/call crag_search": "retrieval",
    "gate": "askdocs.answer",
    "gate.decide": "gate",
    "generation": "askdocs.answer",
    "generator.stream": "generation",
    "citations": "askdocs.answer",
    "citations.check": "citations",
}


@pytest_asyncio.fixture
async def pipeline() -> AsyncIterator[LocalPipeline]:
    settings = fake_settings()
    pool = McpPool(stub_command(), size=1, call_timeout_s=5.0)
    await pool.start()
    engine = make_engine(settings.engine_spec())
    await engine.start()
    try:
        yield LocalPipeline(settings, pool, engine)
    finally:
        await engine.close()
        await pool.close()


async def answer(pipeline: Any, question: str = QUESTION) -> tuple[str, list[Event]]:
    trace_id = new_trace_id()
    events = [e async for e in answer_events(pipeline, pipeline.settings, AskRequest(question=question),
                                             trace_id=trace_id)]
    return trace_id, events


def tree(spans: tuple[ReadableSpan, ...]) -> dict[str, str | None]:
    by_id = {s.context.span_id: s.name for s in spans}
    assert len(by_id) == len({s.name for s in spans}), "span names repeat"
    return {s.name: (by_id[s.parent.span_id] if s.parent else None) for s in spans}


async def test_one_answer_is_the_documented_tree_under_the_done_trace_id(
        memory: InMemorySpanExporter, pipeline: LocalPipeline) -> None:
    trace_id, events = await answer(pipeline)

    done = events[-1]
    assert isinstance(done, DoneEvent) and done.trace_id == trace_id
    spans = memory.get_finished_spans()
    assert tree(spans) == TREE
    assert {format(s.context.trace_id, "032x") for s in spans} == {trace_id}
    # The deployments' spans hang off a carrier (a remote parent), as across processes.
    assert all(s.parent.is_remote for s in spans if s.name in ("tools/call crag_search", "gate.decide",
                                                                "generator.stream", "citations.check"))
    assert all(s.status.status_code is StatusCode.UNSET for s in spans)


async def test_the_generation_span_has_first_token_tokens_and_finish_reason(
        memory: InMemorySpanExporter, pipeline: LocalPipeline) -> None:
    _, events = await answer(pipeline)

    done = events[-1]
    assert isinstance(done, DoneEvent)
    generation = next(s for s in memory.get_finished_spans() if s.name == "generation")
    assert [e.name for e in generation.events] == [tracing.FIRST_TOKEN_EVENT]
    assert generation.start_time < generation.events[0].timestamp < generation.end_time
    assert generation.attributes[tracing.ATTR_FINISH_REASONS] == ("stop",)
    assert generation.attributes[tracing.ATTR_INPUT_TOKENS] == done.usage.prompt_tokens > 0
    assert generation.attributes[tracing.ATTR_OUTPUT_TOKENS] == done.usage.completion_tokens > 0


async def test_a_failed_answer_carries_its_trace_id_and_an_error_trace(
        memory: InMemorySpanExporter, pipeline: LocalPipeline) -> None:
    trace_id, events = await answer(pipeline, QUESTION + " [[fake:error]]")

    error = events[-1]
    assert isinstance(error, ErrorEvent) and error.stage == "generation" and error.trace_id == trace_id
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert {format(s.context.trace_id, "032x") for s in spans.values()} == {trace_id}
    root = spans["askdocs.answer"]
    assert root.status.status_code is StatusCode.ERROR
    assert root.attributes[tracing.ATTR_ERROR_STAGE] == "generation"
    assert spans["generation"].status.status_code is StatusCode.ERROR
    assert spans["generator.stream"].status.status_code is StatusCode.ERROR   # the engine's error, in the deployment
    assert "citations" not in spans


async def test_a_gate_refusal_is_a_complete_trace_without_generation(
        memory: InMemorySpanExporter, pipeline: LocalPipeline) -> None:
    trace_id, events = await answer(pipeline, "Explain quantum chromodynamics gluon confinement")

    assert isinstance(events[-1], DoneEvent) and events[-1].refusal_stage == "gate"
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"askdocs.answer", "retrieval", "tools/call crag_search", "gate", "gate.decide"}
    assert spans["gate"].attributes["askdocs.gate.passed"] is False
    assert "askdocs.gate.score" not in spans["gate"].attributes      # the stub sends no floors: the clauses decided


class _Wrapping:
    """A test double around the real pipeline: what it does not override goes to the real one."""

    def __init__(self, inner: LocalPipeline) -> None:
        self.inner = inner
        self.settings = inner.settings

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Scored(_Wrapping):
    """A pipeline whose Gate decided by the learned score."""

    async def decide(self, question: str, passages: list[Any], trace: Any = None) -> Any:
        return replace(await self.inner.decide(question, passages, trace), passed=True, score=0.123456)


async def test_the_gate_span_carries_the_learned_score_where_it_decided(
        memory: InMemorySpanExporter, pipeline: LocalPipeline) -> None:
    _, events = await answer(_Scored(pipeline))

    assert isinstance(events[-1], DoneEvent)
    gate = next(s for s in memory.get_finished_spans() if s.name == "gate")
    assert gate.attributes["askdocs.gate.passed"] is True and gate.attributes["askdocs.gate.score"] == 0.1235


class _Untraced(_Wrapping):
    """A pipeline that drops the `trace` it is given."""

    async def search(self, question: str, k: int, collection: str | None, trace: Any = None) -> Any:
        return await self.inner.search(question, k, collection)


async def test_a_pipeline_that_drops_the_carrier_still_answers_with_the_ingress_spans(
        memory: InMemorySpanExporter, pipeline: LocalPipeline) -> None:
    trace_id, events = await answer(_Untraced(pipeline))

    assert isinstance(events[-1], DoneEvent) and events[-1].trace_id == trace_id
    names = {s.name for s in memory.get_finished_spans() if format(s.context.trace_id, "032x") == trace_id}
    assert {"askdocs.answer", "retrieval", "gate", "generation", "citations"} <= names
    assert "tools/call crag_search" not in names     # no carrier went down: its span began its own trace


async def test_with_tracing_off_no_carrier_goes_down_and_done_still_names_the_answer(
        pipeline: LocalPipeline) -> None:
    carriers: list[object] = []

    class Recording(LocalPipeline):
        async def search(self, question: str, k: int, collection: str | None, trace: Any = None) -> Any:
            carriers.append(trace)
            return await super().search(question, k, collection, trace)

    tracing.shutdown_tracing()
    tracing.setup_tracing("askdocs-test", None)          # the default: no endpoint
    try:
        trace_id, events = await answer(Recording(pipeline.settings, pipeline.pool, pipeline.engine))
    finally:
        tracing.shutdown_tracing()
    assert isinstance(events[-1], DoneEvent) and events[-1].trace_id == trace_id
    assert carriers == [None]            # unrecorded spans send nothing through the handles


# ---------------------------------------------------------------- under `uvicorn --factory`

async def test_an_answer_through_the_uvicorn_factory_forwarder_is_one_trace(
        memory: InMemorySpanExporter, pipeline: LocalPipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve_app.local:app_factory` hands the ingress a forwarder (`_Lazy`) to the pipeline its
    lifespan starts; the answer path must send it the carrier like any pipeline, or each
    deployment span starts a trace of its own (issue 16)."""
    seen: dict[str, Any] = {}
    real_create_app = ingress.create_app

    def capture(app_pipeline: Any, settings: Any) -> Any:
        seen["pipeline"] = app_pipeline
        return real_create_app(app_pipeline, settings)

    async def started(_settings: Any) -> LocalPipeline:
        return pipeline

    async def no_close() -> None:       # the fixture closes it
        return None

    monkeypatch.setattr(ingress, "create_app", capture)
    monkeypatch.setattr(local, "build_local_pipeline", started)
    monkeypatch.setattr(pipeline, "close", no_close)
    app = local.app_factory()
    forwarder = seen["pipeline"]
    assert type(forwarder) is not LocalPipeline         # what the ingress really gets
    async with app.router.lifespan_context(app):
        trace_id = new_trace_id()
        events = [e async for e in answer_events(forwarder, pipeline.settings, AskRequest(question=QUESTION),
                                                 trace_id=trace_id)]
    assert isinstance(events[-1], DoneEvent)
    spans = memory.get_finished_spans()
    assert tree(spans) == TREE
    assert {format(s.context.trace_id, "032x") for s in spans} == {trace_id}


"""deployments.tracing: the span tree of one answer, across a process boundary."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from deployments import tracing
from tests.ops.otlp_receiver import OtlpReceiver

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_endpoint() -> Iterator[None]:
    tracing.shutdown_tracing()
    tracing.setup_tracing("askdocs-test", None)
    yield
    tracing.shutdown_tracing()


def replica_search(carrier: dict[str, str]) -> None:
    """What the Retriever replica does with the carrier it was handed."""
    parent = tracing.extract(carrier)
    with tracing.child_span("tools/call crag_search", parent, **{"mcp.method.name": "tools/call"}):
        pass


def answer_one(question: str) -> str:
    """The ingress's use of the API, stage by stage (DESIGN.md §3)."""
    with tracing.answer_span(**{"askdocs.question.chars": len(question)}) as answer:
        with tracing.child_span("retrieval", answer, k=5) as retrieval:
            # A handle call pickles its arguments into another process: only
            # the carrier's JSON-able content crosses.
            replica_search(json.loads(json.dumps(tracing.inject(retrieval))))
        with tracing.child_span("gate", answer):
            pass
        with tracing.child_span("generation", answer) as generation:
            tracing.first_token_event(generation)
            tracing.record_generation(generation, input_tokens=120, output_tokens=7, finish_reason="stop")
        with tracing.child_span("citations", answer):
            pass
        return tracing.trace_id_hex(answer)


def by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, ReadableSpan]:
    named = {s.name: s for s in spans}
    assert len(named) == len(spans), "span names repeat"
    return named


def parent_name(span: ReadableSpan, named: dict[str, ReadableSpan]) -> str | None:
    if span.parent is None:
        return None
    return next(n for n, s in named.items() if s.context.span_id == span.parent.span_id)


def test_one_answer_makes_the_documented_span_tree(memory: InMemorySpanExporter) -> None:
    trace_id = answer_one("how do I ingest?")

    named = by_name(memory.get_finished_spans())
    assert {n: parent_name(s, named) for n, s in named.items()} == {
        "askdocs.answer": None,
        "retrieval": "askdocs.answer",
        "tools/call crag_search": "retrieval",
        "gate": "askdocs.answer",
        "generation": "askdocs.answer",
        "citations": "askdocs.answer",
    }
    assert {format(s.context.trace_id, "032x") for s in named.values()} == {trace_id}
    assert named["tools/call crag_search"].parent.is_remote, "the MCP span must hang off the extracted carrier"


def test_generation_span_carries_tokens_finish_reason_and_first_token(memory: InMemorySpanExporter) -> None:
    answer_one("q")

    generation = by_name(memory.get_finished_spans())["generation"]
    assert generation.attributes[tracing.ATTR_INPUT_TOKENS] == 120
    assert generation.attributes[tracing.ATTR_OUTPUT_TOKENS] == 7
    assert generation.attributes[tracing.ATTR_FINISH_REASONS] == ("stop",)
    assert [e.name for e in generation.events] == ["first_token"]
    assert generation.start_time <= generation.events[0].timestamp <= generation.end_time


def test_each_answer_is_its_own_trace(memory: InMemorySpanExporter) -> None:
    assert answer_one("a") != answer_one("b")
    roots = [s for s in memory.get_finished_spans() if s.parent is None]
    assert [s.name for s in roots] == ["askdocs.answer", "askdocs.answer"]


def test_a_failing_stage_is_an_error_span_and_the_exception_propagates(memory: InMemorySpanExporter) -> None:
    with pytest.raises(RuntimeError, match="mcp down"):
        with tracing.answer_span() as answer:
            try:
                with tracing.child_span("retrieval", answer):
                    raise RuntimeError("mcp down")
            except RuntimeError as exc:
                tracing.record_error(answer, "retrieval", exc)
                raise

    named = by_name(memory.get_finished_spans())
    assert named["retrieval"].status.status_code is StatusCode.ERROR
    assert [e.name for e in named["retrieval"].events] == ["exception"]
    assert named["askdocs.answer"].attributes[tracing.ATTR_ERROR_STAGE] == "retrieval"
    assert named["askdocs.answer"].status.status_code is StatusCode.ERROR


async def test_a_cancelled_stage_is_marked_cancelled_not_failed(memory: InMemorySpanExporter) -> None:
    async def generate() -> None:
        with tracing.child_span("generation"):
            await asyncio.sleep(10)

    task = asyncio.create_task(generate())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    (span,) = memory.get_finished_spans()
    assert span.attributes[tracing.ATTR_CANCELLED] is True
    assert span.status.status_code is StatusCode.UNSET


async def test_a_stream_consumed_by_two_tasks_keeps_one_tree(memory: InMemorySpanExporter) -> None:
    """The ingress pulls the first SSE item itself and Starlette's task the rest."""

    async def events() -> AsyncIterator[str]:
        with tracing.answer_span() as answer:
            with tracing.child_span("retrieval", answer):
                yield "sources"
            with tracing.child_span("generation", answer):
                yield "token"
            yield "done"

    stream = events()
    assert await stream.__anext__() == "sources"

    async def drain() -> list[str]:
        return [item async for item in stream]

    assert await asyncio.create_task(drain()) == ["token", "done"]
    named = by_name(memory.get_finished_spans())
    assert parent_name(named["generation"], named) == "askdocs.answer"
    assert parent_name(named["retrieval"], named) == "askdocs.answer"


def test_without_an_endpoint_nothing_is_recorded_but_trace_ids_are_real(no_endpoint: None) -> None:
    assert not tracing.is_recording()
    with tracing.answer_span() as answer:
        carrier = tracing.inject(answer)
        with tracing.child_span("retrieval", tracing.extract(carrier)) as child:
            assert not child.is_recording()
        trace_id = tracing.trace_id_hex(answer)

    assert trace_id != "0" * 32 and len(trace_id) == 32
    assert carrier["traceparent"].split("-")[1] == trace_id
    assert tracing.trace_id_hex(child) == trace_id


@pytest.mark.parametrize("carrier", [None, {}, {"traceparent": "garbage"}, "not a dict"])
def test_a_missing_or_broken_carrier_starts_a_new_trace(memory: InMemorySpanExporter, carrier: object) -> None:
    with tracing.child_span("tools/call crag_search", tracing.extract(carrier)):  # type: ignore[arg-type]
        pass
    (span,) = memory.get_finished_spans()
    assert span.parent is None


def test_setup_is_idempotent_first_call_wins(memory: InMemorySpanExporter) -> None:
    tracing.setup_tracing("another-service", "http://127.0.0.1:9/")
    with tracing.answer_span():
        pass
    (span,) = memory.get_finished_spans()
    assert span.resource.attributes["service.name"] == "askdocs-test"


@pytest.mark.parametrize(
    ("given", "url"),
    [
        ("http://c:4318", "http://c:4318/v1/traces"),
        ("http://c:4318/", "http://c:4318/v1/traces"),
        ("http://c:4318/v1/traces", "http://c:4318/v1/traces"),
    ],
)
def test_endpoint_accepts_a_base_or_a_full_traces_url(given: str, url: str) -> None:
    assert tracing.traces_url(given) == url


def test_endpoint_from_env_ignores_blank(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tracing.ENDPOINT_ENV, "  ")
    assert tracing.endpoint_from_env() is None
    monkeypatch.setenv(tracing.ENDPOINT_ENV, "http://c:4318")
    assert tracing.endpoint_from_env() == "http://c:4318"


# The replica half runs in a real second Python process, exporting on its own.
_REPLICA = textwrap.dedent(
    """
    import json, sys
    from deployments import tracing
    tracing.setup_tracing("askdocs-retriever", sys.argv[1])
    with tracing.child_span("tools/call crag_search", tracing.extract(json.loads(sys.argv[2]))):
        pass
    tracing.shutdown_tracing()
    """
)


def test_spans_from_two_processes_reach_an_otlp_http_receiver_as_one_trace() -> None:
    tracing.shutdown_tracing()
    with OtlpReceiver() as receiver:
        tracing.setup_tracing("askdocs-ingress", receiver.endpoint)
        try:
            assert tracing.is_recording()
            with tracing.answer_span() as answer:
                with tracing.child_span("retrieval", answer) as retrieval:
                    subprocess.run(
                        [sys.executable, "-c", _REPLICA, receiver.endpoint, json.dumps(tracing.inject(retrieval))],
                        cwd=REPO,
                        check=True,
                        timeout=60,
                    )
                with tracing.child_span("generation", answer) as generation:
                    tracing.record_generation(generation, input_tokens=3, output_tokens=2, finish_reason="length")
                trace_id = tracing.trace_id_hex(answer)
        finally:
            tracing.shutdown_tracing()  # flushes the batch processor
        spans = {s.name: s for s in receiver.spans()}

    assert set(spans) == {"askdocs.answer", "retrieval", "tools/call crag_search", "generation"}
    assert {s.trace_id for s in spans.values()} == {trace_id}
    assert spans["tools/call crag_search"].parent_id == spans["retrieval"].span_id
    assert spans["tools/call crag_search"].service == "askdocs-retriever"
    assert spans["retrieval"].service == "askdocs-ingress"
    assert spans["generation"].attributes()[tracing.ATTR_FINISH_REASONS] == ("length",)
    assert set(receiver.content_types) == {"application/x-protobuf"}


def test_the_answer_span_can_adopt_a_trace_id_minted_earlier(memory: InMemorySpanExporter) -> None:
    minted = uuid.uuid4().hex
    with tracing.answer_span(trace_id=minted) as answer:
        with tracing.child_span("gate", answer):
            pass
    with tracing.answer_span() as other:
        pass

    assert tracing.trace_id_hex(answer) == minted
    assert tracing.trace_id_hex(other) != minted, "adoption must not leak into the next answer"
    named = by_name(memory.get_finished_spans()[:2])
    assert named["askdocs.answer"].parent is None  # a true root, no phantom parent
    assert format(named["gate"].context.trace_id, "032x") == minted


def test_an_adopted_id_does_not_leak_to_other_threads(memory: InMemorySpanExporter) -> None:
    minted = uuid.uuid4().hex
    seen: list[str] = []

    def other_thread() -> None:
        with tracing.answer_span() as span:
            seen.append(tracing.trace_id_hex(span))

    with tracing._ids.adopting(int(minted, 16)):  # as during the adopting start_span call
        worker = threading.Thread(target=other_thread)
        worker.start()
        worker.join()
    assert seen and seen[0] != minted


def test_adoption_also_works_when_nothing_is_recorded(no_endpoint: None) -> None:
    minted = uuid.uuid4().hex
    with tracing.answer_span(trace_id=minted) as answer:
        assert tracing.inject(answer)["traceparent"].split("-")[1] == minted


@pytest.mark.parametrize("bad", ["", "xyz", "0" * 32, "a" * 31, "g" * 32, "0x" + "a" * 30, "a_" + "b" * 30, " " + "a" * 31])
def test_a_malformed_trace_id_is_refused(memory: InMemorySpanExporter, bad: str) -> None:
    with pytest.raises(ValueError, match="32 hex digits"):
        with tracing.answer_span(trace_id=bad):
            pass


def test_every_public_name_exists() -> None:
    assert all(hasattr(tracing, name) for name in tracing.__all__)


def test_a_dead_collector_never_slows_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Order, not time: 50 answers finish while an export to a dead collector
    is stuck in the batch processor's thread (it can only finish after them)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "1")  # bounds only the final flush
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "1")            # export the first spans at once
    exporting, release, exported = threading.Event(), threading.Event(), threading.Event()
    real_export = OTLPSpanExporter.export

    def stuck_export(self: OTLPSpanExporter, spans: object) -> object:
        exporting.set()
        release.wait(300)
        try:
            return real_export(self, spans)
        finally:
            exported.set()

    monkeypatch.setattr(OTLPSpanExporter, "export", stuck_export)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    tracing.shutdown_tracing()
    tracing.setup_tracing("askdocs-ingress", dead)
    try:
        answer_one("q")
        assert exporting.wait(60), "the batch processor never started an export"
        answered = [answer_one("q") for _ in range(50)]
        # Had an answer waited on the export, the export would have finished first.
        assert len(set(answered)) == 50 and not exported.is_set()
    finally:
        release.set()
        tracing.shutdown_tracing()
    assert exported.is_set()

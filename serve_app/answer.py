"""One answer, as a sequence of protocol events: retrieve → gate → generate →
check. HTTP-free, so the SSE and JSON modes (and tests) share it.

Errors that must become an HTTP status (`Busy` → 503, `InvalidRequest` →
422: an unknown collection, a question the index cannot search) are raised;
they can only happen before the `sources` event, which is yielded as soon as
the answer cannot be a 503 any more (the Gate refused, or the Generator
accepted the request: before prefill). The ingress pulls up to it before it
commits to a 200. Every other failure becomes the one terminal `ErrorEvent`
(after `sources`, except a retrieval failure, which has none).

Tracing (DESIGN.md §8, docs/tracing.md): the answer is the root span
`askdocs.answer`, adopting the `trace_id` the ingress minted, so logs,
`done`/`error` and the trace share one id; each stage is a child span, and
its carrier goes down to the deployment that does the work. Spans get their
parent explicitly because the stream is pulled from two tasks.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from opentelemetry.trace import Span

from deployments import tracing
from deployments.citations import CheckResult
from deployments.engines.base import GenParams
from deployments.errors import AskdocsError, Busy, EngineError, InvalidRequest, RetrievalError
from deployments.gate_rule import GATE_PASSAGES
from deployments.prompt import REFUSAL_SENTENCE, build_prompt
from deployments.scaffold import ScaffoldFilter
from serve_app.pipeline import Pipeline
from serve_app.protocol import (
    AskRequest,
    DoneEvent,
    ErrorEvent,
    Event,
    EvidenceOut,
    SourceOut,
    SourcesEvent,
    Timings,
    TokenEvent,
    UsageOut,
)
from serve_app.settings import Settings
from serve_app.stats import AnswerRecord, AnswerStats

log = logging.getLogger("askdocs.answer")


def new_trace_id() -> str:
    return uuid.uuid4().hex


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 2)


@dataclass
class _Clock:
    start: float
    timings: Timings


async def answer_events(pipeline: Pipeline, settings: Settings, req: AskRequest, *,
                        trace_id: str, stats: AnswerStats | None = None) -> AsyncGenerator[Event, None]:
    """sources → token* → done | error (exactly one terminal event)."""
    clock = _Clock(time.perf_counter(), Timings())
    record = AnswerRecord("error", "internal", {})
    ended = False       # the terminal event is out: a stream closed after it (SSE head) is no cancellation
    try:
        with tracing.answer_span(trace_id=trace_id) as span:
            stages = _Stages(pipeline, span, clock.timings, trace_id)
            async for event in _run(stages, settings, req, trace_id, clock):
                if isinstance(event, DoneEvent):
                    record = AnswerRecord("refused" if event.refused else "answered", event.refusal_stage,
                                          event.timings.model_dump(), event.usage.prompt_tokens,
                                          event.usage.completion_tokens, event.cost_usd)
                elif isinstance(event, ErrorEvent):
                    record = AnswerRecord("error", event.stage, clock.timings.model_dump())
                ended = isinstance(event, (DoneEvent, ErrorEvent))
                yield event
    except (Busy, InvalidRequest):
        record = AnswerRecord("rejected", None, {})
        raise
    except (asyncio.CancelledError, GeneratorExit):
        if not ended:
            record = AnswerRecord("cancelled", None, clock.timings.model_dump())
        raise
    finally:
        if stats is not None and record.outcome != "rejected":
            stats.record(record)


class _Stages:
    """The pipeline's four calls, each run through `stage()` under the answer span.

    Every call carries the stage span as `trace` (None when it is not
    recorded, see serve_app.pipeline); the stage span itself is made either way.
    """

    def __init__(self, pipeline: Pipeline, answer: Span, timings: Timings, trace_id: str) -> None:
        self.pipeline = pipeline
        self.answer = answer
        self.timings = timings
        self.trace_id = trace_id

    def carrier(self, span: Span) -> dict[str, Any]:
        # An unrecorded span (tracing off) has nothing to continue: send None.
        return {"trace": tracing.inject(span) if span.is_recording() else None}

    def stage(self, name: str, *, event_stage: str, expected: type[AskdocsError] | None, fallback: str,
              timing: str | None = None, committed: bool = False, **attrs: Any) -> _Stage:
        return _Stage(self, name, event_stage=event_stage, expected=expected, fallback=fallback,
                      timing=timing, committed=committed, attrs=attrs)


class _Stage:
    """One stage of an answer: its span (a child of the answer span), its timer,
    and its failure mapped to the one terminal `ErrorEvent`.

    Used as `with stages.stage(...) as stage:`; a failure inside is swallowed
    and left in `stage.failure` for the caller to yield. `Busy` and
    `InvalidRequest` pass through while the answer is not `committed` (no
    `sources` sent yet): the ingress can still answer 503/422. An `expected`
    error's message is safe to show; anything else is logged with its
    traceback and the client gets `fallback`.
    """

    def __init__(self, stages: _Stages, name: str, *, event_stage: str, expected: type[AskdocsError] | None,
                 fallback: str, timing: str | None, committed: bool, attrs: dict[str, Any]) -> None:
        self.stages = stages
        self.name = name
        self.event_stage = event_stage
        self.expected = expected
        self.fallback = fallback
        self.timing = timing
        self.committed = committed      # sources are out: every failure is an error event
        self.parts: list[str] = []          # the answer text streamed before a failure (joined only then)
        self.failure: ErrorEvent | None = None
        self._span_cm = tracing.child_span(name, stages.answer, **attrs)
        self.started = 0.0      # perf_counter when the stage began

    def __enter__(self) -> _Stage:
        self.span = self._span_cm.__enter__()
        self.started = time.perf_counter()
        return self

    def _expected(self, exc: BaseException) -> bool:
        return self.expected is not None and isinstance(exc, self.expected)

    @property
    def carrier(self) -> dict[str, Any]:
        return self.stages.carrier(self.span)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool:
        if self.timing is not None and (exc is None or self._expected(exc)):
            setattr(self.stages.timings, self.timing, _ms(self.started))
        if not isinstance(exc, Exception) or (not self.committed and isinstance(exc, (Busy, InvalidRequest))):
            return bool(self._span_cm.__exit__(exc_type, exc, tb))      # success, cancellation, or a 503/422
        if isinstance(exc, Busy):
            message = "the model is at capacity"
        elif self._expected(exc):
            message = str(exc)
            if isinstance(exc, EngineError) and exc.partial:
                self.parts = [exc.partial]
        else:
            log.exception("%s failed [trace %s]", self.name, self.stages.trace_id, exc_info=exc)
            message = self.fallback
        tracing.record_error(self.span, self.event_stage, exc)
        tracing.record_error(self.stages.answer, self.event_stage, exc)
        self._span_cm.__exit__(None, None, None)
        self.failure = ErrorEvent(stage=self.event_stage, message=message, partial="".join(self.parts) or None,
                                  trace_id=self.stages.trace_id)
        return True


async def _run(stages: _Stages, settings: Settings, req: AskRequest, trace_id: str,
               clock: _Clock) -> AsyncIterator[Event]:
    pipeline = stages.pipeline
    t = clock.timings
    k = min(req.k or settings.default_k, settings.prompt_max_sources)

    with stages.stage("retrieval", event_stage=RetrievalError.stage, expected=RetrievalError,
                      fallback="retrieval failed", timing="retrieval_ms", k=k) as stage:
        # The Gate weighs the first GATE_PASSAGES whatever k is (its floors and score count that many).
        retrieved = await pipeline.search(req.question, max(k, GATE_PASSAGES), req.collection, **stage.carrier)
    if stage.failure is not None:
        yield stage.failure
        return
    passages = retrieved[:k]
    # Sent once the answer cannot become a 503 any more: the Gate refused (no model
    # call), or the Generator accepted the request (its stream's first item).
    sources = SourcesEvent(sources=[SourceOut(n=n, source=p.source, anchor=p.anchor, title=p.title, text=p.text,
                                              cosine=p.cosine, bm25=p.bm25, fusion=p.fusion, url=p.url)
                                    for n, p in enumerate(passages, start=1)])

    with stages.stage("gate", event_stage="internal", expected=None, fallback="the gate failed",
                      timing="gate_ms") as stage:
        decision = await pipeline.decide(req.question, retrieved[:GATE_PASSAGES], **stage.carrier)
        stage.span.set_attribute("askdocs.gate.passed", decision.passed)
        if decision.score is not None:      # how far over (or under) the learned score's threshold
            stage.span.set_attribute("askdocs.gate.score", round(decision.score, 4))
        if decision.absent:                 # names of the question its collection never uses (the name clause)
            stage.span.set_attribute("askdocs.gate.absent_names", list(decision.absent))
    if stage.failure is not None:
        yield stage.failure
        return
    if not decision.passed:
        yield sources
        yield TokenEvent(text=REFUSAL_SENTENCE)
        t.total_ms = _ms(clock.start)
        yield _done(REFUSAL_SENTENCE, CheckResult(refused=True), "gate", False, UsageOut(), t, 0.0, trace_id,
                    decision.unmentioned)
        return

    prompt = build_prompt(req.question, passages, settings.prompt_limits(), secret=settings.prompt_secret_bytes())
    params = GenParams(request_id=trace_id, max_tokens=settings.max_tokens, temperature=settings.temperature,
                       constrain_citations=settings.constrain_citations)
    scaffold = ScaffoldFilter(prompt.nonce)     # nothing of the prompt's scaffolding reaches the client
    parts: list[str] = []
    finish = None
    usage = UsageOut()
    with stages.stage("generation", event_stage=EngineError.stage, expected=EngineError,
                      fallback="generation failed", timing="generation_ms") as stage:
        stream = pipeline.stream(prompt, params, **stage.carrier)
        try:
            # The first item means the Generator accepted the request: the deployed one
            # sends an empty delta when its replica takes the request (a slot, before
            # prefill). A full queue raises Busy here, while the ingress can still say 503.
            stage.parts = parts
            next_delta = await anext(stream, None)
            yield sources
            stage.committed = True
            while (delta := next_delta) is not None:
                next_delta = None
                text = scaffold.feed(delta.text) if delta.text else ""
                if delta.finish_reason is not None:
                    text += scaffold.flush()
                if text:
                    if not parts:
                        t.ttft_ms = _ms(stage.started)
                        tracing.first_token_event(stage.span)
                    parts.append(text)
                    yield TokenEvent(text=text)
                if delta.finish_reason is not None:
                    finish = delta.finish_reason
                    if delta.usage is not None:
                        usage = UsageOut(prompt_tokens=delta.usage.prompt_tokens,
                                         completion_tokens=delta.usage.completion_tokens)
                    tracing.record_generation(stage.span, input_tokens=usage.prompt_tokens,
                                              output_tokens=usage.completion_tokens, finish_reason=finish)
                    break
                next_delta = await anext(stream, None)
        finally:
            await stream.aclose()       # cancels generation when we leave early (client gone)
    if stage.failure is not None:
        if not stage.committed:
            yield sources
        yield stage.failure
        return

    answer = "".join(parts).strip()
    with stages.stage("citations", event_stage="internal", expected=None,
                      fallback="the answer could not be checked", committed=True) as stage:
        stage.parts = [answer]
        result = await pipeline.check(answer, passages, **stage.carrier)
        stage.span.set_attribute("askdocs.citations.invalid", len(result.invalid_citations))
    if stage.failure is not None:
        yield stage.failure
        return
    t.total_ms = _ms(clock.start)
    yield _done(answer, result, "model" if result.refused else None, finish == "length", usage, t,
                settings.cost_usd(usage.prompt_tokens, usage.completion_tokens), trace_id, decision.unmentioned)


def _done(answer: str, result: CheckResult, refusal_stage: str | None, truncated: bool, usage: UsageOut,
          timings: Timings, cost: float, trace_id: str, unknown: tuple[str, ...] = ()) -> DoneEvent:
    return DoneEvent(answer=answer, citations=result.citations, invalid_citations=result.invalid_citations,
                     unsupported_sentences=result.unsupported_sentences, support=result.support,
                     evidence=[EvidenceOut(sentence=e.sentence, n=e.n, start=e.start, end=e.end, overlap=e.overlap)
                               for e in result.evidence],
                     refused=result.refused, refusal_stage=refusal_stage, unknown_names=list(unknown),
                     truncated=truncated, usage=usage, timings=timings, cost_usd=cost, trace_id=trace_id)


__all__ = ["answer_events", "new_trace_id", "AskdocsError"]

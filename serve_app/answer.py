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
from dataclasses import dataclass
from typing import Any, AsyncIterator

from opentelemetry.trace import Span

from deployments.citations import CheckResult
from deployments.engines.base import GenParams
from deployments.errors import AskdocsError, Busy, EngineError, InvalidRequest, RetrievalError
from deployments.prompt import REFUSAL_SENTENCE, build_prompt
from deployments.scaffold import ScaffoldFilter
from deployments import tracing
from serve_app.pipeline import Pipeline
from serve_app.protocol import (AskRequest, DoneEvent, ErrorEvent, Event, EvidenceOut, SourceOut, SourcesEvent,
                                Timings, TokenEvent, UsageOut)
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
                        trace_id: str, stats: AnswerStats | None = None) -> AsyncIterator[Event]:
    """sources → token* → done | error (exactly one terminal event)."""
    clock = _Clock(time.perf_counter(), Timings())
    record = AnswerRecord("error", "internal", {})
    ended = False       # the terminal event is out: a stream closed after it (SSE head) is no cancellation
    try:
        with tracing.answer_span(trace_id=trace_id) as span:
            stages = _Stages(pipeline, span)
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
    """The pipeline's four calls, each inside its stage span under the answer span.

    A carrier goes down only to a pipeline that takes one (`propagates_trace`,
    see serve_app.pipeline); the stage span itself is made either way.
    """

    def __init__(self, pipeline: Pipeline, answer: Span) -> None:
        self.pipeline = pipeline
        self.answer = answer
        # Looked up on the class: a wrapper that forwards attributes with
        # __getattr__ (test doubles) must declare it itself, since its own
        # methods may not take `trace`.
        self._propagates = bool(getattr(type(pipeline), "propagates_trace", False))

    def carrier(self, span: Span) -> dict[str, Any]:
        # An unrecorded span (tracing off) has nothing to continue: send nothing.
        return {"trace": tracing.inject(span)} if self._propagates and span.is_recording() else {}

    def failed(self, stage: str, exc: BaseException) -> None:
        tracing.record_error(self.answer, stage, exc)


async def _run(stages: _Stages, settings: Settings, req: AskRequest, trace_id: str,
               clock: _Clock) -> AsyncIterator[Event]:
    pipeline, answer_span = stages.pipeline, stages.answer
    t = clock.timings
    k = min(req.k or settings.default_k, settings.prompt_max_sources)

    step = time.perf_counter()
    try:
        with tracing.child_span("retrieval", answer_span, k=k) as span:
            passages = await pipeline.search(req.question, k, req.collection, **stages.carrier(span))
    except (Busy, InvalidRequest):
        raise
    except RetrievalError as e:
        t.retrieval_ms = _ms(step)
        stages.failed("retrieval", e)
        yield ErrorEvent(stage="retrieval", message=str(e), trace_id=trace_id)
        return
    except Exception as e:
        log.exception("retrieval failed [trace %s]", trace_id)
        stages.failed("retrieval", e)
        yield ErrorEvent(stage="retrieval", message="retrieval failed", trace_id=trace_id)
        return
    t.retrieval_ms = _ms(step)
    passages = passages[:k]
    # Sent once the answer cannot become a 503 any more: the Gate refused (no model
    # call), or the Generator accepted the request (its stream's first item).
    sources = SourcesEvent(sources=[SourceOut(n=n, source=p.source, anchor=p.anchor, title=p.title, text=p.text,
                                              cosine=p.cosine, bm25=p.bm25, fusion=p.fusion)
                                    for n, p in enumerate(passages, start=1)])

    step = time.perf_counter()
    with tracing.child_span("gate", answer_span) as span:
        decision = await pipeline.decide(req.question, passages, **stages.carrier(span))
        span.set_attribute("askdocs.gate.passed", decision.passed)
    t.gate_ms = _ms(step)
    if not decision.passed:
        yield sources
        yield TokenEvent(text=REFUSAL_SENTENCE)
        t.total_ms = _ms(clock.start)
        yield _done(REFUSAL_SENTENCE, CheckResult(refused=True), "gate", False, UsageOut(), t, 0.0, trace_id)
        return

    prompt = build_prompt(req.question, passages, settings.prompt_limits(), secret=settings.prompt_secret_bytes())
    params = GenParams(request_id=trace_id, max_tokens=settings.max_tokens, temperature=settings.temperature,
                       constrain_citations=settings.constrain_citations)
    scaffold = ScaffoldFilter(prompt.nonce)     # nothing of the prompt's scaffolding reaches the client
    parts: list[str] = []
    finish = None
    usage = UsageOut()
    step = time.perf_counter()
    with tracing.child_span("generation", answer_span) as gen_span:
        stream = pipeline.stream(prompt, params, **stages.carrier(gen_span))
        sent_sources = False
        try:
            # The first item means the Generator accepted the request: the deployed one
            # sends an empty delta when its replica takes the request (a slot, before
            # prefill). A full queue raises Busy here, while the ingress can still say 503.
            next_delta = await anext(stream, None)
            yield sources
            sent_sources = True
            while (delta := next_delta) is not None:
                next_delta = None
                text = scaffold.feed(delta.text) if delta.text else ""
                if delta.finish_reason is not None:
                    text += scaffold.flush()
                if text:
                    if not parts:
                        t.ttft_ms = _ms(step)
                        tracing.first_token_event(gen_span)
                    parts.append(text)
                    yield TokenEvent(text=text)
                if delta.finish_reason is not None:
                    finish = delta.finish_reason
                    if delta.usage is not None:
                        usage = UsageOut(prompt_tokens=delta.usage.prompt_tokens,
                                         completion_tokens=delta.usage.completion_tokens)
                    tracing.record_generation(gen_span, input_tokens=usage.prompt_tokens,
                                              output_tokens=usage.completion_tokens, finish_reason=finish)
                    break
                next_delta = await anext(stream, None)
        except Busy:
            if not sent_sources:
                raise
            _failed_stage(gen_span, stages, Busy())
            yield ErrorEvent(stage="generation", message="the model is at capacity", trace_id=trace_id)
            return
        except EngineError as e:
            t.generation_ms = _ms(step)
            _failed_stage(gen_span, stages, e)
            if not sent_sources:
                yield sources
            yield ErrorEvent(stage="generation", message=str(e), partial=e.partial or "".join(parts) or None,
                             trace_id=trace_id)
            return
        except Exception as e:
            log.exception("generation failed [trace %s]", trace_id)
            _failed_stage(gen_span, stages, e)
            if not sent_sources:
                yield sources
            yield ErrorEvent(stage="generation", message="generation failed",
                             partial="".join(parts) or None, trace_id=trace_id)
            return
        finally:
            await stream.aclose()       # cancels generation when we leave early (client gone)
    t.generation_ms = _ms(step)

    answer = "".join(parts).strip()
    try:
        with tracing.child_span("citations", answer_span) as span:
            result = await pipeline.check(answer, passages, **stages.carrier(span))
            span.set_attribute("askdocs.citations.invalid", len(result.invalid_citations))
    except Exception as e:
        log.exception("citation check failed [trace %s]", trace_id)
        stages.failed("internal", e)
        yield ErrorEvent(stage="internal", message="the answer could not be checked", partial=answer,
                         trace_id=trace_id)
        return
    t.total_ms = _ms(clock.start)
    yield _done(answer, result, "model" if result.refused else None, finish == "length", usage, t,
                settings.cost_usd(usage.prompt_tokens, usage.completion_tokens), trace_id)


def _failed_stage(span: Span, stages: _Stages, exc: BaseException) -> None:
    """A failure caught inside the stage span (it becomes an error event, so
    the span's own exception handling never sees it)."""
    tracing.record_error(span, "generation", exc)
    stages.failed("generation", exc)


def _done(answer: str, result: CheckResult, refusal_stage: str | None, truncated: bool, usage: UsageOut,
          timings: Timings, cost: float, trace_id: str) -> DoneEvent:
    return DoneEvent(answer=answer, citations=result.citations, invalid_citations=result.invalid_citations,
                     unsupported_sentences=result.unsupported_sentences, support=result.support,
                     evidence=[EvidenceOut(sentence=e.sentence, n=e.n, start=e.start, end=e.end, overlap=e.overlap)
                               for e in result.evidence],
                     refused=result.refused, refusal_stage=refusal_stage, truncated=truncated, usage=usage,
                     timings=timings, cost_usd=cost, trace_id=trace_id)


__all__ = ["answer_events", "new_trace_id", "AskdocsError"]

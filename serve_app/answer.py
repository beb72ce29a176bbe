"""One answer, as a sequence of protocol events: retrieve → gate → generate →
check. HTTP-free, so the SSE and JSON modes (and tests) share it.

Errors that must become an HTTP status (`Busy` → 503, `UnknownCollection` →
422) are raised; they can only happen before the first token, which the
ingress pulls before it commits to a 200. Every other failure becomes the
one terminal `ErrorEvent`.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from dataclasses import dataclass
from typing import AsyncIterator

from deployments.citations import CheckResult
from deployments.engines.base import GenParams
from deployments.errors import AskdocsError, EngineError, RetrievalError, UnknownCollection
from deployments.prompt import REFUSAL_SENTENCE, build_prompt
from serve_app.pipeline import Busy, Pipeline
from serve_app.protocol import (AskRequest, DoneEvent, ErrorEvent, Event, SourceOut, SourcesEvent, Timings,
                                TokenEvent, UsageOut)
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
    try:
        async for event in _run(pipeline, settings, req, trace_id, clock):
            if isinstance(event, DoneEvent):
                record = AnswerRecord("refused" if event.refused else "answered", event.refusal_stage,
                                      event.timings.model_dump(), event.usage.prompt_tokens,
                                      event.usage.completion_tokens, event.cost_usd)
            elif isinstance(event, ErrorEvent):
                record = AnswerRecord("error", event.stage, clock.timings.model_dump())
            yield event
    except (Busy, UnknownCollection):
        record = AnswerRecord("rejected", None, {})
        raise
    except (asyncio.CancelledError, GeneratorExit):
        record = AnswerRecord("cancelled", None, clock.timings.model_dump())
        raise
    finally:
        if stats is not None and record.outcome != "rejected":
            stats.record(record)


async def _run(pipeline: Pipeline, settings: Settings, req: AskRequest, trace_id: str,
               clock: _Clock) -> AsyncIterator[Event]:
    t = clock.timings
    k = min(req.k or settings.default_k, settings.prompt_max_sources)

    step = time.perf_counter()
    try:
        passages = await pipeline.search(req.question, k, req.collection)
    except (Busy, UnknownCollection):
        raise
    except RetrievalError as e:
        t.retrieval_ms = _ms(step)
        yield ErrorEvent(stage="retrieval", message=str(e), trace_id=trace_id)
        return
    except Exception:
        log.exception("retrieval failed [trace %s]", trace_id)
        yield ErrorEvent(stage="retrieval", message="retrieval failed", trace_id=trace_id)
        return
    t.retrieval_ms = _ms(step)
    passages = passages[:k]
    yield SourcesEvent(sources=[SourceOut(n=n, source=p.source, anchor=p.anchor, title=p.title, text=p.text,
                                          cosine=p.cosine, bm25=p.bm25, fusion=p.fusion)
                                for n, p in enumerate(passages, start=1)])

    step = time.perf_counter()
    decision = await pipeline.decide(req.question, passages)
    t.gate_ms = _ms(step)
    if not decision.passed:
        yield TokenEvent(text=REFUSAL_SENTENCE)
        t.total_ms = _ms(clock.start)
        yield _done(REFUSAL_SENTENCE, CheckResult(refused=True), "gate", False, UsageOut(), t, 0.0, trace_id)
        return

    prompt = build_prompt(req.question, passages, settings.prompt_limits())
    params = GenParams(request_id=trace_id, max_tokens=settings.max_tokens, temperature=settings.temperature)
    parts: list[str] = []
    finish = None
    usage = UsageOut()
    step = time.perf_counter()
    stream = pipeline.stream(prompt, params)
    try:
        async for delta in stream:
            if delta.text:
                if not parts:
                    t.ttft_ms = _ms(step)
                parts.append(delta.text)
                yield TokenEvent(text=delta.text)
            if delta.finish_reason is not None:
                finish = delta.finish_reason
                if delta.usage is not None:
                    usage = UsageOut(prompt_tokens=delta.usage.prompt_tokens,
                                     completion_tokens=delta.usage.completion_tokens)
                break
    except Busy:
        raise
    except EngineError as e:
        t.generation_ms = _ms(step)
        yield ErrorEvent(stage="generation", message=str(e), partial=e.partial or "".join(parts) or None,
                         trace_id=trace_id)
        return
    except Exception:
        log.exception("generation failed [trace %s]", trace_id)
        yield ErrorEvent(stage="generation", message="generation failed",
                         partial="".join(parts) or None, trace_id=trace_id)
        return
    finally:
        await stream.aclose()       # cancels generation when we leave early (client gone)
    t.generation_ms = _ms(step)

    answer = "".join(parts).strip()
    try:
        result = await pipeline.check(answer, passages)
    except Exception:
        log.exception("citation check failed [trace %s]", trace_id)
        yield ErrorEvent(stage="internal", message="the answer could not be checked", partial=answer,
                         trace_id=trace_id)
        return
    t.total_ms = _ms(clock.start)
    yield _done(answer, result, "model" if result.refused else None, finish == "length", usage, t,
                settings.cost_usd(usage.prompt_tokens, usage.completion_tokens), trace_id)


def _done(answer: str, result: CheckResult, refusal_stage: str | None, truncated: bool, usage: UsageOut,
          timings: Timings, cost: float, trace_id: str) -> DoneEvent:
    return DoneEvent(answer=answer, citations=result.citations, invalid_citations=result.invalid_citations,
                     unsupported_sentences=result.unsupported_sentences, support=result.support,
                     refused=result.refused, refusal_stage=refusal_stage, truncated=truncated, usage=usage,
                     timings=timings, cost_usd=cost, trace_id=trace_id)


__all__ = ["answer_events", "new_trace_id", "AskdocsError"]

"""One OpenTelemetry trace per answer, carried across Ray Serve processes.

Span tree of one answer (DESIGN.md §8; docs/tracing.md lists every attribute)::

    askdocs.answer                      ingress, root
    ├─ retrieval                        ingress, around Retriever.search
    │  └─ tools/call crag_search        Retriever replica (another process), via the carrier
    ├─ gate
    │  └─ gate.decide                   Gate replica
    ├─ generation                       event first_token; attrs tokens, finish reason
    │  └─ generator.stream              Generator replica
    └─ citations
       └─ citations.check               CitationChecker replica

Two choices shape this module:

* **Parents are passed explicitly**, never looked up in contextvars. The
  ingress pulls the first SSE item in the request task and the rest in
  Starlette's streaming task; a span made "current" in one task is invisible
  (and cannot be detached) in the other. ``child_span(name, parent=...)``
  works the same in any task.
* **Each Serve deployment runs in its own process**, so context crosses a
  handle call as a small W3C ``traceparent`` dict (``inject``) passed as an
  ordinary argument, and is turned back into a parent with ``extract``.

Without an endpoint the provider samples nothing: spans are non-recording
and nothing is exported, yet trace ids are still real random ids, so
``done``/``error`` and the logs carry a usable ``trace_id`` either way.
The provider is private to this module (not the OpenTelemetry global), so it
never fights Ray's own tracing setup and tests can replace it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

__all__ = [
    "ANSWER_SPAN",
    "ATTR_CANCELLED",
    "ATTR_ERROR_STAGE",
    "ATTR_FINISH_REASONS",
    "ATTR_INPUT_TOKENS",
    "ATTR_OUTPUT_TOKENS",
    "ENDPOINT_ENV",
    "FIRST_TOKEN_EVENT",
    "TRACES_PATH",
    "answer_span",
    "child_span",
    "extract",
    "first_token_event",
    "inject",
    "endpoint_from_env",
    "is_recording",
    "record_error",
    "record_generation",
    "replica_span",
    "setup_tracing",
    "shutdown_tracing",
    "trace_id_hex",
    "traces_url",
]

log = logging.getLogger(__name__)

ENDPOINT_ENV = "ASKDOCS_OTEL_ENDPOINT"
TRACES_PATH = "/v1/traces"

ANSWER_SPAN = "askdocs.answer"
FIRST_TOKEN_EVENT = "first_token"
# Generation attributes use OpenTelemetry's gen_ai names so trace backends
# that know LLM spans display them without configuration.
ATTR_INPUT_TOKENS = "gen_ai.usage.input_tokens"
ATTR_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
ATTR_FINISH_REASONS = "gen_ai.response.finish_reasons"
ATTR_ERROR_STAGE = "askdocs.error.stage"
ATTR_CANCELLED = "askdocs.cancelled"

_TRACER_NAME = "askdocs"
_propagator = TraceContextTextMapPropagator()


@dataclass(frozen=True)
class _Setup:
    provider: TracerProvider
    tracer: trace.Tracer
    service_name: str
    endpoint: str | None
    recording: bool


_lock = threading.Lock()
_setup: _Setup | None = None


class _IdGenerator(RandomIdGenerator):
    """Random ids, except a root span may adopt a trace id minted earlier.

    The ingress names an answer (for its logs, for 503s) before the answer
    span exists; adopting that id keeps one id everywhere without a fake
    parent span (which trace viewers show as "missing parent"). The id to
    adopt is thread-local and set only around one synchronous ``start_span``
    call, so no other span can pick it up.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    @contextmanager
    def adopting(self, trace_id: int) -> Iterator[None]:
        self._local.trace_id = trace_id
        try:
            yield
        finally:
            self._local.trace_id = None

    def generate_trace_id(self) -> int:
        adopted = getattr(self._local, "trace_id", None)
        return adopted if adopted is not None else super().generate_trace_id()


_ids = _IdGenerator()
_TRACE_ID = re.compile(r"[0-9a-fA-F]{32}")


def traces_url(endpoint: str) -> str:
    """``http://collector:4318`` → ``http://collector:4318/v1/traces``; a full URL is kept."""
    endpoint = endpoint.rstrip("/")
    return endpoint if endpoint.endswith(TRACES_PATH) else endpoint + TRACES_PATH


def endpoint_from_env() -> str | None:
    """``ASKDOCS_OTEL_ENDPOINT`` if set and not blank."""
    value = os.environ.get(ENDPOINT_ENV, "").strip()
    return value or None


def setup_tracing(
    service_name: str,
    endpoint: str | None = None,
    *,
    exporter: SpanExporter | None = None,
) -> None:
    """Configure this process's tracer once; later calls change nothing.

    ``endpoint`` is the OTLP/HTTP collector (``ASKDOCS_OTEL_ENDPOINT``; base
    URL or full ``…/v1/traces`` URL); spans leave in batches on a background
    thread, so the request path never waits for the collector. ``None`` and
    no ``exporter`` means sampling off: nothing recorded, nothing exported.
    ``exporter`` (tests, benchmarks) is used synchronously instead.

    First call wins because in ``_local_testing_mode`` every deployment shares
    one process and each calls this in its constructor.
    """
    _configure(service_name, endpoint, exporter)


def _configure(service_name: str, endpoint: str | None, exporter: SpanExporter | None) -> _Setup:
    global _setup
    with _lock:
        if _setup is not None:
            if (_setup.service_name, _setup.endpoint) != (service_name, endpoint):
                log.debug("tracing already set up for %s; ignoring %s", _setup.service_name, service_name)
            return _setup
        recording = exporter is not None or bool(endpoint)
        # ParentBased: a replica follows the ingress's sampling decision
        # carried in the traceparent flags, so a trace is never half-exported.
        sampler = ParentBased(ALWAYS_ON) if recording else ALWAYS_OFF
        provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}), sampler=sampler, id_generator=_ids
        )
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
        elif endpoint:
            # Imported here: the exporter pulls in requests/protobuf, which a
            # process without an endpoint never needs.
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=traces_url(endpoint))))
        _setup = _Setup(provider, provider.get_tracer(_TRACER_NAME), service_name, endpoint, recording)
        return _setup


def shutdown_tracing() -> None:
    """Flush pending spans and forget the setup (replica shutdown, tests)."""
    global _setup
    with _lock:
        if _setup is None:
            return
        _setup.provider.shutdown()
        _setup = None


def _tracer() -> trace.Tracer:
    # A process that never called setup_tracing still gets valid trace ids.
    setup = _setup or _configure(_TRACER_NAME, None, None)
    return setup.tracer


def is_recording() -> bool:
    """True when spans of this process are recorded and exported."""
    return _setup is not None and _setup.recording


def trace_id_hex(span: Span) -> str:
    """The 32-hex-digit W3C trace id, as sent in ``done``/``error``."""
    return trace.format_trace_id(span.get_span_context().trace_id)


Parent = Span | Context | None


def _as_context(parent: Parent) -> Context | None:
    if isinstance(parent, Span):
        return trace.set_span_in_context(parent)
    return parent


def _parse_trace_id(trace_id: str) -> int:
    if not _TRACE_ID.fullmatch(trace_id) or int(trace_id, 16) == 0:
        raise ValueError(f"trace_id must be 32 hex digits, not all zero: {trace_id!r}")
    return int(trace_id, 16)


def _start(name: str, parent: Parent, attrs: Mapping[str, AttributeValue], trace_id: str | None) -> Span:
    tracer = _tracer()
    context, attributes = _as_context(parent), dict(attrs) or None
    if trace_id is None:
        return tracer.start_span(name, context=context, attributes=attributes)
    with _ids.adopting(_parse_trace_id(trace_id)):
        return tracer.start_span(name, context=context, attributes=attributes)


@contextmanager
def _span(name: str, parent: Parent, attrs: Mapping[str, AttributeValue],
          trace_id: str | None = None) -> Iterator[Span]:
    span = _start(name, parent, attrs, trace_id)
    try:
        yield span
    except (asyncio.CancelledError, GeneratorExit):
        # The client went away: not a service error, but worth seeing.
        span.set_attribute(ATTR_CANCELLED, True)
        raise
    except BaseException as exc:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        raise
    finally:
        span.end()


@contextmanager
def answer_span(trace_id: str | None = None, **attrs: AttributeValue) -> Iterator[Span]:
    """Root span ``askdocs.answer`` of one question; ``trace_id_hex(span)`` names it.

    ``trace_id`` (32 hex digits, e.g. ``uuid4().hex``) adopts an id the
    caller already handed out; by default a new random one is drawn.
    """
    # context=Context(): a fresh root even if some library left a span current.
    with _span(ANSWER_SPAN, Context(), attrs, trace_id) as span:
        yield span


@contextmanager
def child_span(name: str, parent: Parent = None, **attrs: AttributeValue) -> Iterator[Span]:
    """A span under ``parent`` (a span, or a context from ``extract``).

    Exceptions are recorded and mark the span as an error, then re-raised;
    cancellation only sets ``askdocs.cancelled``.
    """
    with _span(name, parent, attrs) as span:
        yield span


def inject(parent: Span) -> dict[str, str]:
    """A ``{"traceparent": …}`` carrier to pass through a handle call."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier, context=trace.set_span_in_context(parent))
    return carrier


def extract(carrier: Mapping[str, str] | None) -> Context:
    """The parent context that ``inject`` packed; an empty one for ``None``/garbage.

    A missing or malformed carrier starts a new trace rather than failing the
    call: tracing must never break an answer.
    """
    if not isinstance(carrier, Mapping):
        return Context()
    return _propagator.extract({str(k): str(v) for k, v in carrier.items()})


@contextmanager
def replica_span(name: str, carrier: Mapping[str, str] | None, **attrs: AttributeValue) -> Iterator[Span]:
    """A deployment's span under the carrier it was handed (``child_span(name, extract(carrier))``).

    Used the same way in a Serve replica and in the in-process pipeline, so
    both produce the same tree. With no carrier, a process that records
    starts a trace of its own; one that does not (no endpoint, the default)
    makes no span at all, since nobody could see it: the ingress sends no
    carrier when its own span is not recorded, which keeps tracing-off cheap.
    """
    if not carrier and not is_recording():
        yield trace.INVALID_SPAN
        return
    with _span(name, extract(carrier), attrs) as span:
        yield span


def first_token_event(span: Span, **attrs: AttributeValue) -> None:
    """Mark the moment the first token reached this process."""
    span.add_event(FIRST_TOKEN_EVENT, attributes=dict(attrs) or None, timestamp=time.time_ns())


def record_generation(span: Span, *, input_tokens: int, output_tokens: int, finish_reason: str) -> None:
    """Set the generation span's token counts and finish reason."""
    span.set_attributes(
        {
            ATTR_INPUT_TOKENS: input_tokens,
            ATTR_OUTPUT_TOKENS: output_tokens,
            ATTR_FINISH_REASONS: (finish_reason,),
        }
    )


def record_error(span: Span, stage: str, exc: BaseException) -> None:
    """Mark ``span`` (usually the answer span) as failed at ``stage``."""
    span.set_attribute(ATTR_ERROR_STAGE, stage)
    span.record_exception(exc)
    span.set_status(Status(StatusCode.ERROR, f"{stage}: {type(exc).__name__}"))

"""The HTTP edge (DESIGN.md §4) as a Starlette app, independent of Ray.

`create_app(pipeline, settings)` serves POST /ask over any `Pipeline`: Serve
handles in the deployed graph, in-process objects in tests and benchmarks.
The request path reads top-down in `ask()`:

    headers (431) / secret in the URL (400: serve_app.edge_limits) → auth (401)
    → body size (413) / read timeout (408) → shape (422) → admission (503)
    → retrieve → gate → generate → check → respond (SSE or JSON)

Nothing but a status and a one-line message ever reaches the client; details
go to the log with the trace id. API keys are never logged.
"""
from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from deployments.errors import AskdocsError
from serve_app.answer import answer_events, new_trace_id
from serve_app.archive import archive_route
from serve_app.edge_limits import edge_middleware
from serve_app.errors import busy_response, error_response, response_for, status_for_stage, unauthorized_response
from serve_app.pipeline import Pipeline
from serve_app.protocol import (
    AnswerData,
    AskRequest,
    DoneEvent,
    Envelope,
    EnvelopeError,
    ErrorEvent,
    Event,
    SourcesEvent,
    TokenEvent,
    sse,
)
from serve_app.served import served_identity
from serve_app.settings import Settings
from serve_app.stats import AnswerStats

log = logging.getLogger("askdocs.ingress")
STATIC_DIR = Path(__file__).parent / "static"
HEALTH_INFO_TTL_S = 5.0   # /healthz is polled; engine/index info changes rarely


class BodyTooLarge(Exception):
    pass


class ClientGone(Exception):
    pass


class BodyTimeout(Exception):
    pass


# ------------------------------------------------------------------ responses

def _validation_message(e: ValidationError) -> str:
    parts = []
    for err in e.errors(include_input=False, include_url=False)[:3]:
        where = ".".join(str(x) for x in err["loc"]) or "body"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


# ------------------------------------------------------------------ request helpers

def authorized(request: Request, keys: list[bytes]) -> bool:
    if not keys:
        return True
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    given = token.strip().encode()
    # Compare against every key (no early exit), each in constant time.
    return any([hmac.compare_digest(given, key) for key in keys])


async def read_limited_body(request: Request, limit: int, timeout_s: float) -> bytes:
    """The body, refusing (BodyTooLarge) as soon as Content-Length or the bytes
    actually received exceed `limit`, without reading the rest, and giving up
    (BodyTimeout) when the whole body has not arrived within `timeout_s`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise BodyTooLarge
    body = bytearray()
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise BodyTooLarge
    except TimeoutError:
        raise BodyTimeout from None
    return bytes(body)


async def _until_disconnect(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def cancel_on_disconnect(request: Request, work: Any) -> Any:
    """Await `work`, cancelling it if the client disconnects first (ClientGone)."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(_until_disconnect(request))
    try:
        done, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task in done:
        return task.result()
    raise ClientGone


async def _head_until_accepted(events: AsyncIterator[Event]) -> list[Event]:
    """Pull events up to `sources` (the Generator accepted the request, or the
    Gate refused) or a terminal event: a downstream BackPressureError (→ Busy)
    surfaces only here, while a 503 is still possible. The client gets the
    sources then, before prefill, not at the first token."""
    head: list[Event] = []
    async for event in events:
        head.append(event)
        if isinstance(event, (SourcesEvent, TokenEvent, DoneEvent, ErrorEvent)):
            break
    return head


def _envelope(events: list[Event]) -> tuple[int, Envelope]:
    sources = next((e.sources for e in events if isinstance(e, SourcesEvent)), [])
    last = events[-1] if events else None
    if isinstance(last, DoneEvent):
        return 200, Envelope(success=True, data=AnswerData(**last.model_dump(), sources=sources))
    if isinstance(last, ErrorEvent):
        error = EnvelopeError(stage=last.stage, message=last.message, trace_id=last.trace_id, partial=last.partial)
        return status_for_stage(last.stage), Envelope(success=False, error=error)
    return 500, Envelope(success=False, error=EnvelopeError(stage="internal", message="no answer produced"))


# ------------------------------------------------------------------ the app

class Admission:
    """Answers in flight on this replica; full → 503 before any work."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_flight = 0

    def try_enter(self) -> bool:
        if self.in_flight >= self.limit:
            return False
        self.in_flight += 1
        return True

    def leave(self) -> None:
        self.in_flight -= 1


def create_app(pipeline: Pipeline, settings: Settings) -> Starlette:
    keys = [k.get_secret_value().encode() for k in settings.api_keys]
    admission = Admission(settings.max_concurrent)
    stats = AnswerStats(settings.stats_window)
    health_cache: dict[str, Any] = {"at": 0.0, "info": None}
    served = served_identity(settings.engine_spec())     # from our own settings: never a Generator slot

    async def ask(request: Request) -> Response:
        if not authorized(request, keys):
            return unauthorized_response()
        try:
            body = await read_limited_body(request, settings.max_body_bytes, settings.body_read_timeout_s)
        except BodyTooLarge:
            return error_response(413, "request", f"request body over {settings.max_body_bytes} bytes")
        except BodyTimeout:
            waited = f"{settings.body_read_timeout_s:g} s"
            return error_response(408, "request", f"request body not received within {waited}", {"Connection": "close"})
        except ClientDisconnect:
            return Response(status_code=499)
        try:
            req = AskRequest.model_validate_json(body)
        except ValidationError as e:
            return error_response(422, "request", _validation_message(e))
        stream = request.query_params.get("stream", "true").lower() not in ("false", "0", "no")

        if not admission.try_enter():
            return busy_response(settings.retry_after_s)
        trace_id = new_trace_id()
        events = answer_events(pipeline, settings, req, trace_id=trace_id, stats=stats)
        handed_over = False
        try:
            if stream:
                head = await cancel_on_disconnect(request, _head_until_accepted(events))
                handed_over = True
                return _AnswerStream(head, events, admission,
                                     headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no",
                                              "X-Trace-Id": trace_id})
            collected = await cancel_on_disconnect(request, _collect(events))
            status, envelope = _envelope(collected)
            return JSONResponse(envelope.model_dump(), status_code=status, headers={"X-Trace-Id": trace_id})
        except AskdocsError as e:       # Busy (503), InvalidRequest (422): raised before any event
            return response_for(e, retry_after_s=settings.retry_after_s)
        except ClientGone:
            log.info("client left before the answer [trace %s]", trace_id)
            return Response(status_code=499)
        except Exception:
            log.exception("unexpected failure [trace %s]", trace_id)
            return error_response(500, "internal", "internal error", trace_id=trace_id)
        finally:
            if not handed_over:
                await events.aclose()
                admission.leave()

    async def healthz(request: Request) -> Response:
        # Engine and model come from `served` (our settings); only the index is
        # asked (pipeline.info(): the Retriever, never the Generator), at most
        # once per HEALTH_INFO_TTL_S, so a probe never queues behind generation.
        now = time.monotonic()
        if health_cache["info"] is None or now - health_cache["at"] > HEALTH_INFO_TTL_S:
            try:
                health_cache["info"] = await asyncio.wait_for(pipeline.info(), 5.0)
                health_cache["at"] = now
            except Exception as e:  # noqa: BLE001 - reported as degraded, details in the log
                log.warning("health info unavailable: %r", e)
                return JSONResponse({"status": "degraded", "in_flight": admission.in_flight,
                                     "max_concurrent": admission.limit, "engine": served["engine"],
                                     "model": served["model"], "index": None,
                                     "served": {**served, "index_version": None, "embedder": None}},
                                    status_code=503)
        index = health_cache["info"].get("index")
        return JSONResponse({"status": "ok", "in_flight": admission.in_flight, "max_concurrent": admission.limit,
                             "engine": served["engine"], "model": served["model"], "index": index,
                             "served": {**served, "index_version": (index or {}).get("version"),
                                        "embedder": health_cache["info"].get("embedder")}})

    async def stats_endpoint(request: Request) -> Response:
        if not authorized(request, keys):
            return unauthorized_response()
        return JSONResponse(stats.snapshot())

    async def openapi(request: Request) -> Response:
        # Behind the keys too (issue 8: every route but /healthz); only the static
        # page at / stays open, because a browser cannot send a bearer token to load it.
        if not authorized(request, keys):
            return unauthorized_response()
        return JSONResponse(OPENAPI)

    async def collections(request: Request) -> Response:
        # The page's collection selector. Behind the keys like every route but /healthz.
        if not authorized(request, keys):
            return unauthorized_response()
        try:
            info = await asyncio.wait_for(pipeline.info(), 5.0)
        except Exception as e:  # noqa: BLE001 - details in the log
            log.warning("collections unavailable: %r", e)
            return error_response(503, "retrieval", "the index cannot list its collections now; retry later",
                                  {"Retry-After": str(settings.retry_after_s)})
        names = [str(c) for c in info.get("collections") or [] if c]
        return JSONResponse({"collections": sorted(set(names))})

    async def index_page(request: Request) -> Response:
        page = STATIC_DIR / "index.html"
        if not page.is_file():
            return JSONResponse({"detail": "no web page installed; POST /ask"}, status_code=404)
        return FileResponse(page, media_type="text/html")

    app = Starlette(routes=[
        Route("/ask", ask, methods=["POST"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/stats", stats_endpoint, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/collections", collections, methods=["GET"]),
        Route("/ask/archive", archive_route(pipeline, lambda r: authorized(r, keys), settings.retry_after_s),
              methods=["GET"]),     # the doc tree as tar.gz (serve_app/archive.py)
        Route("/", index_page, methods=["GET"]),
    ], middleware=[edge_middleware(settings.max_header_count, settings.max_header_bytes)])   # 431, secrets in URLs
    app.state.admission = admission
    app.state.stats = stats
    return app


async def _collect(events: AsyncIterator[Event]) -> list[Event]:
    return [event async for event in events]


class _AnswerStream(StreamingResponse):
    """The SSE answer; it owns the admission slot until the response ends, on
    every path. Starlette never starts the body generator when sending the
    response start raises (a spec-2.4 server once the client is gone), and
    leaves it suspended when a later send raises, so cleanup lives here."""

    def __init__(self, head: list[Event], events: AsyncGenerator[Event, None], admission: Admission,
                 headers: dict[str, str]) -> None:
        super().__init__(_sse_body(head, events), media_type="text/event-stream", headers=headers)
        self._events = events
        self._admission = admission

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            try:
                await self._events.aclose()    # client gone mid-stream: cancels generation
            finally:
                self._admission.leave()


async def _sse_body(head: list[Event], events: AsyncIterator[Event]) -> AsyncIterator[bytes]:
    for event in head:
        yield sse(event)
    if head and isinstance(head[-1], (DoneEvent, ErrorEvent)):
        return
    async for event in events:
        yield sse(event)


def _openapi() -> dict[str, Any]:
    envelope = Envelope.model_json_schema(ref_template="#/components/schemas/{model}")
    ask_schema = AskRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas = {"AskRequest": ask_schema, **envelope.pop("$defs", {}), "Envelope": envelope}
    json_error = {"application/json": {"schema": {"$ref": "#/components/schemas/Envelope"}}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "askdocs", "version": "0.1.0",
                 "description": "Cited answers over your documents (DESIGN.md §4)."},
        "paths": {"/collections": {"get": {
            "summary": "The index's collection names (the web page's selector); [] for an index without collections.",
            "responses": {
                "200": {"description": '{"collections": ["name", …]}',
                        "content": {"application/json": {"schema": {"type": "object", "properties": {
                            "collections": {"type": "array", "items": {"type": "string"}}}}}}},
                "401": {"description": "API keys configured and bearer token missing or wrong", "content": json_error},
                "503": {"description": "the index cannot report now; see Retry-After", "content": json_error},
            }}},
            "/ask/archive": {"get": {
            "summary": "The index's doc tree (what fetch_docs writes) as one tar.gz; ETag is its content hash.",
            "parameters": [{"name": "collection", "in": "query", "required": False, "schema": {"type": "string"}},
                           {"name": "If-None-Match", "in": "header", "required": False,
                            "schema": {"type": "string"}}],
            "responses": {
                "200": {"description": "application/gzip; headers ETag and X-Archive-Sha256 (of the body)",
                        "content": {"application/gzip": {"schema": {"type": "string", "format": "binary"}}}},
                "304": {"description": "If-None-Match names the current ETag: unchanged, no body"},
                "401": {"description": "API keys configured and bearer token missing or wrong", "content": json_error},
                "404": {"description": "the index server writes no doc tree (no fetch_docs)", "content": json_error},
                "422": {"description": "unknown collection, or several and none named", "content": json_error},
                "502": {"description": "the index could not send its tree now", "content": json_error},
            }}},
            "/ask": {"post": {
            "summary": "Ask a question; SSE stream by default, one JSON envelope with ?stream=false.",
            "parameters": [{"name": "stream", "in": "query", "required": False,
                            "schema": {"type": "string", "enum": ["true", "false"]}}],
            "requestBody": {"required": True, "content": {"application/json": {
                "schema": {"$ref": "#/components/schemas/AskRequest"}}}},
            "responses": {
                "200": {"description": "SSE events sources, token*, done|error; or the JSON envelope",
                        "content": {"text/event-stream": {"schema": {"type": "string"}}, **json_error}},
                "401": {"description": "API keys configured and bearer token missing or wrong", "content": json_error},
                "408": {"description": "body not fully received within the read timeout", "content": json_error},
                "400": {"description": "a credential in the query string (send it as a bearer token)",
                        "content": json_error},
                "413": {"description": "body over the size limit", "content": json_error},
                "431": {"description": "too many request headers, or too many header bytes", "content": json_error},
                "422": {"description": "malformed JSON, wrong types, out-of-range values, unknown collection, "
                                       "a question the index cannot search (e.g. only stopwords)",
                        "content": json_error},
                "499": {"description": "client closed the request (never seen by that client)"},
                "500": {"description": "internal error (JSON mode)", "content": json_error},
                "502": {"description": "retrieval or the model failed (JSON mode)", "content": json_error},
                "503": {"description": "at capacity; see Retry-After", "content": json_error},
            }}}},
        "components": {"schemas": schemas},
    }


OPENAPI = json.loads(json.dumps(_openapi()))

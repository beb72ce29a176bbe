"""Errors of the serving side, one root so one `except` catches them all.

AskdocsError              anything else (HTTP 500, stage "internal")
├─ ConfigError            bad settings / YAML args; raised at start-up, never per request
├─ Busy                   a downstream deployment is at capacity (HTTP 503, stage "capacity")
├─ RetrievalError         the index could not be searched (HTTP 502, stage "retrieval")
│  ├─ McpUnavailable      the MCP server died and a restart did not help
│  └─ McpTimeout          a call exceeded the per-call timeout
├─ InvalidRequest         the request cannot be served as asked (HTTP 422, stage "request")
│  ├─ UnknownCollection   it named a collection the index does not have
│  └─ InvalidQuestion     the index rejected its arguments (e.g. a question of only stopwords)
└─ EngineError            the model could not produce an answer (HTTP 502, stage "generation")
   ├─ EngineUnavailable   connection refused, engine not started, HTTP 5xx
   ├─ EngineTimeout       no chunk within the per-chunk read timeout
   └─ IncompleteStream    the stream ended without a finish reason

Each class carries its `stage` and HTTP `status`; the HTTP edge reads them in
one function to build a response, and an answer's failing stage becomes its
one SSE `error` event.
Messages are safe to show to a client (no paths, no tracebacks).
"""
from __future__ import annotations


class AskdocsError(Exception):
    """Root of every error askdocs raises on purpose."""

    stage: str = "internal"
    status: int = 500


class ConfigError(AskdocsError):
    """Settings or application args are invalid; raised at start-up."""


class Busy(AskdocsError):
    """A downstream deployment is at capacity (its queue is full): HTTP 503."""

    stage = "capacity"
    status = 503

    def __init__(self, message: str = "at capacity", *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class RetrievalError(AskdocsError):
    """The index could not be searched."""

    stage = "retrieval"
    status = 502


class McpUnavailable(RetrievalError):
    """The MCP server process is gone and could not be restarted."""


class McpTimeout(RetrievalError):
    """An MCP call took longer than the per-call timeout."""


class EngineError(AskdocsError):
    """The engine failed to produce an answer."""

    stage = "generation"
    status = 502

    def __init__(self, message: str, *, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial


class EngineUnavailable(EngineError):
    """The engine cannot be reached or refused the request."""


class EngineTimeout(EngineError):
    """No output arrived within the per-chunk read timeout."""


class IncompleteStream(EngineError):
    """The engine's stream ended without a finish reason."""


class InvalidRequest(AskdocsError):
    """The client's request cannot be served as asked (HTTP 422); the message says what to change."""

    stage = "request"
    status = 422


class UnknownCollection(InvalidRequest):
    """The request named a collection the index does not have (HTTP 422)."""


class InvalidQuestion(InvalidRequest):
    """The index rejected the request's arguments, e.g. a question of only stopwords (HTTP 422)."""

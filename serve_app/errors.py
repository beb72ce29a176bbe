"""The HTTP edge's one mapping from an error to a response.

Every `AskdocsError` carries its `stage` and HTTP `status` (deployments/errors.py);
this module is the only place that turns them into a response:

- `response_for(e)`: an error raised to the ingress (`Busy` → 503 with
  Retry-After, `InvalidRequest` → 422, any other `AskdocsError` → its status);
- `status_for_stage(stage)`: the status of a JSON-mode answer that ended in an
  `error` event of that stage (retrieval, generation → 502; internal → 500);
- `error_response(...)`: the envelope every error status carries (docs/api.md).
"""
from __future__ import annotations

from starlette.responses import JSONResponse

from deployments.errors import AskdocsError, Busy, EngineError, InvalidRequest, RetrievalError
from serve_app.protocol import Envelope, EnvelopeError

BUSY_MESSAGE = "the service is at capacity; retry later"

# An error event's stage → the status of the JSON-mode response that ends with it.
_STATUS_BY_STAGE = {cls.stage: cls.status for cls in (AskdocsError, Busy, RetrievalError, InvalidRequest,
                                                      EngineError)}


def error_response(status: int, stage: str, message: str, headers: dict[str, str] | None = None,
                   *, trace_id: str | None = None, partial: str | None = None) -> JSONResponse:
    body = Envelope(success=False, error=EnvelopeError(stage=stage, message=message, trace_id=trace_id,
                                                       partial=partial))
    return JSONResponse(body.model_dump(exclude_none=True) | {"data": None}, status_code=status, headers=headers)


def busy_response(retry_after_s: float) -> JSONResponse:
    return error_response(Busy.status, Busy.stage, BUSY_MESSAGE, {"Retry-After": str(max(1, round(retry_after_s)))})


def unauthorized_response() -> JSONResponse:
    """401 for a missing or wrong bearer token (every route behind the keys)."""
    return error_response(401, "auth", "missing or invalid bearer token", {"WWW-Authenticate": "Bearer"})


def response_for(e: AskdocsError, *, retry_after_s: float) -> JSONResponse:
    """The response for an error raised to the ingress; `retry_after_s` is the
    default Retry-After of a 503 whose error does not say."""
    if isinstance(e, Busy):
        return busy_response(e.retry_after_s or retry_after_s)
    return error_response(e.status, e.stage, str(e))


def status_for_stage(stage: str) -> int:
    """The HTTP status of a JSON-mode answer that ended in an error event of `stage`."""
    return _STATUS_BY_STAGE.get(stage, AskdocsError.status)

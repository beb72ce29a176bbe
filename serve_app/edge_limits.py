"""What the HTTP edge accepts before any route runs (issue 17 item 8), as one
ASGI middleware, so the ingress holds the same bounds under uvicorn and in
the Serve replica:

- too many request headers, or too many header bytes (names + values) →
  431, before the request reaches a route;
- a secret in the query string (`?api_key=`, `?key=`, `?token=` …) → 400.
  The value is blanked in the ASGI scope first: a server that logs the
  request line from that scope after the response (uvicorn's access log
  does) logs `api_key=REDACTED`, never the key.

Bounding what a server buffers while it reads a request head is the
server's job (serve_app.uvicorn_server for uvicorn); this middleware bounds
what gets past it.
"""
from __future__ import annotations

from urllib.parse import parse_qsl, urlencode

from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from serve_app.protocol import Envelope, EnvelopeError

DEFAULT_MAX_HEADER_COUNT = 64
DEFAULT_MAX_HEADER_BYTES = 16 * 1024
# Query parameters that carry credentials by convention (compared lowercased).
SECRET_PARAMS = frozenset({"api_key", "apikey", "api-key", "key", "token", "access_token", "auth",
                           "authorization", "bearer", "password"})
REDACTED = "REDACTED"


def _error(status: int, message: str) -> JSONResponse:
    body = Envelope(success=False, error=EnvelopeError(stage="request", message=message))
    return JSONResponse(body.model_dump(exclude_none=True) | {"data": None}, status_code=status,
                        headers={"Connection": "close"} if status == 431 else None)


def redact_secrets(query_string: bytes) -> tuple[bytes, list[str]]:
    """The query string with credential values blanked, and the names blanked."""
    pairs = parse_qsl(query_string.decode("latin-1"), keep_blank_values=True)
    found = sorted({name for name, _ in pairs if name.lower() in SECRET_PARAMS})
    if not found:
        return query_string, []
    kept = [(name, REDACTED if name.lower() in SECRET_PARAMS else value) for name, value in pairs]
    return urlencode(kept).encode("latin-1"), found


class EdgeLimits:
    """431 on too many / too large headers, 400 on a secret in the URL."""

    def __init__(self, app: ASGIApp, *, max_header_count: int = DEFAULT_MAX_HEADER_COUNT,
                 max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> None:
        self.app = app
        self.max_header_count = max_header_count
        self.max_header_bytes = max_header_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers") or []
        if len(headers) > self.max_header_count:
            await _error(431, f"more than {self.max_header_count} request headers")(scope, receive, send)
            return
        size = sum(len(name) + len(value) for name, value in headers)
        if size > self.max_header_bytes:
            await _error(431, f"request headers over {self.max_header_bytes} bytes")(scope, receive, send)
            return
        query, secrets = redact_secrets(scope.get("query_string") or b"")
        if secrets:
            scope["query_string"] = query            # in place: the server's access log reads this dict
            await _error(400, f"credentials in the URL ({', '.join(secrets)}) are refused: URLs end up in "
                              "logs and histories; send the key as 'Authorization: Bearer <key>'")(
                scope, receive, send)
            return
        await self.app(scope, receive, send)


def edge_middleware(max_header_count: int = DEFAULT_MAX_HEADER_COUNT,
                    max_header_bytes: int = DEFAULT_MAX_HEADER_BYTES) -> Middleware:
    return Middleware(EdgeLimits, max_header_count=max_header_count, max_header_bytes=max_header_bytes)


def proxy_middlewares() -> list[Middleware]:
    """The same limits in Ray Serve's HTTP proxy, with the defaults: set
    RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=serve_app.edge_limits:proxy_middlewares
    in the environment of `ray start` (the proxy reads it when it starts)."""
    return [edge_middleware()]

"""The ingress under plain uvicorn, with the edge's bounds on the server side
(issue 17 item 8): `python -m serve_app.local [--host H] [--port P]`.

uvicorn's defaults leave a request head unbounded (httptools buffers any
header size; a 64 MB header got 200) and untimed (its keep-alive timer is
cancelled by the first byte of the next request, and nothing times a head
at all, so a client trickling header bytes holds a connection forever).
Here:

- h11 with `h11_max_incomplete_event_size = max_header_bytes + 8 KB` (the
  request line and framing): a longer head is a 400 and the connection
  closes, before the head is buffered whole;
- `HeadTimeoutH11Protocol`: a request head (request line + headers) must
  arrive within `header_timeout_s` of its first byte (of the connection,
  for the first request): else 408 and close;
- `timeout_keep_alive = idle_timeout_s`: an idle keep-alive connection closes;
- `EdgeLimits` (serve_app.edge_limits, inside the app) answers 431 on too
  many or too large headers that got this far.
"""
from __future__ import annotations

import argparse
import asyncio
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from serve_app.settings import Settings

HEAD_SLACK_BYTES = 8 * 1024      # the request line (path + query) and the head's framing
_TIMEOUT_RESPONSE = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\ncontent-length: 36\r\n"
                     b"connection: close\r\n\r\nrequest head not received in time.\n")


class HeadTimeoutH11Protocol(H11Protocol):
    """uvicorn's h11 protocol plus a timer on each request head."""

    header_timeout_s: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm_head_timer()

    def _waiting_for_head(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self._waiting_for_head():
            self._arm_head_timer()                   # the first byte of the next request head
        super().data_received(data)
        if not self._waiting_for_head():
            self._cancel_head_timer()                # the head is in: the app (and its body timeout) takes over

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._waiting_for_head():
            return
        self.logger.info("request head not received within %g s; closing the connection", self.header_timeout_s)
        self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()


def protocol_for(settings: Settings) -> type[HeadTimeoutH11Protocol]:
    return type("BoundedH11Protocol", (HeadTimeoutH11Protocol,), {"header_timeout_s": settings.header_timeout_s})


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """The server-side bounds, as uvicorn.Config keyword arguments."""
    return {"http": protocol_for(settings),
            "h11_max_incomplete_event_size": settings.max_header_bytes + HEAD_SLACK_BYTES,
            "timeout_keep_alive": settings.idle_timeout_s}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m serve_app.local",
        description="The askdocs ingress under uvicorn, without Ray (settings: ASKDOCS_*).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log-level", default="info")
    args = parser.parse_args(argv)
    settings = Settings()
    uvicorn.run("serve_app.local:app_factory", factory=True, host=args.host, port=args.port,
                log_level=args.log_level, **uvicorn_options(settings))

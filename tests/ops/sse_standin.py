"""A stand-in askdocs for load-test tests: SSE shaped like DESIGN.md §4.

The question picks the behaviour, so one questions file exercises every path
of the Locust user: ``ok`` (sources, tokens, done), ``refuse`` (done with
no tokens), ``fail`` (error event), ``cut`` (stream ends without a terminal
event), ``busy`` (503 + Retry-After), ``teapot`` (500), ``late`` (a done
answer that takes ``LATE_ANSWER_S``: longer than a test's run time).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN_DELAY_S = 0.01
LATE_ANSWER_S = 7.5


def _event(name: str, payload: dict[str, object]) -> bytes:
    return f"event: {name}\r\ndata: {json.dumps(payload)}\r\n\r\n".encode()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        if self.path != "/healthz":
            self.send_error(404)
            return
        body = json.dumps({"status": "ok", "engine": "standin", "model": "none"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        behaviour = body["question"].split()[0]
        if behaviour == "busy":
            self._plain(503, {"Retry-After": "1"})
            return
        if behaviour == "teapot":
            self._plain(500, {})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b": keep-alive\r\n\r\n")
        self.wfile.write(_event("sources", {"sources": []}))
        if behaviour == "refuse":
            self.wfile.write(_event("done", {"answer": "", "refused": True, "trace_id": "0" * 32}))
            return
        for text in ("Hello", " world", "."):
            time.sleep(LATE_ANSWER_S / 3 if behaviour == "late" else TOKEN_DELAY_S)
            self.wfile.write(_event("token", {"text": text}))
            self.wfile.flush()
        if behaviour == "fail":
            self.wfile.write(_event("error", {"stage": "generation", "message": "engine died"}))
        elif behaviour in ("ok", "late"):
            self.wfile.write(_event("done", {"answer": "Hello world.", "refused": False}))
        # "cut": the connection closes with no terminal event.

    def _plain(self, status: int, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


class SseStandIn:
    """``with SseStandIn() as server: server.url``; binds 127.0.0.1 on a free port."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> SseStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

"""A stand-in OTLP/HTTP trace collector for tests and benchmarks.

No collector package (otelcol, Jaeger) installs from PyPI, so this receiver
speaks just enough of the protocol: ``POST /v1/traces`` with a protobuf
``ExportTraceServiceRequest`` (decoded with ``opentelemetry-proto``, the same
message definitions a real collector uses), answered with an empty
``ExportTraceServiceResponse``. Binds 127.0.0.1 on a free port.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span as SpanProto

TRACES_PATH = "/v1/traces"


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span, flattened with the service that sent it."""

    service: str
    span: SpanProto

    @property
    def name(self) -> str:
        return self.span.name

    @property
    def trace_id(self) -> str:
        return self.span.trace_id.hex()

    @property
    def span_id(self) -> str:
        return self.span.span_id.hex()

    @property
    def parent_id(self) -> str:
        return self.span.parent_span_id.hex()

    def attributes(self) -> dict[str, object]:
        out: dict[str, object] = {}
        for kv in self.span.attributes:
            value = kv.value
            kind = value.WhichOneof("value")
            if kind == "array_value":
                out[kv.key] = tuple(getattr(v, v.WhichOneof("value")) for v in value.array_value.values)
            else:
                out[kv.key] = getattr(value, kind)
        return out


class OtlpReceiver:
    """``with OtlpReceiver() as rx: … rx.endpoint … rx.spans()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[ExportTraceServiceRequest] = []
        self.content_types: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                if self.path != TRACES_PATH:
                    self.send_error(404)
                    return
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver._lock:
                    receiver._requests.append(request)
                    receiver.content_types.append(self.headers.get("Content-Type", ""))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def spans(self) -> list[ReceivedSpan]:
        out: list[ReceivedSpan] = []
        with self._lock:
            for request in self._requests:
                for resource_spans in request.resource_spans:
                    service = next(
                        (a.value.string_value for a in resource_spans.resource.attributes if a.key == "service.name"),
                        "",
                    )
                    for scope_spans in resource_spans.scope_spans:
                        out.extend(ReceivedSpan(service, s) for s in scope_spans.spans)
        return out

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

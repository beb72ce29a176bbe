"""What the edge accepts (issue 17 item 8): header count and size (431),
credentials in the URL (400, never logged), request-head and idle timeouts
under `python -m serve_app.local`'s uvicorn options, /healthz without
filesystem paths, /stats counting failures as failures in both modes.

Bounds on time are lower bounds only (a loaded machine delays, never
hastens); "in time" is shown by order: the server answered while the client
was still sending."""
from __future__ import annotations

import contextlib
import json
import logging
import select
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from deployments.errors import RetrievalError
from serve_app.edge_limits import proxy_middlewares, redact_secrets
from serve_app.ingress import create_app
from serve_app.uvicorn_server import HEAD_SLACK_BYTES, uvicorn_options
from tests.ports import free_port
from tests.reliability.conftest import PLAIN_PASSAGES, StaticPipeline, settings

pytestmark = pytest.mark.timeout(180)
QUESTION = "How does Serve scale a deployment?"


def asgi_client(pipeline: Any = None, **overrides: Any) -> httpx.AsyncClient:
    app = create_app(pipeline or StaticPipeline(PLAIN_PASSAGES), settings(**overrides))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


# ---------------------------------------------------------------- headers: 431

async def test_too_many_headers_are_refused_with_431() -> None:
    async with asgi_client(max_header_count=32) as client:
        ok = await client.get("/healthz", headers={f"x-h{i}": "v" for i in range(20)})
        refused = await client.post("/ask", json={"question": QUESTION},
                                    headers={f"x-h{i}": "v" for i in range(40)})
    assert ok.status_code == 200
    assert refused.status_code == 431
    assert refused.json()["error"] == {"stage": "request", "message": "more than 32 request headers"}


async def test_headers_over_the_byte_limit_are_refused_with_431() -> None:
    async with asgi_client(max_header_bytes=4096) as client:
        ok = await client.get("/healthz", headers={"x-pad": "a" * 3000})
        refused = await client.get("/healthz", headers={"x-pad": "a" * 5000})
        spread = await client.get("/healthz", headers={f"x-pad{i}": "a" * 500 for i in range(10)})
    assert ok.status_code == 200
    assert refused.status_code == spread.status_code == 431
    assert refused.json()["error"]["message"] == "request headers over 4096 bytes"


# ---------------------------------------------------------------- secrets in the URL: 400

@pytest.mark.parametrize("name", ["api_key", "key", "token", "API_KEY", "access_token"])
async def test_a_key_in_the_query_string_is_refused_and_never_echoed(name: str) -> None:
    async with asgi_client(api_keys=["sekrit-123"]) as client:
        asked = await client.post(f"/ask?stream=false&{name}=sekrit-123", json={"question": QUESTION})
        health = await client.get(f"/healthz?{name}=sekrit-123")
    for response in (asked, health):
        assert response.status_code == 400
        assert "sekrit" not in response.text and "Authorization: Bearer" in response.json()["error"]["message"]


def test_redaction_keeps_other_parameters_and_blanks_every_credential() -> None:
    query, found = redact_secrets(b"stream=false&api_key=s1&Token=s2&k=3")
    assert found == ["Token", "api_key"] and b"s1" not in query and b"s2" not in query
    assert query == b"stream=false&api_key=REDACTED&Token=REDACTED&k=3"
    assert redact_secrets(b"stream=false&monkey=1") == (b"stream=false&monkey=1", [])


def test_the_proxy_callback_gives_middlewares_serve_accepts() -> None:
    from ray.serve._private.http_util import validate_http_proxy_callback_return

    assert validate_http_proxy_callback_return(proxy_middlewares())


# ---------------------------------------------------------------- /healthz shows no paths

async def test_healthz_shows_no_filesystem_path_when_keys_are_configured(tmp_path: Path) -> None:
    model = tmp_path / "models" / "secret-dir" / "tiny.gguf"
    async with asgi_client(api_keys=["k1"], engine="fake", model=str(model), db=str(tmp_path / "x.db")) as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    text = response.text
    assert str(tmp_path) not in text and "secret-dir" not in text and str(Path.cwd()) not in text

    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for v in value.values():
                yield from strings(v)
        elif isinstance(value, list):
            for v in value:
                yield from strings(v)
        elif isinstance(value, str):
            yield value

    assert not [s for s in strings(response.json()) if "/" in s or "\\" in s]


# ---------------------------------------------------------------- /stats: failures are failures

class _FailingRetrieval(StaticPipeline):
    async def search(self, question: str, k: int, collection: str | None, trace: Any = None) -> list:
        raise RetrievalError("the index server is down and could not be restarted")


@pytest.mark.parametrize("stream", [True, False])
async def test_failures_before_the_first_token_count_as_errors_in_stats(stream: bool) -> None:
    query = "" if stream else "?stream=false"
    async with asgi_client(_FailingRetrieval(PLAIN_PASSAGES)) as client:
        retrieval = await client.post(f"/ask{query}", json={"question": QUESTION})
    async with asgi_client() as client:
        engine = await client.post(f"/ask{query}", json={"question": QUESTION + " [[fake:error]]"})
        await client.post(f"/ask{query}", json={"question": QUESTION})              # answered
        stats = (await client.get("/stats")).json()
    if stream:
        assert retrieval.status_code == engine.status_code == 200
        assert "event: error" in retrieval.text and "event: error" in engine.text
    else:
        assert retrieval.status_code == engine.status_code == 502
    assert (stats["errors"], stats["cancelled"], stats["answered"]) == ({"generation": 1}, 0, 1)


async def test_a_retrieval_failure_in_sse_mode_is_a_retrieval_error_in_stats() -> None:
    async with asgi_client(_FailingRetrieval(PLAIN_PASSAGES)) as client:
        await client.post("/ask", json={"question": QUESTION})
        await client.post("/ask?stream=false", json={"question": QUESTION})
        stats = (await client.get("/stats")).json()
    assert (stats["errors"], stats["cancelled"]) == ({"retrieval": 2}, 0)


# ---------------------------------------------------------------- uvicorn with the server-side bounds

HEADER_TIMEOUT_S, IDLE_TIMEOUT_S, MAX_HEADER_BYTES = 1.0, 1, 4096


@pytest.fixture(scope="module")
def bounded_uvicorn() -> Iterator[int]:
    """The ingress under uvicorn in a thread, with python -m serve_app.local's options."""
    options = dict(header_timeout_s=HEADER_TIMEOUT_S, idle_timeout_s=IDLE_TIMEOUT_S, max_header_bytes=MAX_HEADER_BYTES)
    app = create_app(StaticPipeline(PLAIN_PASSAGES), settings(**options))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, log_level="info",
                                          lifespan="off", **uvicorn_options(settings(**options))))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    while not server.started:
        assert thread.is_alive(), "the test server failed to start"
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=60)


@contextlib.contextmanager
def connection(port: int) -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        yield sock
    finally:
        sock.close()


def read_until_closed(sock: socket.socket, deadline_s: float = 60.0) -> bytes:
    data = b""
    sock.settimeout(deadline_s)
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            return data
        if not chunk:
            return data
        data += chunk


def trickle(sock: socket.socket, pieces: list[bytes], gap_s: float) -> tuple[int, float]:
    """Send `pieces` `gap_s` apart until the server answers; (pieces sent, seconds)."""
    started = time.monotonic()
    for i, piece in enumerate(pieces):
        ready, _, _ = select.select([sock], [], [], gap_s if i else 0)
        if ready:
            return i, time.monotonic() - started
        try:
            sock.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            return i + 1, time.monotonic() - started
    select.select([sock], [], [], 60)
    return len(pieces), time.monotonic() - started


def test_a_key_in_the_url_never_reaches_the_access_log(bounded_uvicorn: int, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="uvicorn.access")
    response = httpx.get(f"http://127.0.0.1:{bounded_uvicorn}/healthz?api_key=sekrit-456&x=1", timeout=60)
    assert response.status_code == 400
    lines = [r.getMessage() for r in caplog.records if r.name == "uvicorn.access"]
    assert any("api_key=REDACTED" in line for line in lines), lines
    assert not any("sekrit" in r.getMessage() for r in caplog.records)


def test_an_oversized_request_head_is_refused_before_it_is_buffered_whole(bounded_uvicorn: int) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "
    pieces = [head] + [b"a" * 4096] * 256 + [b"\r\n\r\n"]           # a 1 MB header, 4 KB at a time
    with connection(bounded_uvicorn) as sock:
        sent, _ = trickle(sock, pieces, gap_s=0.01)
        reply = read_until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    assert sent * 4096 < MAX_HEADER_BYTES + HEAD_SLACK_BYTES + 64 * 1024, sent   # cut off near the limit, not at 1 MB


def test_a_request_head_trickled_past_the_header_timeout_gets_408(bounded_uvicorn: int) -> None:
    pieces = [b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"] + [b"X-Slow: 1\r\n"] * 300   # ~60 s at 0.2 s
    with connection(bounded_uvicorn) as sock:
        sent, seconds = trickle(sock, pieces, gap_s=0.2)
        reply = read_until_closed(sock)
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    assert sent < len(pieces) and seconds >= HEADER_TIMEOUT_S * 0.9     # while still sending; not before the timeout


def test_a_prompt_request_passes_and_an_idle_connection_is_closed(bounded_uvicorn: int) -> None:
    with connection(bounded_uvicorn) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        started = time.monotonic()
        reply = read_until_closed(sock)                  # returns when the server closes the idle connection
        idle = time.monotonic() - started
    assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
    assert json.loads(reply.split(b"\r\n\r\n", 1)[1])["status"] == "ok"
    assert idle >= IDLE_TIMEOUT_S * 0.9


def test_the_runner_passes_the_bounds_to_uvicorn() -> None:
    options = uvicorn_options(settings(header_timeout_s=7.0, idle_timeout_s=3, max_header_bytes=2048))
    config = uvicorn.Config("serve_app.local:app_factory", factory=True, log_config=None, **options)
    config.load()
    assert config.http_protocol_class.header_timeout_s == 7.0
    assert (config.timeout_keep_alive, config.h11_max_incomplete_event_size) == (3, 2048 + HEAD_SLACK_BYTES)

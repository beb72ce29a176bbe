"""Sources reach the client as soon as the Generator accepted the request
(issue 15 item 5), not at the first token; a full queue is still a clean 503.

The engine here holds its first token until the test releases it, so "before
any token" is an order of events, never a wall-clock bound.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from deployments.engines.base import Delta, GenParams, Prompt
from deployments.engines.fake import FakeEngine
from deployments.errors import Busy
from deployments.generator import ACCEPTED, accepted_first
from serve_app.ingress import create_app
from serve_app.local import LocalPipeline
from tests.serve.conftest import fake_settings

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUESTION = "What does the proxy answer when the queue is full?"


class HeldEngine(FakeEngine):
    """The fake engine, whose first token waits for `release` (a long prefill)."""

    def __init__(self) -> None:
        super().__init__()
        self.release = asyncio.Event()
        self.tokens_sent = 0

    async def stream(self, prompt: Prompt, params: GenParams) -> AsyncIterator[Delta]:
        await self.release.wait()
        async for delta in super().stream(prompt, params):
            self.tokens_sent += bool(delta.text)
            yield delta


class Call:
    """One POST /ask straight over ASGI: every message the app sends, as it sends it."""

    def __init__(self, app: Any, query: bytes = b"") -> None:
        self.sent: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._body = [{"type": "http.request", "body": json.dumps({"question": QUESTION}).encode(),
                       "more_body": False}]
        scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": "/ask", "raw_path": b"/ask", "query_string": query,
                 "root_path": "", "headers": [(b"content-type", b"application/json")],
                 "client": ("127.0.0.1", 1), "server": ("test", 80)}
        self.task = asyncio.ensure_future(app(scope, self._receive, self._send))

    async def _receive(self) -> dict[str, Any]:
        if self._body:
            return self._body.pop(0)
        await asyncio.Event().wait()        # the client stays; the app cancels this read when done
        raise AssertionError("unreachable")

    async def _send(self, message: dict[str, Any]) -> None:
        await self.sent.put(message)

    async def next(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.sent.get(), 30)


async def test_sources_arrive_before_the_first_token_is_computed(stub_pool: Any) -> None:
    settings = fake_settings()
    engine = HeldEngine()
    await engine.start()
    app = create_app(LocalPipeline(settings, stub_pool, engine), settings)
    call = Call(app)
    start = await call.next()
    assert start["type"] == "http.response.start" and start["status"] == 200
    first = await call.next()
    assert first["body"].startswith(b"event: sources\n") and first["more_body"] is True
    assert engine.tokens_sent == 0 and not engine.release.is_set()    # the model has produced nothing yet
    engine.release.set()
    rest = b""
    while (message := await call.next())["more_body"]:
        rest += message["body"]
    rest += message["body"]
    names = [line[7:] for line in rest.decode().splitlines() if line.startswith("event: ")]
    assert "sources" not in names and names[0] == "token" and names[-1] == "done"
    await asyncio.wait_for(call.task, 30)
    assert app.state.admission.in_flight == 0


class FullQueue:
    """The local pipeline whose Generator refuses every request (BackPressure → Busy)."""

    def __init__(self, inner: LocalPipeline) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Delta]:
        raise Busy(retry_after_s=4)
        yield ACCEPTED                                  # pragma: no cover - makes this an async generator


@pytest.mark.parametrize("query", [b"", b"stream=false"])
async def test_a_full_queue_is_still_a_whole_503(local_pipeline: LocalPipeline, query: bytes) -> None:
    app = create_app(FullQueue(local_pipeline), fake_settings())
    call = Call(app, query)
    start = await call.next()
    body = await call.next()
    assert start["status"] == 503 and (b"retry-after", b"4") in start["headers"]
    assert not body.get("more_body", False) and json.loads(body["body"])["error"]["stage"] == "capacity"
    await asyncio.wait_for(call.task, 30)
    assert app.state.admission.in_flight == 0


async def test_the_accepted_marker_comes_first_and_carries_nothing() -> None:
    async def two() -> AsyncIterator[Delta]:
        yield Delta(text="a")
        yield Delta(finish_reason="stop")

    deltas = [d async for d in accepted_first(two())]
    assert deltas[0] is ACCEPTED and deltas[0].text == "" and deltas[0].finish_reason is None
    assert [d.text for d in deltas[1:]] == ["a", ""]

"""The admission slot is released on every path, whatever the ASGI server does.

A server reporting ASGI spec 2.4 may raise from `send` once the client is
gone. When that happens as the response starts, Starlette never starts the
SSE body generator, so a slot released only in that generator's `finally`
leaked; after `max_concurrent` such clients every request got 503.
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

from serve_app.ingress import create_app
from serve_app.local import LocalPipeline
from tests.serve.conftest import fake_settings

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUESTION = "What does the proxy answer when the queue is full?"
LIMIT = 2
GONE_CLIENTS = 4 * LIMIT   # each would have leaked one slot: twice the limit over


def _scope(spec_version: str) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0", "spec_version": spec_version}, "http_version": "1.1",
            "method": "POST", "scheme": "http", "path": "/ask", "raw_path": b"/ask", "query_string": b"",
            "root_path": "", "headers": [(b"content-type", b"application/json")], "client": ("127.0.0.1", 1),
            "server": ("test", 80)}


async def _client_gone_at(app: Any, spec_version: str, failing: str) -> None:
    """One request whose `send` raises as soon as a message of type `failing` goes out."""
    body = json.dumps({"question": QUESTION}).encode()
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    gone = asyncio.Event()

    async def receive() -> dict:
        if messages:
            return messages.pop(0)
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        if message["type"] == failing:
            gone.set()
            raise OSError("client gone")

    try:
        await asyncio.wait_for(app(_scope(spec_version), receive, send), 10)
    except Exception:  # noqa: BLE001 - what the app raises to the server is not the point here
        pass


@pytest.mark.parametrize("spec_version", ["2.4", "2.3"])
@pytest.mark.parametrize("failing", ["http.response.start", "http.response.body"])
async def test_slot_comes_back_when_send_raises(local_pipeline: LocalPipeline, spec_version: str,
                                                failing: str) -> None:
    app = create_app(local_pipeline, fake_settings(max_concurrent=LIMIT))
    for _ in range(GONE_CLIENTS):
        await _client_gone_at(app, spec_version, failing)
    assert app.state.admission.in_flight == 0
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.post("/ask", json={"question": QUESTION})
    assert response.status_code == 200
    assert app.state.admission.in_flight == 0

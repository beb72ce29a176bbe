"""The HTTP edge over an in-process pipeline (fake engine, stub MCP index):
protocol, status codes, auth, limits, disconnects."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from deployments.errors import Busy, McpUnavailable
from deployments.prompt import REFUSAL_SENTENCE
from serve_app.ingress import create_app
from serve_app.local import LocalPipeline
from tests.serve.conftest import fake_settings
from tests.serve.failing import FailingPipeline
from tests.serve.sse import parse_sse

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUESTION = "What does the proxy answer when the queue is full?"


def client_for(pipeline: Any, **settings: Any) -> httpx.AsyncClient:
    app = create_app(pipeline, fake_settings(**settings))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


async def ask_sse(client: httpx.AsyncClient, question: str, **body: Any) -> list[tuple[str, dict]]:
    response = await client.post("/ask", json={"question": question, **body})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    return parse_sse(response.text)


# ---------------------------------------------------------------- SSE and JSON

async def test_sse_stream_is_sources_then_tokens_then_one_done(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        events = await ask_sse(client, QUESTION)
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "done"
    assert set(names[1:-1]) == {"token"}
    assert sum(n in ("done", "error") for n in names) == 1
    sources, done = events[0][1]["sources"], events[-1][1]
    assert [s["n"] for s in sources] == list(range(1, len(sources) + 1))
    assert sources[0]["source"] == "serve.md" and sources[0]["anchor"] == "backpressure"
    assert done["answer"] == "".join(d["text"] for n, d in events if n == "token").strip()
    assert 1 in done["citations"] and done["invalid_citations"] == [] and done["support"] == 1.0
    assert done["refused"] is False and done["refusal_stage"] is None and done["truncated"] is False
    assert done["usage"]["completion_tokens"] > 0 and len(done["trace_id"]) == 32
    t = done["timings"]
    assert t["total_ms"] >= t["retrieval_ms"] and t["ttft_ms"] is not None


async def test_json_mode_returns_one_envelope_with_sources(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        response = await client.post("/ask?stream=false", json={"question": QUESTION, "k": 2})
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is True and body["error"] is None
    assert len(body["data"]["sources"]) == 2 and body["data"]["citations"]


async def test_gate_refuses_without_calling_the_engine(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        events = await ask_sse(client, "Explain quantum chromodynamics gluon confinement")
    done = events[-1][1]
    assert done["refused"] is True and done["refusal_stage"] == "gate" and done["answer"] == REFUSAL_SENTENCE
    assert local_pipeline.engine.streams == 0


async def test_model_refusal_is_detected(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        events = await ask_sse(client, QUESTION + " [[fake:refuse]]")
    assert events[-1][1]["refused"] is True and events[-1][1]["refusal_stage"] == "model"


async def test_max_tokens_reached_sets_truncated(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        events = await ask_sse(client, QUESTION + " [[fake:truncate]]")
    assert events[-1][0] == "done" and events[-1][1]["truncated"] is True


async def test_uncited_answer_is_flagged_unsupported(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        events = await ask_sse(client, QUESTION + " [[fake:uncited]]")
    assert events[-1][1]["unsupported_sentences"] == [0] and events[-1][1]["support"] == 0.0


async def test_stream_without_finish_reason_is_an_error_with_partial(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        events = await ask_sse(client, QUESTION + " [[fake:nofinish]]")
        json_mode = await client.post("/ask?stream=false", json={"question": QUESTION + " [[fake:nofinish]]"})
    name, error = events[-1]
    assert name == "error" and error["stage"] == "generation" and error["partial"]
    assert [n for n, _ in events].count("error") == 1 and "done" not in [n for n, _ in events]
    assert json_mode.status_code == 502 and json_mode.json()["error"]["stage"] == "generation"


async def test_engine_failure_before_first_token_is_retried(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        events = await ask_sse(client, QUESTION + " [[fake:flaky=1]]")
    assert events[-1][0] == "done"


async def test_engine_failure_is_502_in_json_mode_and_error_event_in_sse(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        response = await client.post("/ask?stream=false", json={"question": QUESTION + " [[fake:error]]"})
        events = await ask_sse(client, QUESTION + " [[fake:midfail]]")
    assert response.status_code == 502
    assert response.json() == {"success": False, "data": None, "error": {
        "stage": "generation", "message": "fake engine: simulated outage",
        "trace_id": response.headers["x-trace-id"], "partial": None}}
    assert events[-1][0] == "error" and events[-1][1]["partial"]


async def test_retrieval_failure_is_502(local_pipeline: LocalPipeline) -> None:
    async with client_for(FailingPipeline(local_pipeline, "search", McpUnavailable("the index server is down"))) as client:
        response = await client.post("/ask?stream=false", json={"question": QUESTION})
        events = await ask_sse(client, QUESTION)
    assert response.status_code == 502 and response.json()["error"]["stage"] == "retrieval"
    assert events == [("error", {"stage": "retrieval", "message": "the index server is down",
                                 "trace_id": events[0][1]["trace_id"]})]


async def test_internal_failure_is_500_without_details(local_pipeline: LocalPipeline) -> None:
    async with client_for(FailingPipeline(local_pipeline, "check", RuntimeError("secret /path/detail"))) as client:
        response = await client.post("/ask?stream=false", json={"question": QUESTION})
    assert response.status_code == 500 and response.json()["error"]["stage"] == "internal"
    assert "secret" not in response.text


async def test_downstream_backpressure_becomes_503_with_retry_after(local_pipeline: LocalPipeline) -> None:
    async with client_for(FailingPipeline(local_pipeline, "stream", Busy(retry_after_s=7))) as client:
        sse = await client.post("/ask", json={"question": QUESTION})
        plain = await client.post("/ask?stream=false", json={"question": QUESTION})
    for response in (sse, plain):
        assert response.status_code == 503 and response.headers["retry-after"] == "7"


# ---------------------------------------------------------------- status codes at the edge

@pytest.mark.parametrize("body", [
    b"{not json", b'{"question": 5}', b'{"question": ""}', b'{"question": "' + b"x" * 2001 + b'"}',
    b'{"question": "ok", "k": 0}', b'{"question": "ok", "k": 21}', b'{"question": "ok", "k": "3"}',
    b'{"question": "ok", "extra": 1}', b"[]", b'{"question": "   "}', b'{"question": "ok", "k": true}',
])
async def test_malformed_requests_are_422(local_pipeline: LocalPipeline, body: bytes) -> None:
    async with client_for(local_pipeline) as client:
        response = await client.post("/ask", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["stage"] == "request"


async def test_unknown_collection_is_422(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        bad = await client.post("/ask", json={"question": QUESTION, "collection": "nope"})
        good = await client.post("/ask?stream=false", json={"question": "pasta", "collection": "recipes"})
    assert bad.status_code == 422 and "nope" in bad.json()["error"]["message"]
    assert good.status_code == 200 and {s["source"] for s in good.json()["data"]["sources"]} == {"cooking.md"}


async def test_body_over_limit_is_413_by_content_length(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        response = await client.post("/ask", json={"question": "x" * 17_000})
    assert response.status_code == 413


async def test_chunked_body_over_limit_is_413_before_reading_it_all(local_pipeline: LocalPipeline) -> None:
    sent = []

    async def body() -> AsyncIterator[bytes]:
        for i in range(64):                      # 64 KB offered, no Content-Length
            sent.append(i)
            yield b" " * 1024

    async with client_for(local_pipeline) as client:
        response = await client.post("/ask", content=body())
    assert response.status_code == 413
    assert len(sent) < 20                        # stopped right after 16 KB


async def test_api_keys_guard_ask_and_stats_but_not_healthz(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline, api_keys=["k1", "k2"]) as client:
        missing = await client.post("/ask", json={"question": QUESTION})
        wrong = await client.post("/ask", json={"question": QUESTION}, headers={"authorization": "Bearer nope"})
        right = await client.post("/ask?stream=false", json={"question": QUESTION},
                                  headers={"authorization": "Bearer k2"})
        stats = await client.get("/stats")
        health = await client.get("/healthz")
    assert missing.status_code == wrong.status_code == stats.status_code == 401
    assert missing.headers["www-authenticate"] == "Bearer"
    assert right.status_code == 200 and health.status_code == 200


async def test_admission_limit_answers_503_with_retry_after(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline, max_concurrent=1, retry_after_s=3) as client:
        slow = asyncio.create_task(client.post("/ask?stream=false", json={"question": QUESTION + " [[fake:slow=0.05]]"}))
        await asyncio.sleep(0.3)
        rejected = await client.post("/ask", json={"question": QUESTION})
        assert (await slow).status_code == 200
    assert rejected.status_code == 503 and rejected.headers["retry-after"] == "3"


# ---------------------------------------------------------------- other routes

async def test_healthz_stats_openapi(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline) as client:
        await client.post("/ask", json={"question": QUESTION})
        await client.post("/ask", json={"question": "Explain quantum chromodynamics gluon confinement"})
        await client.post("/ask?stream=false", json={"question": QUESTION + " [[fake:error]]"})
        health = (await client.get("/healthz")).json()
        stats = (await client.get("/stats")).json()
        spec = (await client.get("/openapi.json")).json()
    served = health.pop("served")
    assert health == {"status": "ok", "in_flight": 0, "max_concurrent": 32, "engine": "fake", "model": "fake",
                      "index": {"chunks": 3, "version": 3}}
    assert served | {"commit": None} == {"commit": None, "engine": "fake", "model": "fake", "index_version": 3,
                                         "embedder": None}       # the stub index server does not say
    assert stats["answers"] == 3 and stats["answered"] == 1
    assert stats["refusals"] == {"gate": 1} and stats["errors"] == {"generation": 1}
    assert stats["latency_ms"]["total_ms"]["p50"] is not None and stats["tokens"]["completion"] > 0
    assert "post" in spec["paths"]["/ask"] and "AskRequest" in spec["components"]["schemas"]


# ---------------------------------------------------------------- disconnects

async def _drive_until_first_token_then_disconnect(app: Any, body: bytes, path: str, query: bytes) -> list[dict]:
    """Speak ASGI directly: send the body, then disconnect once a token (or anything,
    in JSON mode: after a delay) was sent."""
    sent: list[dict] = []
    disconnect = asyncio.Event()
    messages = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        if messages:
            return messages.pop(0)
        await disconnect.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)
        if b"event: token" in message.get("body", b""):
            disconnect.set()

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
             "root_path": "", "headers": [(b"content-type", b"application/json")], "client": ("127.0.0.1", 1),
             "server": ("test", 80)}
    task = asyncio.create_task(app(scope, receive, send))
    if query:                                   # JSON mode: nothing is sent before the end
        await asyncio.sleep(0.3)
        disconnect.set()
    await asyncio.wait_for(task, 10)
    return sent


@pytest.mark.parametrize("query", [b"", b"stream=false"])
async def test_client_disconnect_aborts_generation(local_pipeline: LocalPipeline, query: bytes) -> None:
    app = create_app(local_pipeline, fake_settings())
    body = json.dumps({"question": QUESTION + " [[fake:slow=0.1]]"}).encode()
    await _drive_until_first_token_then_disconnect(app, body, "/ask", query)
    for _ in range(50):
        if local_pipeline.engine.aborted:
            break
        await asyncio.sleep(0.02)
    assert len(local_pipeline.engine.aborted) == 1
    assert app.state.admission.in_flight == 0

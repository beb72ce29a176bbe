"""The four stages of an answer run through one stage runner (serve_app.answer):
each failure becomes the one terminal error event with its stage, a safe
message, and (JSON mode) the HTTP status mapped from that stage."""
from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from deployments.errors import Busy, EngineUnavailable, McpTimeout
from serve_app.ingress import create_app
from serve_app.local import LocalPipeline
from tests.serve.conftest import fake_settings
from tests.serve.failing import FailingPipeline
from tests.serve.sse import parse_sse

pytestmark = pytest.mark.asyncio(loop_scope="session")

QUESTION = "What does the proxy answer when the queue is full?"


async def _both_modes(pipeline: Any) -> tuple[httpx.Response, list[tuple[str, dict]]]:
    app = create_app(pipeline, fake_settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        as_json = await client.post("/ask?stream=false", json={"question": QUESTION})
        as_sse = await client.post("/ask", json={"question": QUESTION})
    assert as_sse.status_code == 200
    return as_json, parse_sse(as_sse.text)


@pytest.mark.parametrize(("call", "error", "status", "stage", "message"), [
    ("search", McpTimeout("the index did not answer within 10 s"), 502, "retrieval",
     "the index did not answer within 10 s"),
    ("search", KeyError("/secret/path"), 502, "retrieval", "retrieval failed"),
    ("decide", RuntimeError("/secret/path"), 500, "internal", "the gate failed"),
    ("stream", EngineUnavailable("the engine refused the request"), 502, "generation",
     "the engine refused the request"),
    ("stream", ValueError("/secret/path"), 502, "generation", "generation failed"),
    ("check", RuntimeError("/secret/path"), 500, "internal", "the answer could not be checked"),
])
async def test_a_failing_stage_ends_the_answer_with_one_error_event(
        local_pipeline: LocalPipeline, call: str, error: Exception, status: int, stage: str, message: str,
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="askdocs.answer"):
        response, events = await _both_modes(FailingPipeline(local_pipeline, call, error, after_first=True))

    assert response.status_code == status
    assert response.json()["error"]["stage"] == stage and response.json()["error"]["message"] == message
    assert "secret" not in response.text and all("secret" not in str(data) for _, data in events)
    names = [name for name, _ in events]
    assert names.count("error") == 1 and names[-1] == "error" and "done" not in names
    assert events[-1][1]["stage"] == stage and events[-1][1]["message"] == message
    # Sources go out once the answer is past the gate, never for a retrieval or gate failure.
    assert ("sources" in names) == (call in ("stream", "check"))
    # Only a failure the stage does not expect is logged with its traceback.
    assert any(r.exc_info for r in caplog.records) == ("secret" in str(error))


async def test_a_partial_answer_travels_with_a_later_failure(local_pipeline: LocalPipeline) -> None:
    _, events = await _both_modes(FailingPipeline(local_pipeline, "check", RuntimeError("boom")))
    streamed = "".join(data["text"] for name, data in events if name == "token")
    assert streamed and events[-1][1]["partial"] == streamed.strip()


async def test_busy_before_sources_is_a_503_not_an_error_event(local_pipeline: LocalPipeline) -> None:
    app = create_app(FailingPipeline(local_pipeline, "search", Busy(retry_after_s=7)), fake_settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.post("/ask", json={"question": QUESTION})
    assert response.status_code == 503 and response.headers["retry-after"] == "7"
    assert response.json()["error"]["stage"] == "capacity"


class _Recording:
    """The real pipeline, recording what retrieval was asked for and how many passages the Gate got."""

    def __init__(self, inner: LocalPipeline) -> None:
        self.inner, self.settings = inner, inner.settings
        self.asked_k: list[int] = []
        self.returned: list[int] = []
        self.gated: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def search(self, question: str, k: int, collection: str | None, trace: Any = None) -> Any:
        self.asked_k.append(k)
        found = await self.inner.search(question, k, collection, trace)
        self.returned.append(len(found))
        return found

    async def decide(self, question: str, passages: list[Any], trace: Any = None) -> Any:
        self.gated.append(len(passages))
        return await self.inner.decide(question, passages, trace)


@pytest.mark.parametrize("k", [1, 2, 4])
async def test_the_gate_weighs_four_passages_whatever_k_while_the_answer_gets_k(
        local_pipeline: LocalPipeline, k: int) -> None:
    recording = _Recording(local_pipeline)
    app = create_app(recording, fake_settings())
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.post("/ask?stream=false", json={"question": QUESTION, "k": k})
    assert response.status_code == 200
    assert recording.asked_k == [4] and recording.gated == recording.returned    # the stub index holds 3
    assert len(response.json()["data"]["sources"]) == min(k, recording.returned[0]) and recording.returned[0] > 1

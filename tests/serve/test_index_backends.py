"""The ingress over each index server the Retriever supports: the real
`docindex serve-mcp` (tiny index) and a crag-mcp stand-in that offers only
`crag_search` and `crag_stats` (tests/stubs/crag_mcp_server.py). Same
questions, same contract: answers with sources, /healthz 200 saying what is
served, a collection the index lacks is a 422 that says why."""
from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from serve_app.ingress import create_app
from tests.serve.conftest import fake_settings, index_of
from tests.serve.test_docindex_integration import DOCS
from tests.stubs import crag_command

pytestmark = pytest.mark.asyncio(loop_scope="module")

# backend → (a question it can answer, the source that answers it)
QUESTIONS = {
    "docindex": ("What happens when the request queue is full?", "limits.md"),
    "crag-mcp": ("What does the proxy answer when the queue is full?", "serve/backpressure.md"),
}


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_of(tmp_path_factory.mktemp("tiny-docs"), DOCS)


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["docindex", "crag-mcp"])
async def backend(request: pytest.FixtureRequest, tiny_index: Path) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    from serve_app.local import build_local_pipeline

    if request.param == "docindex":
        settings = fake_settings(db=str(tiny_index), mcp_command=None, mcp_call_timeout_s=60.0)
    else:
        settings = fake_settings(mcp_command=crag_command(), mcp_call_timeout_s=60.0)
    pipeline = await build_local_pipeline(settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(pipeline, settings)),
                                 base_url="http://test", timeout=60) as client:
        yield request.param, client
    await pipeline.close()


async def test_answers_cite_the_passage_that_answers(backend: tuple[str, httpx.AsyncClient]) -> None:
    name, client = backend
    question, source = QUESTIONS[name]
    response = await client.post("/ask?stream=false", json={"question": question, "k": 3})
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()["data"]
    assert data["sources"][0]["source"] == source and data["refused"] is False and data["citations"]


async def test_healthz_is_ok_and_says_what_is_served(backend: tuple[str, httpx.AsyncClient]) -> None:
    name, client = backend
    response = await client.get("/healthz")
    assert response.status_code == 200, response.text
    health = response.json()
    served = health["served"]
    assert health["status"] == "ok" and (health["engine"], health["model"]) == ("fake", "fake")
    assert set(served) == {"commit", "engine", "model", "index_version", "embedder"}
    assert served["commit"] is None or re.fullmatch(r"[0-9a-f]{40}", served["commit"])
    assert (served["engine"], served["model"]) == ("fake", "fake")
    if name == "crag-mcp":      # crag-mcp counts chunks (crag_stats) and has no index version
        assert health["index"] == {"chunks": 4, "version": None} and served["index_version"] is None
        assert served["embedder"] is None                                 # nor says which embedder runs
    else:
        assert health["index"]["chunks"] >= 3 and served["index_version"] == health["index"]["version"] >= 1
        assert served["embedder"] is None or re.fullmatch(r"[\w.-]+\.onnx", served["embedder"])   # a basename


async def test_a_collection_the_index_lacks_is_422_saying_why(backend: tuple[str, httpx.AsyncClient]) -> None:
    name, client = backend
    question, _ = QUESTIONS[name]
    response = await client.post("/ask", json={"question": question, "collection": "nope"})
    assert response.status_code == 422 and response.json()["error"]["stage"] == "request"
    message = response.json()["error"]["message"]
    assert "'nope'" in message
    if name == "crag-mcp":
        assert "this index has no collections" in message and "ask without a collection" in message


async def test_a_question_of_only_stopwords_is_422_saying_what_to_change(
        backend: tuple[str, httpx.AsyncClient], caplog: pytest.LogCaptureFixture, request: pytest.FixtureRequest) -> None:
    name, client = backend
    responses = [await client.post("/ask", json={"question": "the of and"}),
                 await client.post("/ask?stream=false", json={"question": "the of and"})]
    if name == "docindex":      # crag-mcp has no stopword rule: it searches them (no 4xx, no 5xx either)
        for response in responses:
            assert response.status_code == 422, response.text
            error = response.json()["error"]
            assert error["stage"] == "request" and "ask with content words" in error["message"]
    else:
        assert all(r.status_code == 200 for r in responses)
    assert not [r for r in caplog.records if r.levelname == "ERROR"]

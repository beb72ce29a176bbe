"""The shipped combination, without Ray: the real `docindex serve-mcp` behind the pipeline's
MCP pool and the extractive engine. The Retriever's search brings the sentence vectors ingest
stored, and an answer then runs MiniLM on the question alone."""
from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from serve_app.ingress import create_app
from serve_app.local import build_local_pipeline
from tests.engines.test_extractive_stored_vectors import CountingEmbedder
from tests.serve.conftest import fake_settings, index_of

DOCS = {
    "limits.md": "# Limits\n\n## Queue full\n\nWhen the request queue of a deployment is full, "
                 "the proxy rejects new requests with status 503 and a Retry-After header. "
                 "Clients should wait for the number of seconds it gives before they retry.\n",
    "install.md": "# Install\n\n## Python\n\nInstall the package with pip into a virtual environment. "
                  "Python 3.11 or newer is required.\n",
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_of(tmp_path_factory.mktemp("stored-docs"), DOCS)


async def test_an_answer_embeds_only_the_question(index: Path) -> None:
    settings = fake_settings(db=str(index), mcp_command=None, mcp_call_timeout_s=60.0, engine="extractive")
    assert settings.wants_quote_vectors()
    pipeline = await build_local_pipeline(settings)
    try:
        passages = await pipeline.search("What does the proxy do when the queue is full?", 2, None)
        assert passages and all(p.quote_vectors for p in passages)
        pipeline.engine._embedder = counting = CountingEmbedder(pipeline.engine._embedder)
        app = create_app(pipeline, settings)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test",
                                     timeout=60) as client:
            question = "What does the proxy do when the request queue is full?"
            response = await client.post("/ask?stream=false", json={"question": question, "k": 2})
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        assert "503" in data["answer"] and data["invalid_citations"] == [] and not data["refused"]
        assert counting.texts == [question]
    finally:
        await pipeline.close()


def test_only_an_engine_that_reads_them_makes_the_retriever_fetch_them() -> None:
    assert not fake_settings(engine="fake").wants_quote_vectors()
    assert not fake_settings(engine="extractive", engine_options={"embedder": "none"}).wants_quote_vectors()
    assert fake_settings(engine="extractive", engine_options={"embedder": "static"}).wants_quote_vectors()

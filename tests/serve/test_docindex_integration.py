"""The ingress and pipeline over the real `docindex serve-mcp` on a tiny index."""
from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from serve_app.ingress import create_app
from tests.serve.conftest import fake_settings, index_of

pytestmark = pytest.mark.asyncio(loop_scope="module")
BASE_URL = "https://docs.example/tiny/"     # `docindex ingest --base-url`: citations carry url#anchor

DOCS = {
    "scaling.md": "# Scaling\n\n## Replicas\n\nA deployment scales out by adding replicas. "
                  "Autoscaling adds replicas when ongoing requests exceed the target.\n",
    "limits.md": "# Limits\n\n## Queue full\n\nWhen the request queue of a deployment is full, "
                 "the proxy rejects new requests with status 503 and a Retry-After header.\n",
    "install.md": "# Install\n\n## Python\n\nInstall the package with pip into a virtual environment.\n",
}


@pytest.fixture(scope="module")
def tiny_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_of(tmp_path_factory.mktemp("tiny-docs"), DOCS, base_url=BASE_URL)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tiny_index: Path) -> AsyncIterator[httpx.AsyncClient]:
    from serve_app.local import build_local_pipeline

    settings = fake_settings(db=str(tiny_index), mcp_command=None, mcp_call_timeout_s=60.0)
    pipeline = await build_local_pipeline(settings)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(pipeline, settings)),
                                 base_url="http://test", timeout=60) as c:
        yield c
    await pipeline.close()


async def ask(client: httpx.AsyncClient, **body: Any) -> dict:
    response = await client.post("/ask?stream=false", json=body)
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def test_answer_cites_the_relevant_section(client: httpx.AsyncClient) -> None:
    data = await ask(client, question="What happens when the request queue is full?", k=3)
    top = data["sources"][0]
    assert top["source"] == "limits.md" and top["anchor"] == "queue-full" and top["cosine"] > 0.3
    assert data["citations"] and data["refused"] is False and data["invalid_citations"] == []


async def test_unrelated_question_is_refused_by_the_gate(client: httpx.AsyncClient) -> None:
    data = await ask(client, question="Which river flows through the capital of Mongolia?")
    assert data["refused"] is True and data["refusal_stage"] == "gate"
    assert data["unknown_names"] == ["Mongolia"]        # docindex: no chunk uses it (the Gate's name clause)
    answered = await ask(client, question="What happens when the request queue is full?", k=3)
    assert answered["unknown_names"] == []
    # an identifier or acronym no chunk uses is told too, and weighs nothing in the Gate (gate_rule.unmentioned)
    told = await ask(client, question="What happens when the request queue is full over SOCKS5 with max_queue_depth?")
    assert told["refused"] is False and told["unknown_names"] == ["SOCKS5", "max_queue_depth"]


async def test_collections_and_health(client: httpx.AsyncClient) -> None:
    scoped = await ask(client, question="How do I install it?", collection="docs")
    assert scoped["sources"][0]["source"] == "install.md"
    unknown = await client.post("/ask", json={"question": "install", "collection": "nope"})
    assert unknown.status_code == 422
    health = (await client.get("/healthz")).json()
    assert health["status"] == "ok" and health["index"]["chunks"] >= 3 and health["index"]["version"] >= 1


async def test_sources_carry_the_collections_deep_links(client: httpx.AsyncClient) -> None:
    """--base-url → docindex's search payload → the Retriever's Passage → the ingress's sources."""
    data = await ask(client, question="What happens when the request queue is full?", k=3)
    assert data["sources"][0]["url"] == f"{BASE_URL}limits.md#queue-full"
    assert all(s["url"] == f"{BASE_URL}{s['source']}#{s['anchor']}" for s in data["sources"])


def _archived_urls(body: bytes) -> tuple[str, set[str]]:
    import io
    import json
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        manifest = json.loads(tar.extractfile(".docindex-tree").read())  # type: ignore[union-attr]
        texts = [tar.extractfile(m).read().decode() for m in tar.getmembers()  # type: ignore[union-attr]
                 if m.isfile() and m.name.endswith(".md") and m.name != "INDEX.md"]
    urls = {line.partition(": ")[2] for text in texts for line in text.splitlines() if line.startswith("url: ")}
    return manifest["contentHash"], urls


async def test_the_archive_carries_the_links_and_its_hash_moves_with_the_url(client: httpx.AsyncClient,
                                                                              tiny_index: Path) -> None:
    from docindex.ingest import ingest

    first = await client.get("/ask/archive")
    assert first.status_code == 200, first.text
    first_hash, first_urls = _archived_urls(first.content)
    assert f"{BASE_URL}limits.md#queue-full" in first_urls
    try:
        ingest([tiny_index.parent], tiny_index, "docs", base_url="https://mirror.example/")   # same files
        second = await client.get("/ask/archive", headers={"if-none-match": first.headers["etag"]})
        assert second.status_code == 200 and second.headers["etag"] != first.headers["etag"]
        second_hash, second_urls = _archived_urls(second.content)
        assert second_hash != first_hash and "https://mirror.example/limits.md#queue-full" in second_urls
    finally:
        ingest([tiny_index.parent], tiny_index, "docs", base_url=BASE_URL)

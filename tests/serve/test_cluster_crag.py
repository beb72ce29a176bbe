"""The deployed graph over a crag_search-only index server (the crag-mcp stand-in,
tests/stubs/crag_mcp_server.py): a second application (`/crag`) beside the
fake-engine one on the session's real cluster. It answers, its /healthz is
200 (health from crag_stats), and a collection is a 422 that says the index
has none, crossing the Retriever replica as a value, not a replica failure."""
from __future__ import annotations

import copy
from collections.abc import Iterator

import httpx
import pytest

from tests.serve.conftest import Cluster, wait_healthy
from tests.stubs import crag_command

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]
QUESTION = "What does the proxy answer when the queue is full?"


@pytest.fixture(scope="module")
def crag_url(serve_cluster: Cluster) -> Iterator[str]:
    from ray import serve
    from ray.serve.context import _get_global_client
    from ray.serve.schema import ServeDeploySchema

    # Serve's deploy is declarative: resend the running app's exact config with the new app beside it.
    config = copy.deepcopy(serve_cluster.config)
    crag = copy.deepcopy(config["applications"][0])
    crag.update(name="askdocs-crag", route_prefix="/crag")
    crag["args"] = dict(crag["args"], mcp_command=crag_command("--tag", "askdocs-crag-test"))
    crag["args"].pop("otel_endpoint", None)
    config["applications"].append(crag)
    _get_global_client().deploy_apps(ServeDeploySchema.model_validate(config), _blocking=False)
    url = f"{serve_cluster.url}/crag"
    if not wait_healthy(url, 300):
        pytest.fail(f"askdocs-crag did not become healthy: {serve.status()}")
    yield url
    serve.delete("askdocs-crag")


def test_a_crag_search_only_index_serves_answers_health_and_422s(crag_url: str) -> None:
    health = httpx.get(f"{crag_url}/healthz", timeout=30)
    assert health.status_code == 200, health.text
    assert health.json()["index"] == {"chunks": 4, "version": None}
    assert health.json()["served"]["index_version"] is None

    answer = httpx.post(f"{crag_url}/ask?stream=false", json={"question": QUESTION}, timeout=60)
    assert answer.status_code == 200, answer.text
    data = answer.json()["data"]
    assert data["sources"][0]["source"] == "serve/backpressure.md" and data["refused"] is False

    scoped = httpx.post(f"{crag_url}/ask", json={"question": QUESTION, "collection": "docs"}, timeout=60)
    assert scoped.status_code == 422, scoped.text
    assert "this index has no collections" in scoped.json()["error"]["message"]

"""The embedded default engine (llama.cpp + the tiny SmolLM2 GGUF) answering
through the deployed Serve graph, on the session's one real Ray cluster.

A second application (`/llm`) beside the fake-engine one, with the shipped
serve_config.yaml limits (Generator slot-matched at 1). Asserts the protocol
and the timings, never the tiny model's wording.
"""
from __future__ import annotations

import copy

import httpx
import pytest
import yaml

from tests.serve.conftest import REPO, Cluster, stub_command, wait_healthy
from tests.serve.sse import parse_sse

pytestmark = [pytest.mark.cluster, pytest.mark.model, pytest.mark.timeout(600)]
pytest.importorskip("llama_cpp")


@pytest.fixture(scope="module")
def llm_url(serve_cluster: Cluster):
    from ray import serve
    from ray.serve.context import _get_global_client
    from ray.serve.schema import ServeDeploySchema

    # Serve's deploy is declarative: resend the running app's exact config
    # (left untouched) with the new app beside it.
    config = copy.deepcopy(serve_cluster.config)
    llm = copy.deepcopy(yaml.safe_load((REPO / "serve_config.yaml").read_text())["applications"][0])
    llm.update(name="askdocs-llm", route_prefix="/llm")
    llm["args"] = dict(llm["args"], engine="llamacpp", model="", mcp_command=stub_command("askdocs-llm-test"),
                       mcp_pool_size=1, max_tokens=24, engine_options={"n_threads": 2})
    config["applications"].append(llm)
    _get_global_client().deploy_apps(ServeDeploySchema.model_validate(config), _blocking=False)
    url = f"{serve_cluster.url}/llm"
    if not wait_healthy(url, 300):
        pytest.fail(f"askdocs-llm did not become healthy: {serve.status()}")
    yield url
    serve.delete("askdocs-llm")


def test_tiny_gguf_answers_over_sse_through_the_graph(llm_url: str) -> None:
    health = httpx.get(f"{llm_url}/healthz", timeout=10).json()
    assert health["engine"] == "llamacpp" and health["model"]
    response = httpx.post(f"{llm_url}/ask", json={"question": "How does Ray Serve scale a deployment?"},
                          timeout=300)
    assert response.status_code == 200
    events = parse_sse(response.text)
    names = [name for name, _ in events]
    assert names[0] == "sources" and names[-1] == "done", names
    assert "token" in names                                   # the model produced text
    done = events[-1][1]
    assert done["refused"] in (False, True) and done["refusal_stage"] in (None, "model")
    assert done["usage"]["prompt_tokens"] > 0 and 0 < done["usage"]["completion_tokens"] <= 24
    t = done["timings"]
    assert 0 < t["ttft_ms"] <= t["total_ms"] and t["generation_ms"] > 0 and t["retrieval_ms"] > 0
    assert len(done["trace_id"]) == 32

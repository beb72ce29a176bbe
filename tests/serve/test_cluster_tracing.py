"""One answer on the real cluster arrives at an OTLP/HTTP collector as one
connected trace: the ingress and each deployment export from their own
process, and the spans link up through the carriers passed in handle calls.
Uses the session's one cluster (tests/serve/conftest.py), whose replicas
export to a stand-in collector (tests/ops/otlp_receiver.py)."""
from __future__ import annotations

import time

import httpx
import pytest

from tests.serve.conftest import Cluster
from tests.serve.sse import parse_sse

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

# name → (parent's name, service that exported it)
EXPECTED = {
    "askdocs.answer": (None, "askdocs-ingress"),
    "retrieval": ("askdocs.answer", "askdocs-ingress"),
    "tools/call crag_search": ("retrieval", "askdocs-retriever"),
    "gate": ("askdocs.answer", "askdocs-ingress"),
    "gate.decide": ("gate", "askdocs-gate"),
    "generation": ("askdocs.answer", "askdocs-ingress"),
    "generator.stream": ("generation", "askdocs-generator"),
    "citations": ("askdocs.answer", "askdocs-ingress"),
    "citations.check": ("citations", "askdocs-citations"),
}


def test_one_answer_is_one_trace_across_the_deployment_processes(serve_cluster: Cluster) -> None:
    response = httpx.post(f"{serve_cluster.url}/ask", json={"question": "What does the proxy answer when "
                                                                        "the queue is full?"}, timeout=60)
    name, done = parse_sse(response.text)[-1]
    assert name == "done"
    trace_id = done["trace_id"]
    assert response.headers["x-trace-id"] == trace_id

    deadline = time.monotonic() + 30     # replicas export every 200 ms (conftest); a loaded box is slow
    while time.monotonic() < deadline:
        spans = [s for s in serve_cluster.otlp.spans() if s.trace_id == trace_id]
        if {s.name for s in spans} >= set(EXPECTED):
            break
        time.sleep(0.3)
    by_name = {s.name: s for s in spans}
    assert set(by_name) == set(EXPECTED), f"spans of {trace_id}: {sorted(by_name)}"
    by_id = {s.span_id: s.name for s in spans}
    assert {n: (by_id.get(s.parent_id), s.service) for n, s in by_name.items()} == EXPECTED
    assert len({s.service for s in spans}) == 5          # five processes, one trace
    generation = by_name["generation"]
    assert [e.name for e in generation.span.events] == ["first_token"]
    assert generation.attributes()["gen_ai.response.finish_reasons"] == ("stop",)
    assert generation.attributes()["gen_ai.usage.output_tokens"] > 0

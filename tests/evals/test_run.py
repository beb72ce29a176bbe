"""The runner's HTTP side, against a mock service (the real one is exercised by the committed runs)."""
from __future__ import annotations

import json

import httpx

from evals.cases import parse_case
from evals.run import ask, service_records

CASE = parse_case({"id": "f1", "kind": "factual", "question": "Only dependency?", "sources": [["README.md"]],
                   "key_facts": ["libcurl"]})
SOURCES = [{"n": 1, "source": "README.md", "anchor": "cmcp", "title": "cMCP", "text": "corpus text stays out",
            "cosine": 0.61234567, "bm25": 3.2, "fusion": 0.0328}]
DONE = {"answer": "libcurl [1].", "citations": [1], "invalid_citations": [], "unsupported_sentences": [],
        "support": 1.0, "refused": False, "refusal_stage": None, "truncated": False,
        "usage": {"prompt_tokens": 10, "completion_tokens": 3}, "timings": {"total_ms": 5.0}, "trace_id": "t"}


def client_answering(status: int, envelope: dict, seen: list | None = None) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(request)
        return httpx.Response(status, json=envelope)
    return httpx.Client(transport=httpx.MockTransport(handler))


def test_a_json_answer_becomes_a_record_without_passage_text():
    seen: list[httpx.Request] = []
    client = client_answering(200, {"success": True, "data": {**DONE, "sources": SOURCES}, "error": None}, seen)
    record, texts = ask(client, "http://svc", CASE, k=None, collection=None, timeout_s=5)
    assert seen[0].url.params["stream"] == "false" and json.loads(seen[0].content) == {"question": "Only dependency?"}
    assert record["mode"] == "service" and record["case_sha"] == CASE.sha and "error" not in record
    assert record["answer"] == "libcurl [1]." and record["citations"] == [1]
    assert record["sources"] == [{"source": "README.md", "anchor": "cmcp", "title": "cMCP", "cosine": 0.6123,
                                  "bm25": 3.2, "fusion": 0.0328}]
    assert texts == {1: "corpus text stays out"}          # kept in memory for the judge only


def test_k_and_collection_are_sent_when_given():
    seen: list[httpx.Request] = []
    client = client_answering(200, {"success": True, "data": {**DONE, "sources": []}, "error": None}, seen)
    ask(client, "http://svc", CASE, k=1, collection="cmcp", timeout_s=5)
    assert json.loads(seen[0].content) == {"question": "Only dependency?", "k": 1, "collection": "cmcp"}


def test_a_502_envelope_is_recorded_as_an_error_with_its_stage():
    client = client_answering(502, {"success": False, "data": None,
                                    "error": {"stage": "generation", "message": "engine down"}})
    record, _ = ask(client, "http://svc", CASE, k=None, collection=None, timeout_s=5)
    assert record["error"] == {"status": 502, "stage": "generation", "message": "engine down"}


def test_an_unreachable_service_is_an_error_record_not_a_crash(tmp_path):
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")
    client = httpx.Client(transport=httpx.MockTransport(refuse))
    records = service_records([CASE], "http://svc", k=None, collection=None, timeout_s=1, judge=None,
                              progress=False, partial=tmp_path / "p.jsonl", client=client)
    assert records["f1"]["error"]["stage"] == "client"
    assert json.loads((tmp_path / "p.jsonl").read_text())["id"] == "f1"

"""The MCP Knowledge Service's tools and crag-mcp's `crag_stats` on `docindex serve-mcp`,
and integer arguments out of SQLite's range refused as argument errors (issue 17 item 8)."""
from __future__ import annotations

import re

import pytest

from .conftest import mcp_client

pytestmark = pytest.mark.timeout(300)


def only_text(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


async def test_query_knowledge_hub_takes_ks_arguments_and_the_default_collection(small_index):
    async with mcp_client(small_index, "--collection", "docs") as client:
        found = await client.call_tool("query_knowledge_hub", {"query": "quokka license key", "top_k": 2})
        assert not found.is_error
        payload = found.structured_content
        assert payload["query"] == "quokka license key" and payload["collection"] == "docs"
        first = payload["results"][0]
        assert {"doc_id", "chunk_id", "title", "content", "source", "anchor", "collection", "score", "scores"} <= set(first)
        assert len(payload["results"]) <= 2 and {r["collection"] for r in payload["results"]} == {"docs"}
        assert (first["source"], first["anchor"]) == ("guide/install.md", "requirements")
        assert first["score"] == first["scores"]["cosine"] and "quokka license key" in first["content"]
        assert found.content[0].text.startswith("[cos ") and "guide/install.md#requirements" in found.content[0].text

        elsewhere = await client.call_tool("query_knowledge_hub", {"query": "teleport mode", "collection": "notes"})
        assert {r["source"] for r in elsewhere.structured_content["results"]} == {"notes.md"}

        refused = {
            (("query", "x"), ("top_k", 21)): "value above maximum (path: /top_k, keyword: maximum)",
            (("query", "x"), ("k", 3)): "unexpected property (path: /k, keyword: additionalProperties)",
            (("query", "the of and"),): "the query has only stopwords or punctuation: ask with content words (path: /query)",
        }
        for arguments, tail in refused.items():
            result = await client.call_tool("query_knowledge_hub", dict(arguments))
            assert result.is_error and only_text(result) == f"Invalid arguments for tool 'query_knowledge_hub': {tail}"


async def test_get_document_summary_is_extractive_with_tags(small_index):
    async with mcp_client(small_index) as client:
        doc = (await client.call_tool("get_document", {"source": "guide/install.md"})).structured_content
        result = await client.call_tool("get_document_summary", {"doc_id": doc["doc_id"]})
        assert not result.is_error
        summary = result.structured_content
        assert set(summary) == {"doc_id", "collection", "title", "summary", "tags", "source", "chunk_count", "metadata"}
        assert (summary["title"], summary["source"], summary["collection"]) == ("Installation", "guide/install.md", "docs")
        assert summary["chunk_count"] == doc["chunk_count"] and summary["metadata"] == doc["metadata"]
        # Every summary sentence is one of the document's own sentences, word for word.
        text = " ".join(c for c in [
            "How to install the frobnicator on a workstation or a server, from the release archive or from source.",
            "The frobnicator needs Python 3.11 and a quokka license key.",
            "Both must be in place before the installer runs.",
            "If the daemon prints `E_QUOKKA_EXPIRED`, renew the quokka license.",
            "The daemon reads the renewed license when it starts again."])
        assert summary["summary"] and all(s in text for s in re.split(r"(?<=\.)\s+", summary["summary"]))
        assert summary["tags"][:2] == ["requirements", "troubleshooting"] and "quokka" in summary["tags"]

        by_source = await client.call_tool("get_document_summary", {"doc_id": "guide/install.md"})
        assert by_source.structured_content == summary
        missing = await client.call_tool("get_document_summary", {"doc_id": 999_999})
        assert missing.is_error and only_text(missing) == "no document with doc_id 999999"


@pytest.mark.parametrize("tool, arguments", [
    ("get_document", {"doc_id": 2**63}),
    ("get_document_summary", {"doc_id": 2**63}),
    ("get_document", {"doc_id": 10**30}),
])
async def test_ids_beyond_sqlite_integers_are_argument_errors(small_index, tool, arguments):
    async with mcp_client(small_index) as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        assert only_text(result) == f"Invalid arguments for tool '{tool}': value above maximum (path: /doc_id, keyword: maximum)"
        largest = await client.call_tool(tool, {"doc_id": 2**63 - 1})     # in range: simply not found
        assert largest.is_error and only_text(largest) == f"no document with doc_id {2**63 - 1}"


async def test_crag_stats_tool_answers_like_the_crag_stats_resource(small_index):
    async with mcp_client(small_index) as client:
        tool = await client.call_tool("crag_stats", {})
        resource = (await client.read_resource("crag://stats")).contents[0].text
        assert not tool.is_error and only_text(tool) == resource
        assert re.fullmatch(r"db:     \S.*\nchunks: [1-9]\d*\nfiles:  3\ndim:    384", resource)
        extra = await client.call_tool("crag_stats", {"verbose": True})
        assert only_text(extra) == ("Invalid arguments for tool 'crag_stats': unexpected property "
                                    "(path: /verbose, keyword: additionalProperties)")

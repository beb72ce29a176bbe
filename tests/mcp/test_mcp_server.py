"""`docindex serve-mcp` as a real subprocess over real stdio, driven by the official MCP client."""
from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
from pathlib import Path

import anyio
import pytest
import yaml
from mcp import MCPError

from docindex import store
from docindex.ingest import ingest
from docindex.mcp.contract import CRAG_SEARCH_SCHEMA, NO_MATCH_TEXT
from docindex.mcp.payloads import passages_result

from .conftest import FAQ, GUIDE, mcp_client, write_corpus

pytestmark = pytest.mark.timeout(300)

PASSAGE = re.compile(r"^\[cos -?\d\.\d{3}  bm25 \d+\.\d{2}  fusion \d\.\d{3}\] (?P<source>[^\n]+)\n(?P<text>.*)$", re.S)
TOOLS = {"crag_search", "crag_stats", "search", "query_knowledge_hub", "list_collections", "get_document",
         "get_document_summary", "fetch_docs", "quote_vectors"}


def only_text(result) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


async def resource_json(client, uri: str) -> dict:
    result = await client.read_resource(uri)
    return json.loads(result.contents[0].text)


def files_under(root: Path) -> set[Path]:
    return {Path(d) / f for d, _dirs, fs in os.walk(root) for f in fs}


# --------------------------------------------------------------------------- handshake


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_handshake_advertises_tools_schema_and_instructions(small_index, mode):
    async with mcp_client(small_index, mode=mode) as client:
        if mode == "legacy":
            assert client.protocol_version == "2025-11-25"  # what crag-mcp speaks
        assert client.server_info.name == "docindex"
        instructions = client.instructions or ""
        assert "fetch_docs" in instructions and "anchor" in instructions and "grep" in instructions

        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        assert tools["crag_search"].input_schema == CRAG_SEARCH_SCHEMA
        assert tools["crag_search"].input_schema == {
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1},
                "k": {"type": "integer", "minimum": 1, "maximum": 20, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        }
        for tool in tools.values():
            assert tool.input_schema["additionalProperties"] is False

        result = await client.call_tool("crag_search", {"query": "quokka license"})
        assert not result.is_error and PASSAGE.match(result.content[0].text)


# --------------------------------------------------------------------------- crag_search


async def test_crag_search_returns_one_crag_formatted_item_per_passage(small_index):
    async with mcp_client(small_index) as client:
        result = await client.call_tool("crag_search", {"query": "quokka license renewal", "k": 3})

    assert not result.is_error
    assert len(result.content) == 3
    parsed = [PASSAGE.match(item.text) for item in result.content]
    assert all(parsed)
    passages = result.structured_content["passages"]
    assert [p["source"] for p in passages] == [m["source"] for m in parsed]
    assert [p["text"] for p in passages] == [m["text"] for m in parsed]
    assert passages[0]["source"] == "guide/install.md"
    assert "E_QUOKKA_EXPIRED" in passages[0]["text"] or "quokka license key" in passages[0]["text"]
    assert set(passages[0]) == {"source", "anchor", "title", "text", "cosine", "bm25", "fusion", "score", "fields_bm25",
                                "doc_bm25", "doc_score", "coverage", "doc_cosine", "chunk_id", "collection", "url",
                                "noise_floor", "sentence_cosine", "sentence_floor", "copy_of", "release_notes",
                                "unknown_terms"}
    assert 0.0 <= passages[0]["coverage"] <= 1.0      # why it ranked: the query words it holds (issue 13 item 6)
    assert passages[0]["unknown_terms"] == []      # every word of the query is somewhere in the collection
    floors = {p["noise_floor"] for p in passages}     # what everyday questions reach here (noise_floor.py)
    assert len(floors) == 1 and -1.0 <= floors.pop() < 1.0
    # and over sentences: ingest stored quote vectors, so the Gate's sentence clause has both sides
    sentence_floors = {p["sentence_floor"] for p in passages}
    assert len(sentence_floors) == 1 and -1.0 <= sentence_floors.pop() <= 1.0
    assert any(isinstance(p["sentence_cosine"], float) and -1.0 <= p["sentence_cosine"] <= 1.0 for p in passages)
    fusions = [p["fusion"] for p in passages]
    assert fusions == sorted(fusions, reverse=True)
    head = result.content[0].text.split("\n", 1)[0]
    p = passages[0]
    assert head == f"[cos {p['cosine']:.3f}  bm25 {p['bm25']:.2f}  fusion {p['fusion']:.3f}] {p['source']}"


ARGUMENT_ERRORS = [
    ({"query": ""}, "Invalid arguments for tool 'crag_search': string too short (min 1) (path: /query, keyword: minLength)"),
    ({"query": "x", "k": 21}, "Invalid arguments for tool 'crag_search': value above maximum (path: /k, keyword: maximum)"),
    ({"query": "x", "k": 0}, "Invalid arguments for tool 'crag_search': value below minimum (path: /k, keyword: minimum)"),
    ({"query": "x", "k": "5"}, "Invalid arguments for tool 'crag_search': expected type integer (path: /k, keyword: type)"),
    ({"query": 7}, "Invalid arguments for tool 'crag_search': expected type string (path: /query, keyword: type)"),
    ({"k": 3}, "Invalid arguments for tool 'crag_search': missing required property (path: /query, keyword: required)"),
    ({"query": "x", "collection": "docs"},
     "Invalid arguments for tool 'crag_search': unexpected property (path: /collection, keyword: additionalProperties)"),
    ({"query": "   "}, "Invalid arguments for tool 'crag_search': the query is empty (path: /query)"),
]


async def test_bad_arguments_are_readable_is_error_results(small_index):
    async with mcp_client(small_index) as client:
        for arguments, expected in ARGUMENT_ERRORS:
            result = await client.call_tool("crag_search", arguments)
            assert result.is_error, arguments
            assert only_text(result) == expected

        stopwords = await client.call_tool("crag_search", {"query": "the of and"})
        assert stopwords.is_error
        assert re.fullmatch(r"Invalid arguments for tool 'crag_search': .*stopwords.* \(path: /query\)", only_text(stopwords))

        other_tools = {
            ("search", json.dumps({"query": "x", "k": 50})): "value above maximum (path: /k, keyword: maximum)",
            ("search", json.dumps({"query": "x", "rank": "chunks"})):
                "value not in enum (path: /rank, keyword: enum)",
            ("list_collections", json.dumps({"include_stats": "yes"})): "expected type boolean (path: /include_stats, keyword: type)",
            ("fetch_docs", json.dumps({"force": 1})): "expected type boolean (path: /force, keyword: type)",
            ("get_document", json.dumps({"doc_id": 0})): "value below minimum (path: /doc_id, keyword: minimum)",
        }
        for (tool, arguments), tail in other_tools.items():
            result = await client.call_tool(tool, json.loads(arguments))
            assert result.is_error
            assert only_text(result) == f"Invalid arguments for tool '{tool}': {tail}"

        # The session is still healthy after every refusal.
        assert not (await client.call_tool("crag_search", {"query": "toaster"})).is_error


# --------------------------------------------------------------------------- the other tools


async def test_search_list_collections_and_get_document(small_index):
    async with mcp_client(small_index) as client:
        scoped = await client.call_tool("search", {"query": "teleport mode", "k": 5, "collection": "notes"})
        assert not scoped.is_error
        assert {p["collection"] for p in scoped.structured_content["passages"]} == {"notes"}
        assert scoped.structured_content["passages"][0]["anchor"] == "version-2"
        assert PASSAGE.match(scoped.content[0].text)["source"] == "notes.md#version-2"  # citable from text alone

        everywhere = await client.call_tool("search", {"query": "toaster serial port"})
        assert everywhere.structured_content["passages"][0]["source"] == "faq.md"

        # rank: passages (the default, RRF) as Index.search ranks; pages as DOCUMENT_RANKING does.
        from docindex.index import Index
        from docindex.ranking import DOCUMENT_RANKING

        with Index(small_index) as index:
            expected = {"passages": [h.chunk_id for h in index.search("toaster serial port", 5)],
                        "pages": [h.chunk_id for h in index.search("toaster serial port", 5, ranking=DOCUMENT_RANKING)]}
        for rank, ids in expected.items():
            ranked = await client.call_tool("search", {"query": "toaster serial port", "rank": rank})
            assert [p["chunk_id"] for p in ranked.structured_content["passages"]] == ids, rank
        assert [p["chunk_id"] for p in everywhere.structured_content["passages"]] == expected["passages"]

        unknown = await client.call_tool("search", {"query": "toaster", "collection": "nope"})
        assert unknown.is_error
        assert "'nope'" in only_text(unknown) and "docs, notes" in only_text(unknown)

        listed = (await client.call_tool("list_collections", {})).structured_content
        by_name = {c["name"]: c for c in listed["collections"]}
        assert set(by_name) == {"docs", "notes"}
        assert by_name["docs"]["documents"] == 2 and by_name["docs"]["chunks"] >= 3
        assert by_name["docs"]["embed_model"] and by_name["docs"]["index_version"] == listed["index_version"] >= 2
        assert listed["query_embedder"].endswith(".onnx") and "/" not in listed["query_embedder"]  # loaded by the searches
        names_only = (await client.call_tool("list_collections", {"include_stats": False})).structured_content
        assert names_only["collections"] == [{"name": "docs"}, {"name": "notes"}]

        doc = (await client.call_tool("get_document", {"source": "guide/install.md"})).structured_content
        assert doc["title"] == "Installation" and doc["collection"] == "docs"
        assert [s["anchor"] for s in doc["sections"]] == ["installation", "requirements", "troubleshooting"]
        assert doc["sections"][1]["heading_path"] == ["Installation", "Requirements"]
        assert re.fullmatch(r"[0-9a-f]{64}", doc["sha256"]) and doc["chunk_count"] >= 3
        by_id = (await client.call_tool("get_document", {"doc_id": doc["doc_id"]})).structured_content
        assert by_id == doc

        errors = {
            json.dumps({"source": "missing.md"}): "no document with source 'missing.md'",
            json.dumps({"source": "faq.md", "collection": "notes"}): "no document with source 'faq.md' in collection 'notes'",
            json.dumps({"source": "faq.md", "collection": "nope"}): "no collection 'nope'",
            json.dumps({}): "give source or doc_id (path: /source, keyword: required)",
            json.dumps({"source": "faq.md", "doc_id": 1}): "give source or doc_id, not both (path: /doc_id)",
        }
        for arguments, fragment in errors.items():
            result = await client.call_tool("get_document", json.loads(arguments))
            assert result.is_error and fragment in only_text(result), (arguments, only_text(result))

        stats = await resource_json(client, "docindex://stats")
        assert stats["documents"] == 3 and stats["db"] == str(small_index.resolve())
        crag_stats = (await client.read_resource("crag://stats")).contents[0]
        assert crag_stats.mime_type == "text/plain"
        assert re.fullmatch(rf"db:     {re.escape(str(small_index.resolve()))}\nchunks: \d+\nfiles:  3\ndim:    384", crag_stats.text)


async def test_collection_option_scopes_search_by_default(small_index):
    async with mcp_client(small_index, "--collection", "notes") as client:
        result = await client.call_tool("crag_search", {"query": "toaster serial port", "k": 5})
        assert {p["collection"] for p in result.structured_content["passages"]} == {"notes"}
        other = await client.call_tool("search", {"query": "toaster serial port", "collection": "docs"})
        assert other.structured_content["passages"][0]["source"] == "faq.md"


async def test_empty_index_says_it_is_empty_which_is_not_a_no_match(tmp_path):
    db = tmp_path / "empty.db"
    conn, _meta = store.open_for_ingest(db)
    conn.close()
    async with mcp_client(db) as client:
        result = await client.call_tool("crag_search", {"query": "anything at all"})
        assert not result.is_error
        text = only_text(result)
        assert "index is empty" in text and text != NO_MATCH_TEXT
        assert result.structured_content == {"passages": [], "indexEmpty": True}
        assert (await client.call_tool("list_collections", {})).structured_content["collections"] == []
        fetched = await client.call_tool("fetch_docs", {})
        assert fetched.is_error and "empty" in only_text(fetched)
        crag_stats = (await client.read_resource("crag://stats")).contents[0].text
        assert "chunks: 0\nfiles:  0" in crag_stats


def test_no_hits_is_the_crag_no_match_text():
    result = passages_result([])
    assert not result.is_error
    assert [c.text for c in result.content] == [NO_MATCH_TEXT]
    assert result.structured_content == {"passages": []}


# --------------------------------------------------------------------------- fetch_docs


@pytest.fixture()
def writable_index(tmp_path) -> Path:
    docs = write_corpus(tmp_path / "docs", {"guide/install.md": GUIDE, "faq.md": FAQ})
    db = tmp_path / "index.db"
    ingest([docs], db, "docs")
    return db


async def test_fetch_docs_writes_a_tree_once_and_rewrites_after_ingest(writable_index):
    db = writable_index
    cache = db.with_name(db.name + ".cache") / "fetch_docs" / "docs"
    async with mcp_client(db) as client:
        first = await client.call_tool("fetch_docs", {})
        assert not first.is_error
        tree = first.structured_content
        assert set(tree) == {"path", "contentHash", "sections", "tree", "upToDate"}
        assert tree["upToDate"] is False and tree["sections"] >= 4
        root = Path(tree["path"])
        assert root.is_relative_to(cache)
        install = next(d for d in tree["tree"] if d["source"] == "guide/install.md")
        assert [s["anchor"] for s in install["sections"]] == ["installation", "requirements", "troubleshooting"]
        section = (root / install["sections"][2]["file"]).read_text()
        front = yaml.safe_load(section.split("---\n", 2)[1])
        assert front["source"] == "guide/install.md" and front["anchor"] == "troubleshooting"
        assert front["heading_path"] == ["Installation", "Troubleshooting"] and front["title"] == "Troubleshooting"
        assert "E_QUOKKA_EXPIRED" in section
        assert "guide/install/000-installation.md" in only_text(first)  # the outline comes inline

        again = (await client.call_tool("fetch_docs", {"collection": "docs"})).structured_content
        assert again["upToDate"] is True and again["path"] == tree["path"] and again["tree"] == tree["tree"]
        forced = (await client.call_tool("fetch_docs", {"force": True})).structured_content
        assert forced["upToDate"] is False and forced["contentHash"] == tree["contentHash"]

        write_corpus(db.parent / "docs", {"new.md": "# New page\n\nFresh words about zeppelins.\n"})
        await anyio.to_thread.run_sync(lambda: ingest([db.parent / "docs"], db, "docs"))
        changed = (await client.call_tool("fetch_docs", {})).structured_content
        assert changed["contentHash"] != tree["contentHash"] and changed["upToDate"] is False
        assert any(d["source"] == "new.md" for d in changed["tree"])
        assert not root.exists(), "the superseded tree is pruned"
        assert [p.name for p in cache.iterdir()] == [Path(changed["path"]).name]

        unknown = await client.call_tool("fetch_docs", {"collection": "nope"})
        assert unknown.is_error and "'nope'" in only_text(unknown)


HOSTILE_FILES = {
    "spaces and (parens) & $vars.md": "# ../../../etc/passwd\n\nbody one\n\n## /absolute/heading\n\nbody two\n",
    "ünïcödé/日本語.md": "# C:\\Windows\\System32\n\n本文です。\n",
    ("x" * 200) + ".md": "# " + ("y" * 3000) + "\n\nlong heading body\n",
    "new\nline.md": "# ---\n\nfrontmatter fence as a heading\n",
    "CON.md": "# CON\n\ndevice name\n",
    "a/b/c/d/e/f/g/h/i/j/k/deep.md": "# Deep\n\ndeep body\n",
}
# Sources no filesystem gives ingest, but a foreign or damaged index could hold.
FORGED_SOURCES = {
    "CON.md": "../../../../../../../../tmp/escaped.md",
    "a/b/c/d/e/f/g/h/i/j/k/deep.md": "/etc/cron.d/evil.md",
    "new\nline.md": "nul\x00byte/../../../x.md",
}


async def test_fetch_docs_never_writes_outside_its_cache_whatever_the_names(tmp_path):
    base = tmp_path / "hostile"
    docs = write_corpus(base / "docs", HOSTILE_FILES)
    db = base / "index.db"
    ingest([docs], db, "../../evil collection")
    with sqlite3.connect(db) as conn:
        for old, new in FORGED_SOURCES.items():
            conn.execute("UPDATE documents SET source = ? WHERE source = ?", (new, old))
        conn.execute(
            "UPDATE chunks SET anchor = '../../../../anchor', heading_path = ? WHERE id = (SELECT min(id) FROM chunks)",
            (json.dumps(["../../..", "/root/.ssh", "nul\x00here"]),),
        )
    cache = db.with_name(db.name + ".cache") / "fetch_docs"
    before = files_under(tmp_path)

    async with mcp_client(db) as client:
        result = await client.call_tool("fetch_docs", {})
    assert not result.is_error, result.content[0].text
    tree = result.structured_content

    new_files = files_under(tmp_path) - before
    assert new_files and all(p.resolve().is_relative_to(cache.resolve()) for p in new_files)
    root = Path(tree["path"])
    assert root.resolve().is_relative_to(cache.resolve())
    sources = {d["source"] for d in tree["tree"]}
    assert set(FORGED_SOURCES.values()) <= sources
    assert tree["sections"] == sum(len(d["sections"]) for d in tree["tree"]) == len(new_files) - 2
    for document in tree["tree"]:
        for section in document["sections"]:
            path = (root / section["file"]).resolve()
            assert path.is_relative_to(root.resolve()) and path.is_file()
            assert len(path.relative_to(root).parts) <= 9
            assert all(len(part.encode()) <= 100 for part in path.relative_to(root).parts)
            front = yaml.safe_load(path.read_text().split("\n---\n", 1)[0].removeprefix("---\n"))
            assert front["source"] == document["source"]


# --------------------------------------------------------------------------- lifecycle


async def test_an_ingest_while_running_is_seen_on_the_next_call(writable_index):
    db = writable_index
    async with mcp_client(db) as client:
        before = await client.call_tool("crag_search", {"query": "zeppelin hangar mooring", "k": 20})
        assert not any("zeppelin" in c.text for c in before.content)
        version = (await client.call_tool("list_collections", {})).structured_content["index_version"]

        write_corpus(db.parent / "docs", {"airships.md": "# Airships\n\nThe zeppelin hangar has a mooring mast.\n"})
        await anyio.to_thread.run_sync(lambda: ingest([db.parent / "docs"], db, "docs"))

        after = await client.call_tool("crag_search", {"query": "zeppelin hangar mooring", "k": 3})
        assert after.structured_content["passages"][0]["source"] == "airships.md"
        listed = (await client.call_tool("list_collections", {})).structured_content
        assert listed["index_version"] > version
        assert listed["collections"][0]["documents"] == 3

        # A new collection whose only document has no text: searchable by name, and said to be empty.
        write_corpus(db.parent / "blank", {"blank.md": ""})
        await anyio.to_thread.run_sync(lambda: ingest([db.parent / "blank"], db, "blank"))
        empty = await client.call_tool("search", {"query": "zeppelin", "collection": "blank"})
        assert not empty.is_error
        assert only_text(empty) == "(collection 'blank' is empty: none of its documents has indexed text)"
        assert empty.structured_content == {"passages": [], "indexEmpty": True}


async def test_a_killed_server_gives_the_client_a_clean_error(small_index):
    with anyio.fail_after(60):
        async with mcp_client(small_index, timeout=10) as client:
            pid = (await resource_json(client, "docindex://stats"))["server_pid"]
            assert not (await client.call_tool("crag_search", {"query": "toaster"})).is_error
            os.kill(pid, signal.SIGKILL)
            for _ in range(2):  # the first call after the kill and every later one
                with pytest.raises(MCPError, match="(?i)connection closed"):
                    await client.call_tool("crag_search", {"query": "toaster"})

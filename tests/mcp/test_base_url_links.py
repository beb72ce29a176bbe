"""A collection's base URL reaches every MCP answer that cites: `search`,
`crag_search` and `query_knowledge_hub` carry `url`, and `fetch_docs` writes it
into each section's front matter under a content hash (the /ask/archive hash)
that changes with the URL."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from docindex.index import Index
from docindex.ingest import ingest
from docindex.mcp.server import build_server
from docindex.mcp.tools import IndexService
from tests.docindex.fakes import HashEmbedder

from .conftest import GUIDE, write_corpus

BASE = "https://docs.example/handbook/"


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path, HashEmbedder]:
    embedder = HashEmbedder()
    docs = write_corpus(tmp_path / "docs", {"guide/install.md": GUIDE})
    db = tmp_path / "index.db"
    ingest([docs], db, "docs", embedder=embedder, base_url=BASE)
    return docs, db, embedder


def _call(db: Path, embedder: HashEmbedder, cache: Path, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with Index(db, embedder=embedder) as index:
        server = build_server(IndexService(index, db_path=db, default_collection=None, cache_root=cache))
        result = asyncio.run(server.call_tool(tool, arguments))
    assert not result.is_error, result
    structured = result.structured_content
    assert isinstance(structured, dict)
    return structured


@pytest.mark.parametrize("tool, arguments, key", [
    ("search", {"query": "quokka license requirements", "k": 3, "collection": "docs"}, "passages"),
    ("crag_search", {"query": "quokka license requirements", "k": 3}, "passages"),
    ("query_knowledge_hub", {"query": "quokka license requirements", "top_k": 3}, "results"),
])
def test_search_tools_carry_the_deep_link(linked, tmp_path: Path, tool: str, arguments: dict[str, Any],
                                          key: str) -> None:
    _docs, db, embedder = linked
    items = _call(db, embedder, tmp_path / "cache", tool, arguments)[key]
    assert items
    for item in items:
        assert item["url"] == f"{BASE}guide/install.md#{item['anchor']}"


def _front_matter(tree: Path, anchor: str) -> dict[str, Any]:
    for path in sorted(tree.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---\n"):
            fields = yaml.safe_load(text.split("---\n")[1])
            if fields.get("anchor") == anchor:
                return dict(fields)
    raise AssertionError(f"no section file with anchor {anchor!r} under {tree}")


def test_fetch_docs_tree_carries_the_link_and_its_hash_moves_with_the_url(linked, tmp_path: Path) -> None:
    docs, db, embedder = linked
    cache = tmp_path / "cache"
    first = _call(db, embedder, cache, "fetch_docs", {"collection": "docs"})
    fields = _front_matter(Path(first["path"]), "requirements")
    assert fields["url"] == f"{BASE}guide/install.md#requirements"

    # Same files, another base URL: another content hash (so another archive ETag), and new links.
    ingest([docs], db, "docs", embedder=embedder, base_url="https://mirror.example/")
    second = _call(db, embedder, cache, "fetch_docs", {"collection": "docs"})
    assert second["contentHash"] != first["contentHash"] and second["upToDate"] is False
    assert _front_matter(Path(second["path"]), "requirements")["url"] == \
        "https://mirror.example/guide/install.md#requirements"

    # Same URL again: the same hash, the tree reused.
    third = _call(db, embedder, cache, "fetch_docs", {"collection": "docs"})
    assert third["contentHash"] == second["contentHash"] and third["upToDate"] is True

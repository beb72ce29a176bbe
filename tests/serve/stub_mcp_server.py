"""A crag-mcp-compatible stdio MCP server with a fixed three-passage corpus.

Deterministic scores and a sub-second start, so the serving tests control
what the Gate sees. Not a substitute for docindex (tests/serve/test_docindex_integration.py
runs the real server); it speaks the same `crag_search` / `search` /
`list_collections` contract.

Test hooks in the query text:
  [[mcp:sleep=S]]  sleep S seconds before answering (timeouts)
  [[mcp:die]]      exit the process at once (dead-session handling)
  [[mcp:pid]]      answer with this process id as the passage text
"""
from __future__ import annotations

import os
import re
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

CORPUS = [
    {"source": "serve.md", "anchor": "replicas", "title": "Serve › Replicas", "collection": "docs",
     "text": "Ray Serve scales a deployment by adding replicas. Each replica is a Ray actor."},
    {"source": "serve.md", "anchor": "backpressure", "title": "Serve › Backpressure", "collection": "docs",
     "text": "When the queue of a deployment is full the proxy answers 503 with a Retry-After header."},
    {"source": "cooking.md", "anchor": "pasta", "title": "Cooking › Pasta", "collection": "recipes",
     "text": "Boil the pasta in salted water for nine minutes. Drain it before serving."},
]
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def _score(query: str, text: str) -> float:
    q, t = _words(query), _words(text)
    return round(len(q & t) / max(len(q), 1), 3) if q else 0.0


def _hooks(query: str) -> None:
    if "[[mcp:die]]" in query:
        os._exit(1)
    m = re.search(r"\[\[mcp:sleep=([\d.]+)\]\]", query)
    if m:
        time.sleep(float(m.group(1)))


def _passages(query: str, k: int, collection: str | None) -> CallToolResult:
    _hooks(query)
    if "[[mcp:pid]]" in query:
        hits = [dict(CORPUS[0], text=f"pid {os.getpid()}", cosine=0.9, bm25=1.0, fusion=0.03, chunk_id=0)]
    else:
        pool = [p for p in CORPUS if collection in (None, p["collection"])]
        scored = [dict(p, cosine=_score(query, p["text"]), bm25=0.0, fusion=0.0, chunk_id=i)
                  for i, p in enumerate(pool)]
        hits = sorted(scored, key=lambda p: p["cosine"], reverse=True)[:k]
    if not hits:
        return CallToolResult(content=[TextContent(type="text", text="(no matching chunks)")],
                              structured_content={"passages": []})
    text = [TextContent(type="text", text=f"[cos {h['cosine']:.3f}  bm25 {h['bm25']:.2f}  fusion {h['fusion']:.3f}] "
                                         f"{h['source']}\n{h['text']}") for h in hits]
    structured = {"passages": hits}
    if "--text-only" in sys.argv:
        return CallToolResult(content=text)
    return CallToolResult(content=text, structured_content=structured)


server = MCPServer("stub-index")


@server.tool()
def crag_search(query: str, k: int = 5) -> CallToolResult:
    return _passages(query, k, None)


@server.tool()
def search(query: str, k: int = 5, collection: str | None = None) -> CallToolResult:
    if collection not in (None, "docs", "recipes"):
        return CallToolResult(content=[TextContent(type="text", text=f"unknown collection {collection!r}")],
                              is_error=True)
    return _passages(query, k, collection)


@server.tool()
def list_collections(include_stats: bool = True) -> CallToolResult:
    payload = {"collections": [{"name": "docs", "chunks": 2, "index_version": 3},
                               {"name": "recipes", "chunks": 1, "index_version": 3}], "index_version": 3}
    return CallToolResult(content=[TextContent(type="text", text=str(payload))], structured_content=payload)


if __name__ == "__main__":
    server.run("stdio")

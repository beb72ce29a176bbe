"""A stdio MCP server that answers as crag-mcp 0.1.0 does (tests/data/crag-mcp).

crag-mcp offers only `crag_search {query, k}` and `crag_stats {}` plus the
`crag://stats` resource; no collections, no structured content, no index
version. This stub reproduces that surface over the official `mcp` SDK, so
the Retriever can be tested against a crag_search-only server without
building cRAG (tests/mcp/test_crag_conformance.py replays the recorded transcripts
against it and checks it answers them as crag-mcp did):

- serverInfo `crag-mcp` 0.1.0; capabilities tools + resources;
- argument errors as `isError` results worded like crag-mcp
  ("Invalid arguments for tool 'crag_search': value above maximum (path: /k, keyword: maximum)");
- an unknown tool as a JSON-RPC error -32602 with `data.name` (crag-mcp's
  protocol-channel error), never an `isError` result;
- passages as text items "[cos C  bm25 B  fusion F] source\\nbody", only
  those whose cosine clears 0.50 (crag-mcp's default cutoff), else the one
  item "(no chunk cleared the relevance threshold)" (not an error);
- `crag_stats` and `crag://stats`: "db: / chunks: / files: / dim:".

It is independent of docindex on purpose (no shared validation code), so it
checks docindex's conformance rather than repeating it.

Usage: python tests/stubs/crag_mcp_server.py [--db PATH] [--tag TAG] [--search-only]
(--search-only: no `crag_stats` tool, for a server that offers nothing but `crag_search`)
Test hooks in the query text, as in tests/serve/stub_mcp_server.py:
  [[mcp:sleep=S]]  sleep S seconds first     [[mcp:die]]  exit at once
"""
from __future__ import annotations

import argparse
import os
import re
import time
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent

# Four files, one chunk each: the recorded stats say "chunks: 4, files: 4, dim: 1024".
CORPUS = [
    ("serve/replicas.md", "Ray Serve scales a deployment by adding replicas. Each replica is a Ray actor."),
    ("serve/backpressure.md", "When the queue of a deployment is full the proxy answers 503 with a Retry-After header."),
    ("cooking/pasta.md", "Boil the pasta in salted water for nine minutes. Drain it before serving."),
    ("cooking/bread.md", "Knead the dough for ten minutes and let it rise for one hour before baking."),
]
DIM = 1024                      # bge-m3, as in the recording
MIN_COSINE = 0.50               # crag-mcp's default cutoff (tools/crag-mcp/README.md)
NO_CHUNK_TEXT = "(no chunk cleared the relevance threshold)"

CRAG_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1},
                   "k": {"type": "integer", "minimum": 1, "maximum": 20}},
    "required": ["query"],
    "additionalProperties": False,
}
CRAG_STATS_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}
STATS_DESCRIPTION = ("DB path, chunk count, file count, embedding dim. Same payload as the `crag_stats` tool — "
                     "prefer reading this resource when you want the figures as ambient context rather than as "
                     "an explicit tool-call turn.")
_WORD = re.compile(r"\w+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


def _cosine(query: str, text: str) -> float:
    q = _words(query)
    return round(len(q & _words(text)) / len(q), 3) if q else 0.0


def violation(arguments: dict[str, Any], schema: dict[str, Any]) -> tuple[str, str, str] | None:
    """(message, path, keyword) of the first rule broken, in crag-mcp's order and words."""
    properties = schema["properties"]
    for name in schema.get("required", []):
        if name not in arguments:
            return "missing required property", f"/{name}", "required"
    for name in arguments:
        if name not in properties:
            return "unexpected property", f"/{name}", "additionalProperties"
    for name, value in arguments.items():
        rule, path = properties[name], f"/{name}"
        if rule["type"] == "string" and not isinstance(value, str):
            return "expected type string", path, "type"
        if rule["type"] == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            return "expected type integer", path, "type"
        if "minLength" in rule and len(value) < rule["minLength"]:
            return f"string too short (min {rule['minLength']})", path, "minLength"
        if "minimum" in rule and value < rule["minimum"]:
            return "value below minimum", path, "minimum"
        if "maximum" in rule and value > rule["maximum"]:
            return "value above maximum", path, "maximum"
    return None


def text_result(*texts: str, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=t) for t in texts], is_error=is_error)


class CragStub(MCPServer):
    def __init__(self, db: str, *, search_only: bool = False) -> None:
        self.db = db
        tools = [
            Tool.from_function(self._crag_search, name="crag_search",
                               description="Hybrid retrieval (BM25 + cosine, RRF-fused) over the index")
            .model_copy(update={"parameters": CRAG_SEARCH_SCHEMA}),
            Tool.from_function(self._crag_stats, name="crag_stats",
                               description="Diagnostics: DB path, chunk count, file count, dim")
            .model_copy(update={"parameters": CRAG_STATS_SCHEMA}),
        ]
        if search_only:
            tools = tools[:1]
        super().__init__("crag-mcp", version="0.1.0", tools=tools)
        self.resource("crag://stats", name="cRAG diagnostics", description=STATS_DESCRIPTION,
                      mime_type="text/plain")(self.stats_text)
        self._schemas = {tool.name: tool.parameters for tool in tools}

    def stats_text(self) -> str:
        files = len({source for source, _ in CORPUS})
        return f"db:     {self.db}\nchunks: {len(CORPUS)}\nfiles:  {files}\ndim:    {DIM}"

    def _crag_stats(self) -> CallToolResult:
        return text_result(self.stats_text())

    def _crag_search(self, query: str, k: int = 5) -> CallToolResult:
        if "[[mcp:die]]" in query:
            os._exit(1)
        sleep = re.search(r"\[\[mcp:sleep=([\d.]+)\]\]", query)
        if sleep:
            time.sleep(float(sleep.group(1)))
        scored = sorted(((_cosine(query, text), source, text) for source, text in CORPUS), key=lambda h: -h[0])
        hits = [h for h in scored if h[0] >= MIN_COSINE][:k]
        if not hits:
            return text_result(NO_CHUNK_TEXT)
        # One retriever only here: crag-mcp's fusion for a rank-r single-list hit is 1/(60+r).
        return text_result(*(f"[cos {cos:.3f}  bm25 0.00  fusion {1 / (60 + rank):.3f}] {source}\n{text}"
                             for rank, (cos, source, text) in enumerate(hits, start=1)))

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        schema = self._schemas.get(name)
        if schema is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}", data={"name": name})
        broken = violation(arguments, schema)
        if broken:
            message, path, keyword = broken
            return text_result(f"Invalid arguments for tool '{name}': {message} (path: {path}, keyword: {keyword})",
                               is_error=True)
        return await super().call_tool(name, arguments, context)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default=os.environ.get("CRAG_DB", "./crag.db"))
    parser.add_argument("--tag", default="", help="ignored; makes the process findable in tests")
    parser.add_argument("--search-only", action="store_true", help="offer crag_search only (no crag_stats)")
    args = parser.parse_args()
    CragStub(args.db, search_only=args.search_only).run("stdio")


if __name__ == "__main__":
    main()

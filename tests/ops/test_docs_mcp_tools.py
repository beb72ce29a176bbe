"""docs/mcp-clients.md's tool table cannot drift from what `docindex serve-mcp` registers.

The table (under "## Tools") names each tool and, in backticks, its arguments;
they must equal the tools and input-schema properties the server lists over
MCP (`tools/list`), in both directions. Its resources line and the
`--endpoint` server's one tool are checked the same way. Part of `make lint`.
"""
from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from docindex.mcp.endpoint import build_endpoint_server
from docindex.mcp.server import build_server

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "mcp-clients.md"
TICKED = re.compile(r"`([^`]+)`")


def documented_tools(text: str) -> dict[str, set[str]]:
    """{tool: its argument names} from the first Markdown table after "## Tools"."""
    section = text.partition("\n## Tools\n")[2]
    assert section, "docs/mcp-clients.md has no '## Tools' section"
    table = section.strip("\n").split("\n\n", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("|")]
    tools: dict[str, set[str]] = {}
    for row in rows[2:]:        # past the header and the |---| line
        name_cell, args_cell = row.strip("|").split("|")[:2]
        name = TICKED.findall(name_cell)
        assert len(name) == 1, f"one `tool` per row: {row}"
        tools[name[0]] = set(TICKED.findall(args_cell))
    return tools


def registered(server: Any) -> dict[str, set[str]]:
    tools = asyncio.run(server.list_tools())
    return {tool.name: set(tool.input_schema.get("properties", {})) for tool in tools}


def _index_server() -> Any:
    # Registration reads nothing from the service (the tools use it when called), so no index is opened.
    return build_server(object())   # type: ignore[arg-type]


def test_the_table_lists_exactly_the_tools_serve_mcp_registers_with_their_arguments():
    assert documented_tools(DOC.read_text(encoding="utf-8")) == registered(_index_server())


def test_the_documented_resources_are_the_registered_ones():
    line = next(line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("Resources:"))
    uris = {str(r.uri) for r in asyncio.run(_index_server().list_resources())}
    assert set(TICKED.findall(line)) == uris


def test_the_endpoint_server_serves_fetch_docs_with_the_documented_arguments():
    text = DOC.read_text(encoding="utf-8")
    assert "serves one tool, `fetch_docs` (same arguments and answer as above)" in text
    assert registered(build_endpoint_server(object())) == {   # type: ignore[arg-type]
        "fetch_docs": documented_tools(text)["fetch_docs"]}


def test_drift_is_caught():
    table = DOC.read_text(encoding="utf-8")
    renamed = table.replace("| `top_k` (1-20", "| `limit` (1-20").replace("`query`, `top_k`", "`query`, `limit`")
    assert documented_tools(renamed) != registered(_index_server())
    dropped = "\n".join(line for line in table.splitlines() if not line.startswith("| `crag_stats`"))
    assert documented_tools(dropped) != registered(_index_server())

"""docs/mcp-clients.md, run as written: its `mcpServers` JSON and its Python
snippet start `docindex serve-mcp` with exactly the documented command (only
`/ABSOLUTE/PATH/TO/askdocs` and the index path replaced), list the tools and
call the MCP Knowledge Service's tools."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from docindex.ingest import ingest

from .conftest import REPO

DOC = REPO / "docs" / "mcp-clients.md"
PLACEHOLDER = "/ABSOLUTE/PATH/TO/askdocs"
DOCUMENTED_DB = f"{PLACEHOLDER}/var/demo.db"
KS_TOOLS = {"query_knowledge_hub", "list_collections", "get_document_summary"}
pytestmark = pytest.mark.timeout(300)


def block(language: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), re.S)
    assert len(blocks) == 1, f"docs/mcp-clients.md should hold one {language} block"
    return blocks[0]


def localized(text: str, db: Path) -> str:
    return text.replace(DOCUMENTED_DB, str(db)).replace(PLACEHOLDER, str(REPO))


@pytest.fixture(scope="module")
def askdocs_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What `make index` builds, in small: this repository's README and API doc, collection askdocs."""
    root = tmp_path_factory.mktemp("askdocs-docs")
    for name in ("README.md", "docs/api.md"):
        (root / Path(name).name).write_text((REPO / name).read_text(encoding="utf-8"), encoding="utf-8")
    db = root / "demo.db"
    ingest([root], db, "askdocs")
    return db


async def test_the_documented_mcp_servers_json_lists_and_calls_the_ks_tools(askdocs_index: Path) -> None:
    entry = json.loads(localized(block("json"), askdocs_index))["mcpServers"]["askdocs"]
    assert set(entry) == {"command", "args"}
    # A desktop client starts the server from a directory of its own: not the repository.
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(askdocs_index.parent))
    async with Client(params, read_timeout_seconds=120) as client:
        assert KS_TOOLS <= {tool.name for tool in (await client.list_tools()).tools}
        listed = (await client.call_tool("list_collections", {})).structured_content
        assert listed["default_collection"] == "askdocs" and [c["name"] for c in listed["collections"]] == ["askdocs"]
        found = await client.call_tool("query_knowledge_hub", {"query": "What does /healthz report?", "top_k": 3})
        assert not found.is_error
        results = found.structured_content["results"]
        assert 1 <= len(results) <= 3 and results[0]["source"] == "api.md" and results[0]["collection"] == "askdocs"
        summary = await client.call_tool("get_document_summary", {"doc_id": results[0]["doc_id"]})
        assert not summary.is_error and summary.structured_content["source"] == "api.md"


def test_the_documented_python_snippet_runs(askdocs_index: Path, tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(localized(block("python"), askdocs_index))
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert KS_TOOLS <= set(json.loads(lines[0].replace("'", '"')))
    assert re.fullmatch(r"-?\d\.\d{3} \S+\.md#\S*  .+", lines[1])
    assert lines[-2].strip() and lines[-1].startswith("[")        # a summary, then the tags

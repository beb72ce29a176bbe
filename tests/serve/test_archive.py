"""GET /ask/archive and `docindex serve-mcp --endpoint` (issue 15 item 3), end to end
on localhost: the ingress under uvicorn over the real `docindex serve-mcp` on a
tiny index, and the endpoint server as an MCP subprocess pulling from it."""
from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.ports import free_port
from tests.reliability.conftest import child_env, stop, wait_healthy

REPO = Path(__file__).resolve().parents[2]
KEY = "archive-test-key"
AUTH = {"authorization": f"Bearer {KEY}"}
DOCS = {
    "limits.md": "# Limits\n\n## Queue full\n\nWhen the queue is full, the proxy answers 503 with Retry-After.\n",
    "guide/install.md": "# Install\n\n## Python\n\nInstall the package with pip into a virtual environment.\n",
}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from docindex.ingest import ingest

    work = tmp_path_factory.mktemp("archive-service")
    root = work / "docs"
    for name, text in DOCS.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    db = work / "tiny.db"
    ingest([root], db, "docs")
    port = free_port()
    env = child_env() | {"ASKDOCS_ENGINE": "fake", "ASKDOCS_DB": str(db), "ASKDOCS_MCP_POOL_SIZE": "1",
                         "ASKDOCS_MCP_CALL_TIMEOUT_S": "60", "ASKDOCS_API_KEYS": KEY}
    log = work / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "serve_app.local", "--host", "127.0.0.1", "--port", str(port),
                                 "--log-level", "warning"], cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, 120, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(proc)


def test_archive_is_the_fetch_docs_tree_with_a_content_hash_etag(service: str) -> None:
    response = httpx.get(f"{service}/ask/archive", headers=AUTH, timeout=120)
    assert response.status_code == 200 and response.headers["content-type"] == "application/gzip"
    etag = response.headers["etag"]
    assert hashlib.sha256(response.content).hexdigest() == response.headers["x-archive-sha256"]
    with tarfile.open(fileobj=io.BytesIO(response.content), mode="r:gz") as tar:
        names = tar.getnames()
        manifest = json.loads(tar.extractfile(".docindex-tree").read())  # type: ignore[union-attr]
    assert "INDEX.md" in names and any(n.endswith(".md") and "limits" in n for n in names)
    assert etag == f'"{manifest["contentHash"]}"' and manifest["collection"] == "docs"
    again = httpx.get(f"{service}/ask/archive?collection=docs", headers=AUTH | {"if-none-match": etag}, timeout=60)
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag


def test_archive_errors_are_clean_statuses(service: str) -> None:
    assert httpx.get(f"{service}/ask/archive", timeout=60).status_code == 401
    unknown = httpx.get(f"{service}/ask/archive?collection=nope", headers=AUTH, timeout=60)
    assert unknown.status_code == 422 and "nope" in unknown.json()["error"]["message"]
    spec = httpx.get(f"{service}/openapi.json", headers=AUTH, timeout=60).json()
    assert "get" in spec["paths"]["/ask/archive"]


def _endpoint_params(url: str, cache: Path, *extra: str) -> StdioServerParameters:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "ASKDOCS_API_KEY": KEY}
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "docindex.cli", "serve-mcp", "--endpoint", url,
                                       "--cache-dir", str(cache), *extra], env=env, cwd=str(REPO))


@pytest.mark.asyncio
async def test_serve_mcp_endpoint_serves_fetch_docs_from_the_service(service: str, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    async with Client(_endpoint_params(f"{service}/ask", cache), read_timeout_seconds=120) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        first = (await client.call_tool("fetch_docs", {})).structured_content
        second = (await client.call_tool("fetch_docs", {"collection": "docs"})).structured_content
        forced = (await client.call_tool("fetch_docs", {"force": True})).structured_content
        missing = await client.call_tool("fetch_docs", {"collection": "nope"})
    assert tools == ["fetch_docs"]
    tree = Path(first["path"])
    assert tree.is_relative_to(cache.resolve()) and first["upToDate"] is False and first["sections"] >= 2
    assert (tree / "INDEX.md").is_file() and {d["source"] for d in first["tree"]} == set(DOCS)
    section = tree / first["tree"][0]["sections"][0]["file"]
    assert section.read_text().startswith("---\n")
    assert second["contentHash"] == first["contentHash"] and Path(second["path"]) != tree  # its own folder
    assert forced["upToDate"] is False and forced["path"] == first["path"]
    assert missing.is_error and "HTTP 422" in missing.content[0].text  # type: ignore[union-attr]
    async with Client(_endpoint_params(f"{service}/ask", cache), read_timeout_seconds=120) as client:
        cached = (await client.call_tool("fetch_docs", {})).structured_content
    assert cached["upToDate"] is True and cached["path"] == first["path"]       # a 304: nothing downloaded


def test_serve_mcp_needs_exactly_one_source_and_a_url(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "docindex.cli", "serve-mcp"]
    neither = subprocess.run(run, capture_output=True, text=True, cwd=REPO, timeout=120)
    bad = subprocess.run(run + ["--endpoint", "ftp://x"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert neither.returncode == 2 and "exactly one of --db FILE or --endpoint URL" in neither.stderr
    assert bad.returncode == 1 and bad.stderr.strip().splitlines()[-1].startswith("Error: --endpoint must be")
    assert "Traceback" not in neither.stderr + bad.stderr


@pytest.mark.asyncio(loop_scope="session")
async def test_an_index_server_without_fetch_docs_is_a_404(local_pipeline: Any) -> None:
    from serve_app.ingress import create_app
    from tests.serve.conftest import fake_settings

    app = create_app(local_pipeline, fake_settings())       # the stub index: crag_search, search, list_collections
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test") as client:
        response = await client.get("/ask/archive")
    assert response.status_code == 404 and "no fetch_docs" in response.json()["error"]["message"]

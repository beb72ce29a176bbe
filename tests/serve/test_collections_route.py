"""GET /collections: the index's collection names for the web page's selector,
behind the API keys, [] for an index without collections, 503 (not a stack
trace) when the index cannot report."""
from __future__ import annotations

from typing import Any

import httpx
import pytest

from serve_app.ingress import create_app
from serve_app.local import LocalPipeline
from tests.serve.conftest import fake_settings

on_session_loop = pytest.mark.asyncio(loop_scope="session")   # shares the stub_pool fixture


def client_for(pipeline: Any, **settings: Any) -> httpx.AsyncClient:
    app = create_app(pipeline, fake_settings(**settings))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


class InfoOnly:
    """A pipeline whose info() is all a test needs."""

    def __init__(self, info: Any) -> None:
        self._info = info

    async def info(self) -> dict:
        if isinstance(self._info, Exception):
            raise self._info
        return self._info


@on_session_loop
async def test_the_index_collections_are_listed_behind_the_key(local_pipeline: LocalPipeline) -> None:
    async with client_for(local_pipeline, api_keys=["k1"]) as client:
        assert (await client.get("/collections")).status_code == 401
        response = await client.get("/collections", headers={"authorization": "Bearer k1"})
        spec = (await client.get("/openapi.json", headers={"authorization": "Bearer k1"})).json()
    assert response.status_code == 200 and response.json() == {"collections": ["docs", "recipes"]}
    assert "get" in spec["paths"]["/collections"]


async def test_an_index_without_collections_lists_none_and_a_down_index_is_a_503() -> None:
    async with client_for(InfoOnly({"index": {"chunks": 4, "version": None}, "collections": []})) as client:
        assert (await client.get("/collections")).json() == {"collections": []}
    async with client_for(InfoOnly({"index": {"chunks": 4, "version": None}})) as client:   # an older pipeline
        assert (await client.get("/collections")).json() == {"collections": []}
    async with client_for(InfoOnly(RuntimeError("/secret/path.db is locked"))) as client:
        response = await client.get("/collections")
    assert response.status_code == 503 and "retry-after" in response.headers
    assert "secret" not in response.text and response.json()["error"]["stage"] == "retrieval"

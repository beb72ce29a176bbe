"""The Retriever fetches stored quote vectors for the extractive engine (deployments/retriever.py):
only from a server that offers them, only of the model the engine uses; a failure costs speed,
never the answer."""
from __future__ import annotations

import base64
from types import SimpleNamespace

from deployments.errors import McpTimeout
from deployments.passage import Passage
from deployments.retriever import with_quote_vectors
from docindex.embedder import MODEL_NAME

PASSAGES = [Passage("a.md", "A.", 0.5, chunk_id=7), Passage("b.md", "B.", 0.4, chunk_id=9),
            Passage("c.md", "C.", 0.3)]


class Pool:
    def __init__(self, reply=None, tools=("crag_search", "quote_vectors"), fail: Exception | None = None) -> None:
        self.reply, self.tools, self.fail, self.calls = reply, tools, fail, []

    def offers(self, tool: str) -> bool:
        return tool in self.tools

    async def call(self, tool: str, arguments: dict):
        self.calls.append((tool, arguments))
        if self.fail is not None:
            raise self.fail
        return self.reply


def reply(model: str = MODEL_NAME, vectors: dict | None = None, error: bool = False):
    return SimpleNamespace(is_error=error, structured_content={"model": model, "dim": 384, "vectors": vectors or {}})


async def test_the_blobs_land_on_their_passages_and_nothing_else_changes() -> None:
    pool = Pool(reply(vectors={"7": base64.b64encode(b"seven").decode(), "9": "not base64!"}))
    got = await with_quote_vectors(pool, PASSAGES)
    assert pool.calls == [("quote_vectors", {"chunk_ids": [7, 9]})]
    assert [p.quote_vectors for p in got] == [b"seven", None, None]
    assert got == PASSAGES                                   # the vectors take no part in equality
    assert "quote_vectors" not in got[0].to_dict()           # and are never shown to a client


async def test_no_call_to_a_server_without_the_tool_and_no_use_of_another_models_vectors() -> None:
    pool = Pool(reply(), tools=("crag_search",))
    assert await with_quote_vectors(pool, PASSAGES) is PASSAGES and pool.calls == []
    other = await with_quote_vectors(Pool(reply("other-model", {"7": base64.b64encode(b"x").decode()})), PASSAGES)
    assert all(p.quote_vectors is None for p in other)
    refused = await with_quote_vectors(Pool(reply(error=True)), PASSAGES)
    assert all(p.quote_vectors is None for p in refused)


async def test_a_failed_call_costs_only_speed() -> None:
    got = await with_quote_vectors(Pool(fail=McpTimeout("the index server did not answer in 10 s")), PASSAGES)
    assert got == PASSAGES and all(p.quote_vectors is None for p in got)

"""Retriever: the deployment that answers searches from the document index over MCP.

It owns one `McpPool` (deployments/mcp_pool.py: the sessions, restarts and
timeouts) of stdio sessions to the configured command (default
`python -m docindex.cli serve-mcp --db DB`; any crag-mcp-compatible server
works, because `crag_search` is the contract). What else the server offers
is read once per session from `tools/list` (`McpPool.tools`): docindex's
`search` and `list_collections` give collections and the index version; a
server with only `crag_search` (and maybe `crag_stats`, as crag-mcp) has no
collections, so a request naming one is `UnknownCollection` (HTTP 422), and
its health comes from `crag_stats` or a `crag_search` probe. Arguments the
server rejects are the request's fault: `InvalidRequest` (HTTP 422) with the
server's reason, never a 502.

With `quotes`, a search also asks docindex's `quote_vectors` for the vectors
ingest stored for the passages' quotable sentences (docindex/quotable.py), so
the extractive engine scores them without running the model. They are an
optimization: a server without the tool, a chunk without vectors, another
embedding model or a failed call leaves `Passage.quote_vectors` None, and the
engine embeds those sentences itself.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
from typing import Any

from ray import serve

from deployments import tracing
from deployments.doc_archive import DocArchive, doc_archive
from deployments.errors import InvalidRequest, McpUnavailable, RetrievalError, UnknownCollection
from deployments.logs import use_serve_logging
from deployments.mcp_pool import WARMUP_QUERY, McpPool
from deployments.mcp_results import argument_error, crag_stats_chunks, error_text, parse_search_result
from deployments.passage import Passage
from docindex.embedder import MODEL_NAME

log = logging.getLogger("askdocs.retriever")


async def search(pool: McpPool, question: str, k: int, collection: str | None,
                 trace: dict[str, str] | None = None, quotes: bool = False) -> list[Passage]:
    """`crag_search` without a collection (the portable contract), docindex's
    `search` with one (crag_search has no collection argument). `trace` is the
    caller's span carrier (deployments.tracing.inject): the MCP call's span hangs
    under it."""
    if collection and not pool.offers("search"):
        raise UnknownCollection(f"unknown collection {collection!r}: this index has no collections "
                                "(its server offers only crag_search); ask without a collection")
    tool, arguments = (("search", {"query": question, "k": k, "collection": collection}) if collection
                       else ("crag_search", {"query": question, "k": k}))
    with tracing.replica_span(f"tools/call {tool}", trace, **{"mcp.method.name": "tools/call"}):
        result = await pool.call(tool, arguments)
    if getattr(result, "is_error", False):
        message = error_text(result)
        if collection and await _collection_missing(pool, collection):
            raise UnknownCollection(f"unknown collection {collection!r}")
        if "no matching" in message.lower():
            return []
        rejected = argument_error(message)
        if rejected is not None:
            log.info("the index refused the arguments of %s: %s", tool, message[:200])
            raise rejected
        raise RetrievalError(f"the index rejected the search: {message[:200]}")
    passages = parse_search_result(result)
    return await with_quote_vectors(pool, passages, trace) if quotes else passages


async def with_quote_vectors(pool: McpPool, passages: list[Passage],
                             trace: dict[str, str] | None = None) -> list[Passage]:
    """`passages` with the quote vectors the index stored for them, where it has any
    (module docstring); any failure here costs only speed, so it is logged, not raised."""
    ids = sorted({p.chunk_id for p in passages if isinstance(p.chunk_id, int) and p.chunk_id > 0})
    if not ids or not pool.offers("quote_vectors"):
        return passages
    try:
        with tracing.replica_span("tools/call quote_vectors", trace, **{"mcp.method.name": "tools/call"}):
            result = await pool.call("quote_vectors", {"chunk_ids": ids})
    except RetrievalError as e:
        log.warning("no quote vectors for this answer (the engine embeds its sentences): %s", e)
        return passages
    payload = getattr(result, "structured_content", None) or {}
    if getattr(result, "is_error", False) or payload.get("model") != MODEL_NAME:
        return passages                 # another model's vectors would not compare with the engine's
    blobs: dict[int, bytes] = {}
    for key, value in (payload.get("vectors") or {}).items():
        try:
            blobs[int(key)] = base64.b64decode(value, validate=True)
        except (ValueError, TypeError, binascii.Error):
            continue
    return [dataclasses.replace(p, quote_vectors=blobs.get(p.chunk_id)) if p.chunk_id in blobs else p
            for p in passages]


async def _collection_missing(pool: McpPool, collection: str) -> bool:
    try:
        info = await index_info(pool)
    except RetrievalError:
        return False
    return collection not in info.get("collections", [])


async def index_info(pool: McpPool) -> dict[str, Any]:
    """Chunks, index version (None when the server has none) and collection names.

    From docindex's `list_collections`; else from crag-mcp's `crag_stats`
    (chunks only); else a `crag_search` probe proves the index answers.
    """
    if pool.offers("list_collections"):
        result = await pool.call("list_collections", {"include_stats": True})
        structured = getattr(result, "structured_content", None) or {}
        collections = structured.get("collections", []) if isinstance(structured, dict) else []
        collections = [c for c in collections if isinstance(c, dict)]
        return {
            "collections": [c.get("name") for c in collections],
            "chunks": sum(int(c.get("chunks", 0) or 0) for c in collections),
            "version": max((int(c.get("index_version", 0) or 0) for c in collections), default=0),
            "embedder": structured.get("query_embedder") if isinstance(structured, dict) else None,
        }
    if pool.offers("crag_stats"):
        result = await pool.call("crag_stats", {})
        if getattr(result, "is_error", False):
            raise RetrievalError(f"the index could not report its stats: {error_text(result)[:200]}")
        return {"collections": [], "chunks": crag_stats_chunks(result), "version": None, "embedder": None}
    result = await pool.call("crag_search", WARMUP_QUERY)
    if getattr(result, "is_error", False):
        raise RetrievalError(f"the index did not answer a probe search: {error_text(result)[:200]}")
    return {"collections": [], "chunks": None, "version": None, "embedder": None}


@serve.deployment
class Retriever:
    """Thin deployment: owns one `McpPool`."""

    # Ray Serve awaits an async __init__; mypy wants __init__ to return None.
    async def __init__(self, command: list[str], pool_size: int, call_timeout_s: float,  # type: ignore[misc]
                       start_timeout_s: float, otel_endpoint: str | None = None, quotes: bool = False) -> None:
        use_serve_logging()
        self.quotes = quotes        # fetch stored quote vectors with each search (the extractive engine's)
        tracing.setup_tracing("askdocs-retriever", otel_endpoint)
        self.pool = McpPool(command, size=pool_size, call_timeout_s=call_timeout_s,
                            start_timeout_s=start_timeout_s)
        try:
            await self.pool.start()
        except McpUnavailable as e:
            log.error("%s", e)      # the one line that says why; Serve's status ends with it too
            raise

    async def search(self, question: str, k: int, collection: str | None = None,
                     trace: dict[str, str] | None = None) -> list[Passage] | InvalidRequest:
        """Passages; a client's mistake (422) comes back as the error value, not
        raised, so Serve does not log it as this replica failing (ERROR + traceback)."""
        try:
            return await search(self.pool, question, k, collection, trace, quotes=self.quotes)
        except InvalidRequest as e:
            return e

    async def index_info(self) -> dict[str, Any]:
        return await index_info(self.pool)

    async def doc_archive(self, collection: str | None, known_hash: str | None) -> DocArchive | InvalidRequest:
        """GET /ask/archive (deployments/doc_archive.py); a client's mistake comes back as a value."""
        try:
            return await doc_archive(self.pool, collection, known_hash)
        except InvalidRequest as e:
            return e

    async def __del__(self) -> None:
        await self.pool.close()


__all__ = ["McpPool", "Retriever", "index_info", "search"]

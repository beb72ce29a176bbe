"""The index's doc tree as one archive, for `GET /ask/archive` (issue 15 item 3).

The Retriever asks its own index server for the tree (`fetch_docs`, which
writes it beside the server: the same node as this replica) and packs it
(`docindex.tree_archive.pack_tree`). `known_hash` is the content hash the
caller already holds: when the index still has it, no bytes travel.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from deployments.errors import InvalidRequest, RetrievalError, UnknownCollection
from deployments.mcp_results import argument_error, error_text
from docindex.tree_archive import pack_tree


class McpPool(Protocol):
    """What of deployments.retriever.McpPool this needs (no import: the Retriever imports this)."""

    def offers(self, tool: str) -> bool: ...

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any: ...

MAX_ARCHIVE_BYTES = 64 * 1024 * 1024     # what one reply may carry through Serve


class NoArchive(RetrievalError):
    """The index server cannot write a tree (crag-mcp has no fetch_docs): HTTP 404."""

    status = 404


@dataclass(frozen=True)
class DocArchive:
    collection: str
    content_hash: str
    data: bytes | None          # None: unchanged since `known_hash`


async def doc_archive(pool: McpPool, collection: str | None, known_hash: str | None) -> DocArchive:
    if not pool.offers("fetch_docs"):
        raise NoArchive("this index server has no fetch_docs tool, so it has no doc tree to send")
    arguments = {"collection": collection} if collection else {}
    result = await pool.call("fetch_docs", arguments)
    if getattr(result, "is_error", False):
        message = error_text(result)
        rejected = argument_error(message)
        if rejected is not None:
            raise rejected
        if "unknown collection" in message.lower() or "no collection" in message.lower():
            raise UnknownCollection(message[:200])
        if "several collections" in message or "is empty" in message:
            raise InvalidRequest(message[:200])
        raise RetrievalError(f"the index could not write its doc tree: {message[:200]}")
    payload = getattr(result, "structured_content", None) or {}
    content_hash = str(payload.get("contentHash") or "")
    path = payload.get("path")
    if not content_hash or not path:
        raise RetrievalError("the index server's fetch_docs answer has no path or contentHash")
    name = Path(str(path)).parent.name or (collection or "")
    if known_hash == content_hash:
        return DocArchive(name, content_hash, None)
    data = pack_tree(Path(str(path)))
    if len(data) > MAX_ARCHIVE_BYTES:
        raise RetrievalError(f"the doc tree packs to {len(data)} bytes, over {MAX_ARCHIVE_BYTES}")
    return DocArchive(name, content_hash, data)

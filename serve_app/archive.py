"""`GET /ask/archive[?collection=NAME]`: the index's doc tree as one tar.gz.

The tree is the one `fetch_docs` writes (one Markdown file per section with
front matter, `INDEX.md`, the `.docindex-tree` manifest); the Retriever packs
it (deployments/doc_archive.py). The response carries the collection's
content hash as a strong ETag and the archive's own sha256 in
`X-Archive-Sha256`; `If-None-Match` with the current ETag is a 304 with no
body. The last archive per collection is kept here, so an unchanged index
costs the Retriever a `fetch_docs` call that writes nothing and sends no
bytes. `docindex serve-mcp --endpoint URL` is the client (docs/mcp-clients.md).
"""
from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from deployments.doc_archive import DocArchive
from deployments.errors import AskdocsError
from serve_app.errors import error_response, response_for, unauthorized_response

log = logging.getLogger("askdocs.archive")
ARCHIVE_TIMEOUT_S = 120.0       # writing a large tree the first time takes a while

@dataclass(frozen=True)
class _Packed:
    content_hash: str
    data: bytes
    sha256: str


def _etag(content_hash: str) -> str:
    return f'"{content_hash}"'


def _matches(if_none_match: str, etag: str) -> bool:
    tags = [t.strip().removeprefix("W/") for t in if_none_match.split(",")]
    return "*" in tags or etag in tags


def archive_route(pipeline: Any, authorized: Callable[[Request], bool],
                  retry_after_s: float) -> Callable[[Request], Awaitable[Response]]:
    """The route's handler over `pipeline.doc_archive(collection, known_hash)`."""
    packed: dict[str, _Packed] = {}

    async def handler(request: Request) -> Response:
        if not authorized(request):
            return unauthorized_response()
        collection = request.query_params.get("collection") or None
        if collection is not None and len(collection) > 200:
            return error_response(422, "request", "collection: at most 200 characters")
        get = getattr(pipeline, "doc_archive", None)
        if get is None:
            return error_response(404, "retrieval", "this deployment serves no doc tree")
        key = collection or ""
        held = packed.get(key)
        try:
            archive: DocArchive = await asyncio.wait_for(get(collection, held.content_hash if held else None),
                                                         ARCHIVE_TIMEOUT_S)
        except AskdocsError as e:           # no fetch_docs 404, unknown collection 422, busy 503, index 502
            return response_for(e, retry_after_s=retry_after_s)
        except TimeoutError:
            log.warning("doc archive: no answer within %.0f s", ARCHIVE_TIMEOUT_S)
            return error_response(502, "retrieval", "the index could not send its doc tree now")
        if archive.data is not None:
            held = _Packed(archive.content_hash, archive.data, hashlib.sha256(archive.data).hexdigest())
            packed[key] = held
        elif held is None or held.content_hash != archive.content_hash:     # not ours to trust: ask again
            packed.pop(key, None)
            return error_response(502, "retrieval", "the index answered without its doc tree; retry")
        etag = _etag(held.content_hash)
        headers = {"ETag": etag, "Cache-Control": "no-cache", "X-Archive-Sha256": held.sha256}
        if _matches(request.headers.get("if-none-match", ""), etag):
            return Response(status_code=304, headers=headers)
        filename = f"docs-{held.content_hash[:16]}.tar.gz"
        return Response(held.data, media_type="application/gzip",
                        headers=headers | {"Content-Disposition": f'attachment; filename="{filename}"'})

    return handler

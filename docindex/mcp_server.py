"""docindex's stdio MCP server (`docindex serve-mcp --db FILE [--collection NAME]`).

Tools
  crag_search       crag-mcp's contract, so either server can sit behind the Retriever
  search            structured passages, optionally scoped to a collection
  list_collections  names, sizes, embedding model, index version
  get_document      one document's title, sections and anchors, sha256, metadata
  fetch_docs        the collection as a tree of markdown files (see fetch_docs.py)
Resources
  docindex://stats  index statistics as JSON
  crag://stats      crag-mcp's plain-text stats, for clients written against crag-mcp

Arguments are validated against each tool's advertised JSON schema before the
SDK sees them, so a bad argument becomes an `isError` result worded like
crag-mcp's ("Invalid arguments for tool 'crag_search': string too short (min 1)
(path: /query, keyword: minLength)") rather than a pydantic dump. Errors the
index raises on purpose (`DocindexError`) become `isError` results with their
own one-line message; anything else is a bug, logged with its traceback on
stderr and reported to the client only as "Error executing tool X".
Rules a schema cannot state (a blank or stopword-only query, "source or
doc_id") are worded the same way, without a keyword.

An empty index is not an error and not a no-match: `crag_search` and `search`
answer with a text that says the index is empty (and `indexEmpty: true` in
the structured content), so a Retriever can tell "nothing ingested yet" from
"nothing relevant".

stdout carries the protocol only; logging goes to stderr. The Index is opened
once per process (so is the embedder) and refreshed before every call, so an
ingest made while the server runs is seen on the next call (the index checks
its version inside each read transaction, so no call mixes two versions).
Sync tools run on worker threads; `Index` is thread-safe.
"""
from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from .embedder import MODEL_DIM, MODEL_NAME
from .errors import DocindexError, EmptyQuery, InputError, StoreError
from .fetch_docs import FetchResult, write_collection_tree
from .index import Index
from .types import CollectionInfo, DocumentInfo, Hit

log = logging.getLogger(__name__)

SERVER_NAME = "docindex"
NO_MATCH_TEXT = "(no matching chunks)"

INSTRUCTIONS = """\
docindex answers questions from an indexed document collection. Every claim \
you make from it must cite its source path and section anchor, like \
`guide/install.md#requirements`; say so plainly when the documents do not \
answer the question instead of guessing.

Two ways in:
1. Quick lookups: call `search` (passages headed `source#anchor`, optional \
collection filter; `crag_search` is the same search in crag-mcp's format, \
which shows the source only). Each passage shows its cosine score; cosine is \
the only calibrated relevance score, so ignore passages whose cosine is far \
below the best one.
2. Reading the documents as files: call `fetch_docs`. It writes the collection \
as markdown files, one per section, with frontmatter (title, source, anchor, \
url), and returns the title tree inline. Read that tree first; open only the \
sections whose titles fit the question; use grep over the returned path for \
specific names, flags and error messages. The files are rewritten only when \
the index changes, so calling it again is cheap.

`list_collections` shows what is indexed; `get_document` lists one document's \
sections and anchors.
"""

K_SCHEMA = {"type": "integer", "minimum": 1, "maximum": 20, "default": 5}
COLLECTION_SCHEMA = {"type": "string", "minLength": 1, "description": "collection name (default: the server's)"}

CRAG_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1}, "k": K_SCHEMA},
    "required": ["query"],
    "additionalProperties": False,
}
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1}, "k": K_SCHEMA, "collection": COLLECTION_SCHEMA},
    "required": ["query"],
    "additionalProperties": False,
}
LIST_COLLECTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"include_stats": {"type": "boolean", "default": True}},
    "additionalProperties": False,
}
# "exactly one of source / doc_id" is checked in the tool: several LLM APIs
# refuse tool schemas with a top-level oneOf.
GET_DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "source": {"type": "string", "minLength": 1, "description": "source path as ingested"},
        "doc_id": {"type": "integer", "minimum": 1},
        "collection": COLLECTION_SCHEMA,
    },
    "additionalProperties": False,
}
FETCH_DOCS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "collection": COLLECTION_SCHEMA,
        "force": {"type": "boolean", "default": False, "description": "rewrite even if unchanged"},
    },
    "additionalProperties": False,
}

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)


# --------------------------------------------------------------------------
# Argument validation, worded like crag-mcp


class ArgumentViolation(InputError):
    """An argument the schema cannot express a rule for (a blank query, two ids)."""

    def __init__(self, message: str, *, path: str, keyword: str | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.keyword = keyword


# When several rules fail, report the one crag-mcp's validator reports first.
_KEYWORD_ORDER = {"required": 0, "additionalProperties": 1, "type": 2, "enum": 3,
                  "minLength": 4, "maxLength": 4, "minimum": 5, "maximum": 5}


def _pointer(parts: Iterable[Any]) -> str:
    """RFC 6901 JSON pointer, as crag-mcp prints paths ("" for the root)."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def describe_violation(error: jsonschema.ValidationError) -> tuple[str, str, str]:
    """(message, path, keyword) for one schema violation, in crag-mcp's words."""
    keyword = str(error.validator)
    path = list(error.absolute_path)
    value = error.validator_value
    if keyword == "required":
        missing = next(name for name in value if name not in error.instance)
        return "missing required property", _pointer([*path, missing]), keyword
    if keyword == "additionalProperties":
        known = error.schema.get("properties", {})
        extra = next(name for name in error.instance if name not in known)
        return "unexpected property", _pointer([*path, extra]), keyword
    messages = {
        "type": lambda: f"expected type {value}" if isinstance(value, str) else "no listed type matches",
        "enum": lambda: "value not in enum",
        "minLength": lambda: f"string too short (min {value})",
        "maxLength": lambda: f"string too long (max {value})",
        "minimum": lambda: "value below minimum",
        "maximum": lambda: "value above maximum",
    }
    message = messages.get(keyword, lambda: error.message)()
    return message, _pointer(path), keyword


def invalid_arguments_text(tool: str, message: str, path: str, keyword: str | None) -> str:
    where = f"path: {path}" + (f", keyword: {keyword}" if keyword else "")
    return f"Invalid arguments for tool '{tool}': {message} ({where})"


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


class SchemaValidatingServer(MCPServer):
    """MCPServer whose tools are validated against their advertised input schema first.

    The SDK would validate with the function's pydantic model and answer with
    pydantic's multi-line dump; clients of crag-mcp expect its one-line wording.
    """

    def __init__(self, *args: Any, tools: list[Tool], **kwargs: Any) -> None:
        super().__init__(*args, tools=tools, **kwargs)
        self._validators = {
            tool.name: jsonschema.Draft202012Validator(tool.parameters) for tool in tools
        }

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        validator = self._validators.get(name)
        if validator is not None:
            errors = sorted(validator.iter_errors(arguments), key=lambda e: _KEYWORD_ORDER.get(str(e.validator), 9))
            if errors:
                message, path, keyword = describe_violation(errors[0])
                log.info("tool %s rejected arguments at %s (%s)", name, path or "/", keyword)
                return error_result(invalid_arguments_text(name, message, path, keyword))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ArgumentViolation):
                log.info("tool %s rejected arguments at %s: %s", name, cause.path, cause)
                return error_result(invalid_arguments_text(name, str(cause), cause.path, cause.keyword))
            if isinstance(cause, DocindexError):
                log.info("tool %s failed: %s", name, cause)
                return error_result(str(cause))
            raise


def schema_tool(fn: Callable[..., Any], schema: dict[str, Any], *, name: str, description: str) -> Tool:
    """A tool whose advertised inputSchema is `schema`, not the one derived from `fn`'s signature."""
    tool = Tool.from_function(fn, name=name, description=description, annotations=READ_ONLY)
    return tool.model_copy(update={"parameters": schema})


# --------------------------------------------------------------------------
# Results


def format_passage(hit: Hit, *, with_anchor: bool = False) -> str:
    """crag-mcp's text form of one passage; `search` adds `#anchor` so agents can cite from text alone."""
    where = f"{hit.source}#{hit.anchor}" if with_anchor and hit.anchor else hit.source
    return f"[cos {hit.cosine:.3f}  bm25 {hit.bm25:.2f}  fusion {hit.fusion:.3f}] {where}\n{hit.text}"


def passage_dict(hit: Hit) -> dict[str, Any]:
    return {
        "source": hit.source,
        "anchor": hit.anchor,
        "title": hit.title,
        "text": hit.text,
        "cosine": hit.cosine,
        "bm25": hit.bm25,
        "fusion": hit.fusion,
        "chunk_id": hit.chunk_id,
        "collection": hit.collection,
    }


def passages_result(hits: list[Hit], *, with_anchor: bool = False) -> CallToolResult:
    structured = {"passages": [passage_dict(h) for h in hits]}
    if not hits:
        return CallToolResult(content=[TextContent(type="text", text=NO_MATCH_TEXT)], structured_content=structured)
    content = [TextContent(type="text", text=format_passage(h, with_anchor=with_anchor)) for h in hits]
    return CallToolResult(content=content, structured_content=structured)


def empty_index_result(collection: str | None) -> CallToolResult:
    """Not an error and not a no-match: there is nothing to search yet."""
    if collection is None:
        text = "(index is empty: no documents have been ingested yet; run `docindex ingest PATH... --collection NAME`)"
    else:
        text = f"(collection {collection!r} is empty: none of its documents has indexed text)"
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content={"passages": [], "indexEmpty": True},
    )


def json_result(payload: Mapping[str, Any], text: str | None = None) -> CallToolResult:
    """Structured content, with the same JSON as text for clients that read only text."""
    body = text if text is not None else json.dumps(payload, ensure_ascii=False, indent=1)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=dict(payload))


def collection_dict(info: CollectionInfo, include_stats: bool) -> dict[str, Any]:
    if not include_stats:
        return {"name": info.name}
    return {
        "name": info.name,
        "documents": info.documents,
        "chunks": info.chunks,
        "embed_model": info.embed_model,
        "index_version": info.index_version,
    }


def document_dict(doc: DocumentInfo) -> dict[str, Any]:
    return {
        "doc_id": doc.doc_id,
        "collection": doc.collection,
        "source": doc.source,
        "title": doc.title,
        "sha256": doc.sha256,
        "chunk_count": doc.chunk_count,
        "sections": [
            {
                "anchor": s.anchor,
                "title": s.heading_path[-1] if s.heading_path else doc.title,
                "heading_path": list(s.heading_path),
                "level": s.level,
                "ordinal": s.ordinal,
            }
            for s in doc.sections
        ],
        "metadata": dict(doc.metadata),
    }


# --------------------------------------------------------------------------
# The index this process serves


class IndexService:
    """The one Index of this process and what the tools need around it.

    `Index` is thread-safe (one SQLite connection under its own lock, query
    embedding outside it), so worker threads share it without another lock.
    """

    def __init__(self, index: Index, *, db_path: Path, default_collection: str | None, cache_root: Path) -> None:
        self._index = index
        self.db_path = db_path
        self.default_collection = default_collection
        self.cache_root = cache_root

    def fresh(self) -> Index:
        """The index, reloaded first if another process committed an ingest since the last call."""
        if self._index.refresh():
            log.info("index changed on disk; now at version %s", self._index.version)
        return self._index

    def scope(self, collection: str | None) -> str | None:
        return collection if collection is not None else self.default_collection

    def warm_up(self) -> None:
        """Load the embedding model and the vectors so the first real call is fast."""
        index = self.fresh()
        if index.is_empty():
            return
        try:
            index.search("warm up the embedder", 1, None)
        except DocindexError as exc:
            log.warning("warm-up search failed: %s", exc)


def _search(service: IndexService, query: str, k: int, collection: str | None, *, with_anchor: bool) -> CallToolResult:
    scope = service.scope(collection)
    index = service.fresh()
    if index.is_empty():
        return empty_index_result(None)
    try:
        hits = index.search(query, k, scope)
    except EmptyQuery as exc:
        # Blank, or only stopwords: the schema cannot say so, the index can.
        raise ArgumentViolation(str(exc), path="/query") from exc
    if not hits and scope is not None and index.is_empty(scope):
        return empty_index_result(scope)
    return passages_result(hits, with_anchor=with_anchor)


class _IndexMoved(Exception):
    """An ingest committed between hashing a collection and reading its chunks."""


def _chunks_matching(index: Index, collection: str, content_hash: str) -> Iterator[dict]:
    chunks = list(index.iter_chunks(collection))
    if index.content_hash(collection) != content_hash:
        raise _IndexMoved
    yield from chunks


def _fetch(service: IndexService, collection: str | None, force: bool) -> FetchResult:
    index = service.fresh()
    name = _fetch_collection(index, service.scope(collection))
    for _attempt in range(3):
        content_hash = index.content_hash(name)
        try:
            return write_collection_tree(
                _chunks_matching(index, name, content_hash),
                cache_root=service.cache_root,
                collection=name,
                content_hash=content_hash,
                force=force,
            )
        except _IndexMoved:
            log.info("collection %r changed while writing its tree; starting over", name)
        except OSError as exc:
            # A full disk or a read-only directory is the operator's to fix; say where.
            raise StoreError(f"cannot write the docs tree under {service.cache_root}: {exc.strerror or exc}") from exc
    raise StoreError(f"collection {name!r} kept changing while its files were written; try again")


def build_tools(service: IndexService) -> list[Tool]:
    def crag_search(query: str, k: int = 5) -> CallToolResult:
        return _search(service, query, k, None, with_anchor=False)

    def search(query: str, k: int = 5, collection: str | None = None) -> CallToolResult:
        return _search(service, query, k, collection, with_anchor=True)

    def list_collections(include_stats: bool = True) -> CallToolResult:
        index = service.fresh()
        infos = index.collections()
        version = index.version
        payload = {
            "collections": [collection_dict(i, include_stats) for i in infos],
            "index_version": version,
            "default_collection": service.default_collection,
        }
        return json_result(payload)

    def get_document(source: str | None = None, doc_id: int | None = None, collection: str | None = None) -> CallToolResult:
        if source is None and doc_id is None:
            raise ArgumentViolation("missing required property: give source or doc_id", path="/source", keyword="required")
        if source is not None and doc_id is not None:
            raise ArgumentViolation("give source or doc_id, not both", path="/doc_id")
        doc = service.fresh().get_document(source=source, doc_id=doc_id, collection=service.scope(collection))
        return json_result(document_dict(doc))

    def fetch_docs(collection: str | None = None, force: bool = False) -> CallToolResult:
        result = _fetch(service, collection, force)
        state = "unchanged since the last call" if result.up_to_date else "written"
        outline = (result.path / "INDEX.md").read_text(encoding="utf-8")
        text = (
            f"{result.sections} section files {state} under {result.path}\n"
            f"contentHash: {result.content_hash}\n\n{outline}"
        )
        return json_result(result.to_dict(), text=text)

    return [
        schema_tool(
            crag_search,
            CRAG_SEARCH_SCHEMA,
            name="crag_search",
            description=(
                "Hybrid retrieval (BM25 + cosine, RRF-fused) over the document index. "
                "Returns up to k chunks ranked by relevance, one text item per chunk: "
                "'[cos C  bm25 B  fusion F] <source path>' then the chunk text."
            ),
        ),
        schema_tool(
            search,
            SEARCH_SCHEMA,
            name="search",
            description=(
                "Hybrid search, optionally within one collection. One text item per passage, "
                "'[cos C  bm25 B  fusion F] <source>#<anchor>' then the text, plus structured passages "
                "(source, anchor, title, text, cosine, bm25, fusion, chunk_id, collection)."
            ),
        ),
        schema_tool(
            list_collections,
            LIST_COLLECTIONS_SCHEMA,
            name="list_collections",
            description="Collections in the index with document and chunk counts, embedding model and index version.",
        ),
        schema_tool(
            get_document,
            GET_DOCUMENT_SCHEMA,
            name="get_document",
            description=(
                "One document by `source` path or `doc_id`: title, sections with anchors, "
                "chunk count, sha256 and metadata."
            ),
        ),
        schema_tool(
            fetch_docs,
            FETCH_DOCS_SCHEMA,
            name="fetch_docs",
            description=(
                "Write the collection as markdown files, one per section with YAML frontmatter "
                "(title, source, anchor, url, heading_path), into a local cache directory; "
                "returns {path, contentHash, sections, tree, upToDate}. Rewrites only when the "
                "index content changed (or with force). Read the returned tree first, open only "
                "fitting sections, grep the path for specifics."
            ),
        ),
    ]


def _fetch_collection(index: Index, requested: str | None) -> str:
    """The collection fetch_docs writes: the one asked for, or the only one there is."""
    if requested is not None:
        return requested
    names = [c.name for c in index.collections()]
    if len(names) == 1:
        return names[0]
    if not names:
        raise InputError("the index is empty: there is no collection to fetch")
    raise ArgumentViolation(
        f"the index has several collections ({', '.join(names)}); name one", path="/collection", keyword="required"
    )


# --------------------------------------------------------------------------
# Resources


def stats_payload(service: IndexService) -> dict[str, Any]:
    stats = dict(service.fresh().stats())
    if "embed_dim" not in stats and stats.get("embed_model") == MODEL_NAME:
        stats["embed_dim"] = MODEL_DIM
    stats["db"] = str(service.db_path)
    stats["server_pid"] = os.getpid()  # lets an operator (or a test) find the process behind a session
    stats["default_collection"] = service.default_collection
    return stats


def crag_stats_text(service: IndexService) -> str:
    """crag-mcp's stats layout: db, chunks, files, dim."""
    stats = stats_payload(service)
    return (
        f"db:     {service.db_path}\n"
        f"chunks: {stats.get('chunks', 0)}\n"
        f"files:  {stats.get('documents', 0)}\n"
        f"dim:    {stats.get('embed_dim') or 0}"
    )


def build_server(service: IndexService) -> SchemaValidatingServer:
    server = SchemaValidatingServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=_package_version(), tools=build_tools(service)
    )

    @server.resource(
        "docindex://stats",
        name="docindex stats",
        description="Index statistics as JSON: collections, documents, chunks, embedding model, index version, db path.",
        mime_type="application/json",
    )
    def docindex_stats() -> str:
        return json.dumps(stats_payload(service), ensure_ascii=False, indent=1)

    @server.resource(
        "crag://stats",
        name="cRAG diagnostics",
        description="crag-mcp compatible plain-text stats: DB path, chunk count, file count, embedding dim.",
        mime_type="text/plain",
    )
    def crag_stats() -> str:
        return crag_stats_text(service)

    return server


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("askdocs")
    except PackageNotFoundError:
        return "0"


# --------------------------------------------------------------------------
# Entry point


def default_cache_root(db: Path) -> Path:
    """`<db path>.cache/fetch_docs`: beside the index, one per index file."""
    return db.with_name(db.name + ".cache") / "fetch_docs"


def _log_to_stderr() -> None:
    # stdout is the protocol channel: one stray print corrupts the stream.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # The SDK logs every request at INFO: noise on stderr and time on the hot path.
    logging.getLogger("mcp").setLevel(logging.WARNING)


def open_service(db: str | Path, collection: str | None, cache_root: Path | None = None) -> IndexService:
    db_path = Path(db).resolve()
    index = Index(db_path)
    return IndexService(
        index,
        db_path=db_path,
        default_collection=collection,
        cache_root=cache_root or default_cache_root(db_path),
    )


def _one_blas_thread() -> None:
    """Run numpy's matrix-vector product on one thread.

    The dense search is one (n, 384) @ (384,) product: memory-bound, so a
    second BLAS thread gains little on an idle machine and, measured on the
    shared 2-core box, tripled its latency under load (13 ms vs 4 ms at 20k
    chunks). A server shares the cores with its siblings in the Retriever pool.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def run_stdio(db: str | Path, collection: str | None, warmup: bool = True) -> None:
    """Serve the index at `db` over stdio until the client closes stdin."""
    _log_to_stderr()
    _one_blas_thread()
    service = open_service(db, collection)
    known = [c.name for c in service.fresh().collections()]
    if collection is not None and collection not in known:
        # Not fatal: an ingest may create it while we run; until then calls say so.
        log.warning("collection %r is not in %s yet (collections: %s)", collection, service.db_path, ", ".join(known) or "none")
    if warmup:
        service.warm_up()
    server = build_server(service)  # its own logging setup is a no-op once the root has a handler
    log.info("serving %s over stdio (collection: %s)", service.db_path, collection or "all")
    server.run("stdio")

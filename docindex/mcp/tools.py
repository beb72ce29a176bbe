"""The tools `docindex serve-mcp` offers, over the one Index of the process.

  crag_search           crag-mcp's search (text items), so either server can sit behind the Retriever
  crag_stats            crag-mcp's stats text: db, chunks, files, dim
  search                structured passages, optionally scoped to a collection
  query_knowledge_hub   the MCP Knowledge Service's search: {query, top_k, collection}
  list_collections      names, sizes, embedding model, index version, the query embedder's file
  get_document          one document's title, sections and anchors, sha256, metadata
  get_document_summary  the Knowledge Service's summary: title, summary, tags, source, chunk count, metadata
  fetch_docs            the collection as a tree of markdown files (see docindex/fetch_docs.py)
  quote_vectors         the stored vectors of chunks' quotable sentences (docindex/quotable.py), for
                        an extractive answerer (the Retriever asks for them after a search)

Tools that take `collection` use the server's default collection
(`serve-mcp --collection`) when it is left out.
"""
from __future__ import annotations

import base64
import logging
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent

from ..errors import DocindexError, EmptyQuery, InputError, StoreError
from ..fetch_docs import FetchResult, write_collection_tree
from ..index import Index
from ..minilm import loaded_file
from ..noise_floor import collection_floors
from ..ranking import RANKINGS
from ..summary import summarize
from ..types import Hit
from .contract import (
    CRAG_SEARCH_SCHEMA,
    CRAG_STATS_SCHEMA,
    K_SCHEMA,
    MAX_ID,
    ArgumentViolation,
    crag_stats_text,
    format_passage,
    schema_tool,
)
from .payloads import (
    collection_dict,
    document_dict,
    empty_index_result,
    json_result,
    knowledge_hub_dict,
    passages_result,
    summary_dict,
)

log = logging.getLogger(__name__)

QUOTE_ENCODING = "blake2b-8 key + float16[dim], per sentence"

COLLECTION_SCHEMA = {"type": "string", "minLength": 1, "description": "collection name (default: the server's)"}
SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1}, "k": K_SCHEMA, "collection": COLLECTION_SCHEMA,
                   "rank": {"type": "string", "enum": sorted(RANKINGS), "default": "passages",
                            "description": "passages (default): the chunks that answer, RRF; pages: one chunk "
                                           "per page first, each page also scored as a whole"}},
    "required": ["query"],
    "additionalProperties": False,
}
QUERY_KNOWLEDGE_HUB_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "minLength": 1, "description": "what to look for"},
                   "top_k": {**K_SCHEMA, "description": "results to return"},
                   "collection": COLLECTION_SCHEMA},
    "required": ["query"],
    "additionalProperties": False,
}
LIST_COLLECTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"include_stats": {"type": "boolean", "default": True}},
    "additionalProperties": False,
}
DOC_ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_ID}
MAX_QUOTE_CHUNKS = 64
QUOTE_VECTORS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"chunk_ids": {"type": "array", "minItems": 1, "maxItems": MAX_QUOTE_CHUNKS,
                                 "items": {"type": "integer", "minimum": 1, "maximum": MAX_ID}}},
    "required": ["chunk_ids"],
    "additionalProperties": False,
}
# "exactly one of source / doc_id" is checked in the tool: several LLM APIs
# refuse tool schemas with a top-level oneOf.
GET_DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "source": {"type": "string", "minLength": 1, "description": "source path as ingested"},
        "doc_id": DOC_ID_SCHEMA,
        "collection": COLLECTION_SCHEMA,
    },
    "additionalProperties": False,
}
GET_DOCUMENT_SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "doc_id": {"type": ["integer", "string"], "minimum": 1, "maximum": MAX_ID, "minLength": 1,
                   "description": "the document's doc_id (from query_knowledge_hub), or its source path"},
        "collection": COLLECTION_SCHEMA,
    },
    "required": ["doc_id"],
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

    def stats(self) -> dict[str, Any]:
        stats = dict(self.fresh().stats())
        stats["db"] = str(self.db_path)
        stats["server_pid"] = os.getpid()  # lets an operator (or a test) find the process behind a session
        stats["default_collection"] = self.default_collection
        return stats

    def warm_up(self) -> None:
        """Load the embedding model and the vectors so the first real call is fast."""
        index = self.fresh()
        if index.is_empty():
            return
        try:
            index.search("warm up the embedder", 1, None)
            collection_floors(index, self.scope(None))     # what a first question's Gate needs (noise_floor.py)
        except DocindexError as exc:
            log.warning("warm-up search failed: %s", exc)


def _hits(service: IndexService, query: str, k: int, collection: str | None, rank: str | None = None,
          *, with_floor: bool = False) -> tuple[list[Hit], CallToolResult | None]:
    """The hits (ranked as `rank` names, else as the index does: passages), or the empty-index answer instead;
    `with_floor`: each carries its best sentence's cosine and its collection's noise floors (noise_floor.py), what
    the Gate weighs the cosines against."""
    scope = service.scope(collection)
    index = service.fresh()
    if index.is_empty():
        return [], empty_index_result(None)
    try:
        hits = index.search(query, k, scope, ranking=RANKINGS[rank] if rank else None, sentences=with_floor)
    except EmptyQuery as exc:
        # Blank, or only stopwords: the schema cannot say so, the index can.
        raise ArgumentViolation(str(exc), path="/query") from exc
    if not hits and scope is not None and index.is_empty(scope):
        return [], empty_index_result(scope)
    if hits and with_floor:
        floors = collection_floors(index, scope)
        hits = [replace(hit, noise_floor=floors.cosine, sentence_floor=floors.sentence) for hit in hits]
    return hits, None


def _search(service: IndexService, query: str, k: int, collection: str | None, *, with_anchor: bool,
            rank: str | None = None) -> CallToolResult:
    hits, empty = _hits(service, query, k, collection, rank, with_floor=True)
    return empty or passages_result(hits, with_anchor=with_anchor)


class _IndexMoved(Exception):
    """An ingest committed between hashing a collection and reading its chunks."""


def _chunks_matching(index: Index, collection: str, content_hash: str) -> Iterator[dict[str, Any]]:
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


def _summary(service: IndexService, doc_id: int | str, collection: str | None) -> CallToolResult:
    index = service.fresh()
    by_source = isinstance(doc_id, str) and not doc_id.isdigit()
    doc = index.get_document(source=doc_id if by_source else None,     # type: ignore[arg-type]
                             doc_id=None if by_source else int(doc_id), collection=service.scope(collection))
    texts = [c["text"] for c in index.iter_chunks(doc.collection) if c["doc_id"] == doc.doc_id]
    headings = [s.heading_path[-1] for s in doc.sections if s.heading_path]
    return json_result(summary_dict(doc, summarize(doc.title, headings, texts)))


def build_tools(service: IndexService) -> list[Tool]:
    def crag_search(query: str, k: int = 5) -> CallToolResult:
        return _search(service, query, k, None, with_anchor=False)

    def crag_stats() -> CallToolResult:
        text = crag_stats_text(service.db_path, service.stats())
        return CallToolResult(content=[TextContent(type="text", text=text)])

    def search(query: str, k: int = 5, collection: str | None = None, rank: str | None = None) -> CallToolResult:
        return _search(service, query, k, collection, with_anchor=True, rank=rank)

    def query_knowledge_hub(query: str, top_k: int = 5, collection: str | None = None) -> CallToolResult:
        hits, empty = _hits(service, query, top_k, collection)
        payload = {"query": query, "collection": service.scope(collection),
                   "results": [knowledge_hub_dict(h) for h in hits]}
        if empty is not None:
            return json_result(payload | {"indexEmpty": True}, text=empty.content[0].text)  # type: ignore[union-attr]
        text = [TextContent(type="text", text=format_passage(h, with_anchor=True)) for h in hits]
        return CallToolResult(content=text or [TextContent(type="text", text="(no matching chunks)")],
                              structured_content=payload)

    def list_collections(include_stats: bool = True) -> CallToolResult:
        index = service.fresh()
        payload = {
            "collections": [collection_dict(i, include_stats) for i in index.collections()],
            "index_version": index.version,
            "default_collection": service.default_collection,
            "query_embedder": loaded_file(),
        }
        return json_result(payload)

    def get_document(source: str | None = None, doc_id: int | None = None,
                     collection: str | None = None) -> CallToolResult:
        if source is None and doc_id is None:
            raise ArgumentViolation("missing required property: give source or doc_id", path="/source",
                                    keyword="required")
        if source is not None and doc_id is not None:
            raise ArgumentViolation("give source or doc_id, not both", path="/doc_id")
        doc = service.fresh().get_document(source=source, doc_id=doc_id, collection=service.scope(collection))
        return json_result(document_dict(doc))

    def get_document_summary(doc_id: int | str, collection: str | None = None) -> CallToolResult:
        return _summary(service, doc_id, collection)

    def fetch_docs(collection: str | None = None, force: bool = False) -> CallToolResult:
        result = _fetch(service, collection, force)
        state = "unchanged since the last call" if result.up_to_date else "written"
        outline = (result.path / "INDEX.md").read_text(encoding="utf-8")
        text = (
            f"{result.sections} section files {state} under {result.path}\n"
            f"contentHash: {result.content_hash}\n\n{outline}"
        )
        return json_result(result.to_dict(), text=text)

    def quote_vectors(chunk_ids: list[int]) -> CallToolResult:
        stored = service.fresh().quote_vectors(chunk_ids)
        payload = {"model": stored.model, "dim": stored.dim, "encoding": QUOTE_ENCODING,
                   "vectors": {str(i): base64.b64encode(b).decode("ascii") for i, b in stored.blobs.items()}}
        return json_result(payload, text=f"quote vectors for {len(stored.blobs)} of {len(set(chunk_ids))} chunks "
                                          "(in the structured content)")

    return [
        schema_tool(crag_search, CRAG_SEARCH_SCHEMA, name="crag_search", description=(
            "Hybrid retrieval (BM25 + cosine, RRF-fused) over the document index. "
            "Returns up to k chunks ranked by relevance, one text item per chunk: "
            "'[cos C  bm25 B  fusion F] <source path>' then the chunk text.")),
        schema_tool(crag_stats, CRAG_STATS_SCHEMA, name="crag_stats", description=(
            "Diagnostics as crag-mcp reports them: DB path, chunk count, file count, embedding dim "
            "(also the crag://stats resource; docindex://stats has the embedding model).")),
        schema_tool(search, SEARCH_SCHEMA, name="search", description=(
            "Hybrid search, optionally within one collection; rank 'pages' puts one chunk per page first "
            "(which page answers), 'passages' (default) the chunks an answer needs. One text item per passage, "
            "'[cos C  bm25 B  fusion F] <source>#<anchor>' then the text, plus structured passages "
            "(source, anchor, title, text, cosine, bm25, fusion, and why it ranked: score, fields_bm25, "
            "doc_bm25, doc_score, coverage; chunk_id, collection; noise_floor: the third best cosine everyday "
            "questions reach in the collection; sentence_cosine: its best quotable sentence's cosine, and "
            "sentence_floor: the same third best over everyday questions' best sentences, null without quote "
            "vectors; copy_of: the chunk id of a whole-manual page's copy whose place and scores it took, else "
            "null; unknown_terms: the query's words no chunk of the collection holds).")),
        schema_tool(query_knowledge_hub, QUERY_KNOWLEDGE_HUB_SCHEMA, name="query_knowledge_hub", description=(
            "Search the knowledge hub (MCP Knowledge Service arguments): up to top_k passages, "
            "structured as results [{doc_id, chunk_id, title, content, source, anchor, collection, score, "
            "scores}] and as text items '[cos C  bm25 B  fusion F] <source>#<anchor>' then the text. "
            "Cite source#anchor; pass doc_id to get_document_summary.")),
        schema_tool(list_collections, LIST_COLLECTIONS_SCHEMA, name="list_collections", description=(
            "Collections in the index with document and chunk counts, embedding model and index version.")),
        schema_tool(get_document, GET_DOCUMENT_SCHEMA, name="get_document", description=(
            "One document by `source` path or `doc_id`: title, sections with anchors, "
            "chunk count, sha256 and metadata.")),
        schema_tool(get_document_summary, GET_DOCUMENT_SUMMARY_SCHEMA, name="get_document_summary", description=(
            "One document's summary by doc_id (or source path): title, summary (its own key sentences, "
            "extractive), tags (its headings and most frequent terms), source, chunk_count, metadata.")),
        schema_tool(fetch_docs, FETCH_DOCS_SCHEMA, name="fetch_docs", description=(
            "Write the collection as markdown files, one per section with YAML frontmatter "
            "(title, source, anchor, url, heading_path), into a local cache directory; "
            "returns {path, contentHash, sections, tree, upToDate}. Rewrites only when the "
            "index content changed (or with force). Read the returned tree first, open only "
            "fitting sections, grep the path for specifics.")),
        schema_tool(quote_vectors, QUOTE_VECTORS_SCHEMA, name="quote_vectors", description=(
            "The stored embeddings of the given chunks' quotable sentences (made at ingest), for an "
            "extractive answerer: {model, dim, encoding, vectors: {chunk_id: base64}}; each blob is, per "
            "sentence, an 8-byte BLAKE2b key of the sentence text then dim float16s. Chunks without "
            "stored vectors are left out.")),
    ]

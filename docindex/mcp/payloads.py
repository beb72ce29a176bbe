"""What the tools answer: MCP results and the JSON payloads inside them.

Every structured result also carries the same JSON as text, for clients that
read only text. An empty index is neither an error nor a no-match: its text
says nothing has been ingested (and `indexEmpty: true`), so a Retriever can
tell "nothing ingested yet" from "nothing relevant".
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_types import CallToolResult, TextContent

from ..summary import Summary
from ..types import CollectionInfo, DocumentInfo, Hit
from .contract import NO_MATCH_TEXT, format_passage


def passage_dict(hit: Hit) -> dict[str, Any]:
    return {
        "source": hit.source,
        "anchor": hit.anchor,
        "title": hit.title,
        "text": hit.text,
        "cosine": hit.cosine,
        "bm25": hit.bm25,
        "fusion": hit.fusion,
        # why it ranked beyond the three scores (docindex/ranking.py): the score hits are
        # ordered by, the field BM25, the whole-document BM25, the document score, the query's
        # coverage and the cosine with the document's centroid (score_fusion.py)
        "score": hit.score,
        "fields_bm25": hit.fields_bm25,
        "doc_bm25": hit.doc_bm25,
        "doc_score": hit.doc_score,
        "coverage": hit.coverage,
        "doc_cosine": hit.doc_cosine,
        "chunk_id": hit.chunk_id,
        "collection": hit.collection,
        "url": hit.url,     # the citation link (docindex/links.py), None without one
        "noise_floor": hit.noise_floor,     # what everyday questions reach in its collection (noise_floor.py)
        "sentence_cosine": hit.sentence_cosine,     # its best quotable sentence's cosine; None without quote vectors
        "sentence_floor": hit.sentence_floor,       # what everyday questions' best sentences reach there
        "copy_of": hit.copy_of,     # the long document's chunk whose place (and scores) it took, else None
        "unknown_terms": list(hit.unknown_terms),   # the query's words its collection never uses (the Gate's names)
        "release_notes": hit.release_notes,     # a release-notes page the ranking scaled down (release_notes.py)
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


def knowledge_hub_dict(hit: Hit) -> dict[str, Any]:
    """One `query_knowledge_hub` result, in the MCP Knowledge Service's field names
    (plus docindex's anchor, link and scores, so a client can cite `url` or `source#anchor`)."""
    return {
        "doc_id": hit.doc_id,
        "chunk_id": hit.chunk_id,
        "title": hit.title,
        "content": hit.text,
        "source": hit.source,
        "anchor": hit.anchor,
        "url": hit.url,
        "collection": hit.collection,
        "score": hit.cosine,
        "scores": {"cosine": hit.cosine, "bm25": hit.bm25, "fusion": hit.fusion},
    }


def summary_dict(doc: DocumentInfo, summary: Summary) -> dict[str, Any]:
    """`get_document_summary`'s answer, in the MCP Knowledge Service's field names."""
    return {
        "doc_id": doc.doc_id,
        "collection": doc.collection,
        "title": doc.title,
        "summary": summary.summary,
        "tags": list(summary.tags),
        "source": doc.source,
        "chunk_count": doc.chunk_count,
        "metadata": dict(doc.metadata),
    }

"""What the index server's tool results mean to the Retriever.

Passages come as docindex's `structuredContent.passages`, or as crag-mcp's
text items (`[cos C  bm25 B  fusion F] source` then the chunk text);
arguments the server refused come as crag-mcp's one-line "Invalid arguments
for tool 'T': WHY (path: /P, keyword: K)", which is the request's fault
(`InvalidRequest`, HTTP 422); crag-mcp's stats are "db: / chunks: / files: / dim:".
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from deployments.errors import InvalidQuestion, InvalidRequest
from deployments.passage import Passage

_CRAG_ITEM = re.compile(
    r"^\[cos\s+(?P<cos>-?[\d.]+)\s+bm25\s+(?P<bm25>-?[\d.]+)\s+fusion\s+(?P<fusion>-?[\d.]+)\]\s*(?P<source>[^\n]*)\n?(?P<text>.*)$",
    re.S,
)

_ARGUMENT_ERROR = re.compile(
    r"^Invalid arguments for tool '[^']*': (?P<why>.+?)(?: \(path: (?P<path>[^,)]*)(?:, keyword: [^)]*)?\))?$", re.S)
_WHAT = {"/query": "question", "/k": "k", "/collection": "collection"}


def rejected_arguments(why: str, path: str | None) -> InvalidRequest:
    """The 422 for arguments the index refused: which part of the request, and the index's reason."""
    what = _WHAT.get(path or "", "request")
    return InvalidQuestion(f"the index cannot search this {what}: {why.strip()}")


def argument_error(message: str) -> InvalidRequest | None:
    """The 422 for an "Invalid arguments for tool ..." error text; None for any other text."""
    m = _ARGUMENT_ERROR.match(message.strip())
    return rejected_arguments(m["why"], m["path"]) if m else None


_STATS_CHUNKS = re.compile(r"^chunks:\s*(\d+)\s*$", re.M)


def crag_stats_chunks(result: Any) -> int | None:
    """The chunk count in crag-mcp's `crag_stats` text (None when it has none)."""
    m = _STATS_CHUNKS.search("\n".join(getattr(c, "text", "") for c in result.content))
    return int(m[1]) if m else None


def _passage_from_dict(d: dict[str, Any]) -> Passage:
    scores = d.get("scores") or {}
    return Passage(
        source=str(d.get("source", "")),
        text=str(d.get("text", "")),
        cosine=float(d.get("cosine", scores.get("cosine", 0.0))),
        bm25=float(d.get("bm25", scores.get("bm25", 0.0))),
        fusion=float(d.get("fusion", scores.get("fusion", 0.0))),
        anchor=str(d.get("anchor", "") or ""),
        title=str(d.get("title", "") or ""),
        chunk_id=d.get("chunk_id", d.get("chunkId")),
        collection=str(d.get("collection", "") or ""),
        coverage=float(d["coverage"]) if isinstance(d.get("coverage"), (int, float)) else None,
        url=d["url"] if isinstance(d.get("url"), str) and d["url"] else None,
        noise_floor=_number(d.get("noise_floor")),
        sentence_cosine=_number(d.get("sentence_cosine")),
        sentence_floor=_number(d.get("sentence_floor")),
        unknown_terms=tuple(t for t in d["unknown_terms"] if isinstance(t, str))
        if isinstance(d.get("unknown_terms"), list) else None,
    )


def _number(value: Any) -> float | None:
    """A score the server may not send: a float, else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def parse_crag_text(texts: Sequence[str]) -> list[Passage]:
    """crag-mcp's text format: one item per passage; a no-match text item yields none."""
    passages = []
    for text in texts:
        m = _CRAG_ITEM.match(text.strip())
        if m:
            passages.append(Passage(source=m["source"].strip(), text=m["text"].strip(), cosine=float(m["cos"]),
                                    bm25=float(m["bm25"]), fusion=float(m["fusion"])))
    return passages


def parse_search_result(result: Any) -> list[Passage]:
    """Prefer `structuredContent.passages`; fall back to the text items."""
    structured = getattr(result, "structured_content", None)
    if isinstance(structured, dict) and isinstance(structured.get("passages"), list):
        return [_passage_from_dict(d) for d in structured["passages"]]
    return parse_crag_text([c.text for c in result.content if getattr(c, "type", "") == "text"])


def error_text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content).strip() or "the index server reported an error"

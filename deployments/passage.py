"""One retrieved passage as the serving side sees it.

The Retriever builds these from MCP results (structured content when the
server sends it, else crag-mcp's text format); the Gate, the prompt builder
and the CitationChecker read them. Plain frozen data, cheap to pickle across
Serve handles.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Passage:
    source: str
    text: str
    cosine: float
    bm25: float = 0.0
    fusion: float = 0.0
    anchor: str = ""
    title: str = ""
    chunk_id: int | None = None
    collection: str = ""
    coverage: float | None = None   # idf-weighted share of the question's words in the passage; None: not sent
    url: str | None = None          # citation link (docindex --base-url or front matter); None: none sent
    noise_floor: float | None = None    # 3rd best cosine everyday questions reach in its collection; None: not sent
    sentence_cosine: float | None = None    # cosine of its best quotable sentence; None: not sent
    sentence_floor: float | None = None     # the 3rd best of that for everyday questions there; None: not sent
    unknown_terms: tuple[str, ...] | None = None   # the question's words its collection never uses; None: not sent
    # The chunk's quotable sentences' vectors as the index stored them (docindex/quotable.py:
    # pack), for the extractive engine; None: not sent. Never shown to a client.
    quote_vectors: bytes | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("quote_vectors")
        return d

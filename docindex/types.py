"""Plain data types shared by the index, the CLI, the MCP server and the Retriever."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Hit:
    """One retrieved passage, with every score that placed it (docindex/ranking.py).
    `cosine` is the only calibrated score."""

    chunk_id: int
    doc_id: int
    collection: str
    source: str               # path as given at ingest, relative to the ingest root
    anchor: str               # GitHub-style slug of the chunk's heading, unique per document
    title: str                # display title: heading path joined with " › "
    heading_path: tuple[str, ...]
    text: str
    cosine: float
    bm25: float               # positive, larger is better (negated FTS5 bm25()); 0.0 if not matched
    fusion: float             # the chunk's own fused score: weighted RRF over ranks, or convex (ranking.py)
    fields_bm25: float = 0.0  # BM25 over title, heading path and file path; 0.0 if not matched or off
    doc_bm25: float = 0.0     # BM25 of its whole document (its chunks' words summed); 0.0 if off
    doc_score: float = 0.0    # its document's score from its best fused chunks; 0.0 when off
    score: float = 0.0        # what hits are ordered by: fusion + doc weight × doc_score
    coverage: float = 0.0     # idf-weighted share of the query's words found in the chunk, 0-1
    doc_cosine: float = 0.0   # cosine of the query with its document's centroid (convex fusion); 0.0 if off
    url: str | None = None    # citation link: front matter's url, else base URL + source + #anchor (links.py)
    noise_floor: float | None = None    # 3rd best cosine everyday questions reach in its collection (noise_floor.py)
    sentence_cosine: float | None = None    # cosine of its best quotable sentence (stored quote vectors); None: none
    sentence_floor: float | None = None     # the same 3rd best for everyday questions' best sentences (noise_floor.py)
    copy_of: int | None = None  # it ranks in the place of this chunk, a long document's copy of it (duplicates.py)
    release_notes: bool = False  # its page reads as release notes and the ranking scaled it (release_notes.py)
    unknown_terms: tuple[str, ...] = ()  # the query's words its collection never uses (the same for every hit)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["heading_path"] = list(self.heading_path)
        for name in ("noise_floor", "sentence_cosine", "sentence_floor", "copy_of"):
            if d[name] is None:             # searched only for a Gate (the MCP tools), not by `docindex search`;
                del d[name]                 # copy_of: only for a page found through a whole-manual copy
        if not self.release_notes:
            del d["release_notes"]          # only where the ranking scaled a release-notes page down
        d["unknown_terms"] = list(self.unknown_terms)
        return d


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    documents: int
    chunks: int
    embed_model: str
    index_version: int


@dataclass(frozen=True)
class Section:
    anchor: str
    heading_path: tuple[str, ...]
    level: int
    ordinal: int


@dataclass(frozen=True)
class DocumentInfo:
    doc_id: int
    collection: str
    source: str
    title: str
    sha256: str
    chunk_count: int
    sections: tuple[Section, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredQuotes:
    """Quote vectors of some chunks (docindex/quotable.py), with the model that made them."""
    model: str | None           # the index's embedding model; None: nothing embedded yet
    dim: int | None
    blobs: dict[int, bytes]     # chunk id → quotable.pack blob, for the chunks that have one

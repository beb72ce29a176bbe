"""From retriever rankings to the hits' order: fusion, document scores, diversity.

Search runs up to three retrievers over one collection, each giving its best
CANDIDATES chunks: dense (cosine), BM25 over the chunk (heading path + body)
and BM25 over the chunk's *fields* (document title, heading path and file
path, without the body: a short field where a match means the page or
section is about the word). Their ranks are fused by weighted reciprocal rank
fusion. A document's score is then taken from its best fused chunks
(`doc_depth` of them, each worth `doc_decay` times the one before), and a
chunk ranks by its own fusion plus `doc_weight` times its document's score:
a page with several matching sections rises above one lucky chunk. Last,
at most `per_doc` chunks of one document are kept before chunks of other
documents (0: no cap), so the top-k names more pages.

Optionally (`doc_bm25_weight`) a fourth ranking joins the fusion: documents by
BM25 over their whole text (doclexical.py). Every candidate chunk of a ranked
document gains weight / (rrf_k + the document's rank) in its fusion, and each
ranked document brings its chunk closest to the query into the candidates.

With `fusion = "convex"` the dense and BM25 lists are fused by score, not
rank (score_fusion.py): per query min-max normalized cosine and BM25 over
the candidates, weighted `convex_dense` and 1 − `convex_dense`, plus
`centroid_weight` times the normalized cosine of the chunk's document
centroid. The field and whole-document BM25 lists are RRF lists: they are
not combined with it.

The shipped defaults and the figures that chose them are in
benchmarks/results/retrieval_levers.md.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ranking:
    """The knobs of hybrid ranking (all measured, see the module docstring)."""

    rrf_k: float = 60.0          # Cormack et al.'s constant; damps the weight of the top ranks
    dense_weight: float = 1.0
    bm25_weight: float = 1.0
    fields_weight: float = 0.0   # BM25 over title, heading path and file path; 0: not run
    doc_weight: float = 0.0      # how much a chunk's document score adds to its own
    doc_depth: int = 3           # best chunks of a document that make its score
    doc_decay: float = 0.5       # each next chunk counts this much of the one before
    per_doc: int = 0             # chunks of one document before others get a turn; 0: no cap
    doc_bm25_weight: float = 0.0  # whole-document BM25: an RRF weight, or convex's share of it; 0: not run
    fusion: str = "rrf"          # "rrf" (ranks) or "convex" (normalized scores, score_fusion.py)
    convex_dense: float = 0.8    # convex: the cosine's share; BM25 gets the rest
    centroid_weight: float = 0.0  # convex: weight of the document centroid's cosine; 0: not computed
    distinct: bool = True        # a passage copied on two pages takes one place, the smaller page's (duplicates.py)
    same_language: bool = True   # candidates in another language than the question's follow the others (language.py)
    candidates: int = 50         # chunks each retriever gives before fusion
    release_notes: float = 1.0   # share of its fused score a release-notes page keeps (release_notes.py); 1: off

    def __post_init__(self) -> None:
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, not {self.fusion!r}")
        if not 0.0 <= self.convex_dense <= 1.0:
            raise ValueError(f"convex_dense must be from 0 to 1, not {self.convex_dense!r}")
        if isinstance(self.candidates, bool) or not isinstance(self.candidates, int) or self.candidates < 1:
            raise ValueError(f"candidates must be a positive integer, not {self.candidates!r}")
        if not 0.0 < self.release_notes <= 1.0:
            raise ValueError(f"release_notes must be above 0 and at most 1, not {self.release_notes!r}")
        if self.fusion == "convex" and self.fields_weight:
            raise ValueError("convex fusion does not combine with fields_weight (an RRF list)")


FUSIONS = ("rrf", "convex")


# What search uses unless told otherwise: RRF of dense and BM25 (Ranking()). Rounds 1-2
# (fields, document scores, caps, RRF k, weights, whole-document BM25) helped no dev half
# everywhere. Round 3's score fusion with the document centroid, one chunk per document
# first (DOCUMENT_RANKING), raised document recall@5 and MRR on both out-of-sample dev
# halves, but the passages it hands the answer hold less of the evidence: the live dev
# eval's key facts fell 0.696 -> 0.565 and the extractive answers found less on both dev
# halves (PostgreSQL 25 -> 24, Python 20 -> 18 of 60; retrieval_levers.md, Round 3,
# "Answers"). The keep rule says it must not hurt the dev eval, so the answer keeps RRF.
# Finding pages is another task: `docindex search` ranks pages by default (`--rank pages`,
# issue 13's distinct-document metrics; MCP `search` with rank "pages" too), and everything
# that feeds an answer (Index.search's default, the MCP search tools the Retriever calls) ranks passages.
# Round 4 (stop 37, retrieval_levers.md): a page ranks by its best chunks, not its best one alone
# (doc_weight 2: best + 1/3 of the 2nd + 1/6 of the 3rd, in effect); flat from 2 to 5, better or
# equal on every dev half and unseen manual measured (benchmarks/page_levers.py).
# Stop 48: 100 candidates per retriever instead of 50 (a long reference page brings more of its sections to its score)
# raised MRR@10 on 7 of 8 dev sets but not on the held-out ones (PostgreSQL test 0.766 -> 0.750, PyMongo, SymPy lower;
# KNOWN_LIMITATIONS.md): not shipped.
# Stop 50: a release-notes page (release_notes.py: most of its headings versions) keeps half its score unless the
# question asks about releases. Dev: Cyrus MRR@10 0.703 -> 0.740, no page flagged in cMCP or either dev half, the other
# dev manuals unchanged; held out, 18 sets: mean 0.841 -> 0.851, 10 up (Hypothesis 0.760 -> 0.875), 1 down
# (BIND 0.806 -> 0.759: its release notes answer "can named forward over DoT/DoH?"). KNOWN_LIMITATIONS.md.
# Stop 51: the passages ranking too (answers, the Gate, `make eval`): a changelog entry ("#2086: Removed support for
# 2to3 during builds") took one of the 4 places an answer draws on. No dev passage flagged in cMCP or either dev half;
# Cyrus' answers 0.328 -> 0.360 of the reference words, Varnish unchanged; held out, 22 sets with a flagged page: mean
# 0.364 -> 0.366, 6 up, 4 down (Coverage.py 0.398 -> 0.388), the best passage never lower, Gate refusals unchanged.
DOCUMENT_RANKING = Ranking(fusion="convex", convex_dense=0.8, centroid_weight=0.1, per_doc=1, doc_weight=2.0,
                           release_notes=0.5)
DEFAULT_RANKING = Ranking(release_notes=0.5)
RANKINGS = {"pages": DOCUMENT_RANKING, "passages": DEFAULT_RANKING}
"""The rankings by the name `docindex search --rank` takes."""
SEARCH_RANKING = "pages"
"""`docindex search`'s default: a person (or a benchmark) asking which page answers."""


@dataclass(frozen=True)
class Ranked:
    chunk_id: int
    fusion: float       # the chunk's own RRF score
    doc_score: float    # its document's score (0.0 when document scoring is off)
    score: float        # what the order is by: fusion + doc_weight × doc_score
    copy_of: int | None = None  # a page's chunk in the place of a long document's copy of it: that copy (duplicates.py)


def rrf(rankings: list[tuple[np.ndarray, float]], k: float) -> dict[int, float]:
    """Weighted reciprocal rank fusion: Σ weight / (k + rank), ranks from 1."""
    scores: dict[int, float] = {}
    for ranking, weight in rankings:
        if not weight:
            continue
        for rank, chunk_id in enumerate(ranking.tolist(), start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (k + rank)
    return scores


def fuse_documents(fused: dict[int, float], doc_of: dict[int, int], ranked_docs: list[int],
                   weight: float, k: float) -> None:
    """Add weight / (k + rank of its document) to every fused chunk of a ranked document (in place)."""
    if not weight:
        return
    doc_rank = {doc: rank for rank, doc in enumerate(ranked_docs, start=1)}
    for chunk_id in fused:
        at = doc_rank.get(doc_of[chunk_id])
        if at is not None:
            fused[chunk_id] += weight / (k + at)


def rank(fused: dict[int, float], doc_of: dict[int, int], ranking: Ranking) -> list[Ranked]:
    """Every fused chunk, best first (equal scores: ascending chunk id)."""
    doc_scores: dict[int, float] = {}
    if ranking.doc_weight:
        by_doc: dict[int, list[float]] = {}
        for chunk_id, value in fused.items():
            by_doc.setdefault(doc_of[chunk_id], []).append(value)
        for doc, values in by_doc.items():
            best = sorted(values, reverse=True)[: ranking.doc_depth]
            doc_scores[doc] = sum(v * ranking.doc_decay ** i for i, v in enumerate(best))
    ranked = []
    for chunk_id, value in fused.items():
        doc_score = doc_scores.get(doc_of[chunk_id], 0.0)
        ranked.append(Ranked(chunk_id, value, doc_score, value + ranking.doc_weight * doc_score))
    ranked.sort(key=lambda r: (-r.score, r.chunk_id))
    return _diversify(ranked, doc_of, ranking.per_doc)


def _diversify(ranked: list[Ranked], doc_of: dict[int, int], per_doc: int) -> list[Ranked]:
    """At most `per_doc` chunks of a document, in order; the rest follow in order."""
    if per_doc <= 0:
        return ranked
    taken: dict[int, int] = {}
    first, later = [], []
    for item in ranked:
        doc = doc_of[item.chunk_id]
        if taken.get(doc, 0) < per_doc:
            taken[doc] = taken.get(doc, 0) + 1
            first.append(item)
        else:
            later.append(item)
    return first + later

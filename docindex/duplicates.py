"""The same text on two pages takes one place in the results, on the more specific page.

Documentation repeats itself across files: Node.js ships every API page twice more, once
inside all.html (the whole manual on one page) and, for some, as the Markdown source beside
the HTML; mdBook writes print.html; Sphinx can build a single-page copy; a manual may keep a
page per version. Ranked as they come, such copies take two or three of the first places with
one passage: asked "How do I join path segments portably across Windows and Linux?" on Node's
API docs, the 4 passages an answer gets were path.join's entry and path.sep's, each twice
(all.html and path.html), and all.html was the second page for 15 of 16 questions.

`distinct` walks the ranked chunks and compares each with those already kept from other
documents: a copy shares at least `SAME_SHARE` of the shorter one's word `SHINGLE`-grams
(lower-cased words, so Markdown's backticks and emphasis do not matter). A share, not equality:
the copy's chunks are cut elsewhere (all.html's start where a page's do not), so a copy is mostly
a shifted window of its twin (certificate.checkHost's entry: 0.954 cosine). Of two copies:
- when one document has `AGGREGATE_RATIO` times the other's chunks, it is the manual holding the
  page: the page's copy takes the better place and the manual's follows the first k;
- otherwise, two pages that share a paragraph (PostgreSQL's CREATE INDEX and REINDEX both explain
  building concurrently): the passages ranking keeps the first only (an answer needs it once), the
  page ranking keeps both (each page is an answer).
What is passed over follows, in order, so a search still fills its k. Chunks of one document are
never compared: two near-identical entries of one page (`readFile` and `readFileSync`) are two
answers. Only the first k × WINDOW + WINDOW candidates are looked at, and only pairs whose vectors
are at cosine >= NEAR are compared by their words (the same text under another heading path: 0.99;
a shifted window of it: 0.954; Node.js's page as Markdown and as HTML: 0.935), so most searches read
no text at all: a copy whose twin ranked lower stays, and so would one embedded below NEAR.

A chunk of a long document (AGGREGATE_MIN_CHUNKS or more, and AGGREGATE_SHARE of its collection) whose
twin did not rank at all is looked up (`twin_of`, `twin_finder`: its nearest chunks, the same test):
when it copies a page AGGREGATE_RATIO
times smaller, that page's chunk takes its place (stop 44: Buildbot's full.html, the whole manual on
one page, ranked first for "…prints nothing for half an hour… and Buildbot kills it" while the page that
answers, shell_command.html, was not in the first 10). A document whose first chunk looked up copies
nothing is not looked up again while the index is unchanged; at most MAX_LOOKUPS lookups a search.

Stop 53: a document under AGGREGATE_RATIO times a page's size can still hold it with others. FFmpeg's manual ships
ffmpeg-all.html, ffplay-all.html and ffprobe-all.html (2,231, 1,725 and 1,742 chunks), each holding
ffmpeg-filters.html (1,224) and a few smaller pages, and the loudnorm filter's passage ranked first on ffplay-all.html,
third on ffmpeg-all.html, the filters page between them. So where two copies' documents are under the ratio, the
larger is asked whether it `holds` pages: HOLD_SAMPLES of its chunks, spread over it, are looked up as `twin_of` looks
up a chunk (nearest chunks, the cosine, the words), among documents smaller than it; it holds pages when their copies
are on HOLD_PAGES or more different documents. A page that shares a paragraph with one other page (PostgreSQL's
CREATE INDEX and REINDEX) holds none. Only a document twin_of would look up is asked (AGGREGATE_MIN_CHUNKS and
AGGREGATE_SHARE of the collection: at a million chunks, none), at most HOLD_LOOKUPS a search; the answer is kept on the
snapshot.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from .ranking import Ranked
from .snapshot import Snapshot

SAME_SHARE = 0.5
NEAR = 0.85             # cosine under which two chunks are not compared (copies measured 0.93-0.99)
AGGREGATE_RATIO = 4     # a document this many times another's chunks holds it (all.html, print.html)
SHINGLE = 5
WINDOW = 4          # candidates looked at: k × WINDOW + WINDOW, enough to fill k after the copies go
AGGREGATE_MIN_CHUNKS = 40   # a document this long may hold pages (print.html: 1,881 chunks; full.html: 2,761)
AGGREGATE_SHARE = 0.05      # … and so much of its collection: the Rust book's print.html holds 49 % of its chunks,
#                             Buildbot's full.html 51 %, NUT's one-page FAQ.html 6.5 %; a long chapter too (Kea's
#                             longest, 22 %), looked up once; a replicated changelog at a million chunks never
MAX_LOOKUPS = 8             # twin lookups a search (each one dense search)
HOLD_SAMPLES = 6            # a document's chunks looked up to tell whether it holds pages (stop 53)
HOLD_PAGES = 2              # … and the different smaller documents their copies must be on
HOLD_LOOKUPS = 2            # documents asked `holds` a search (HOLD_SAMPLES dense searches each, once per index)
_WORD = re.compile(r"\w+")


def shingles(text: str) -> frozenset[int]:
    """The hashes of the text's lower-cased word SHINGLE-grams (a shorter text: its words as one)."""
    words = _WORD.findall(text.lower())
    if len(words) < SHINGLE:
        return frozenset({hash(tuple(words))}) if words else frozenset()
    return frozenset(hash(tuple(words[i:i + SHINGLE])) for i in range(len(words) - SHINGLE + 1))


def copies(a: frozenset[int], b: frozenset[int]) -> bool:
    """Whether two texts' shingles say the same (module docstring)."""
    if not a or not b:
        return False
    return len(a & b) >= SAME_SHARE * min(len(a), len(b))


Twins = Callable[[int, int], "tuple[int, int] | None"]
"""(chunk id, its document) → (the chunk of a smaller page it copies, that page), or None."""


def distinct(ranked: Sequence[int], k: int, doc_of: dict[int, int], doc_sizes: Callable[[int], int],
             texts: Callable[[list[int]], dict[int, str]], per_doc: int = 0,
             vectors: Callable[[list[int]], np.ndarray] | None = None, twin_of: Twins | None = None,
             holds: Callable[[int], bool] | None = None) -> list[int]:
    """`ranked` (chunk ids, best first) with cross-document copies moved after the first k distinct
    chunks (module docstring). `per_doc` > 0 is the page ranking (one chunk per page first): a page's
    copy takes its manual's place only while the page has fewer than `per_doc` chunks kept.
    `vectors` (unit rows): only pairs at cosine >= NEAR are compared by their words, and only their
    texts are read: most searches have none and read nothing. `twin_of`: a long document's chunk
    gives its place to the page it copies (module docstring); `doc_of` learns the pages it brings. `holds`: whether a
    document holds pages though under AGGREGATE_RATIO times a copy's (module docstring)."""
    window = list(ranked[: k * WINDOW + WINDOW])
    own = _own_pages(window, k, doc_of, doc_sizes, twin_of) if twin_of is not None else {}
    if own:                 # each page's chunk in the place of the copy, once; the copies after the rest
        seen = set(window)
        window = list(dict.fromkeys(own.get(c, c) for c in window))
        placed = seen | set(window)
        ranked = window + [c for c in ranked if c not in placed] + list(own)
    if len(window) < 2:
        return list(ranked)
    near = _near_pairs(window, doc_of, vectors)
    if not near:
        return list(ranked)
    text_of = texts(sorted({c for pair in near for c in pair}))
    shingled = {chunk_id: shingles(text) for chunk_id, text in text_of.items()}
    kept: list[int] = []
    moved: list[int] = []
    for chunk_id in window:
        if len(kept) == k:
            break
        mine = doc_of[chunk_id]
        twin = next((c for c in kept if (c, chunk_id) in near
                     and copies(shingled.get(c, frozenset()), shingled.get(chunk_id, frozenset()))), None)
        if twin is None:
            kept.append(chunk_id)
            continue
        theirs = doc_of[twin]
        mine_size, theirs_size = doc_sizes(mine), doc_sizes(theirs)
        if mine_size * AGGREGATE_RATIO <= theirs_size or \
                holds is not None and mine_size < theirs_size and holds(theirs):
            if per_doc <= 0 or sum(doc_of[c] == mine for c in kept) < per_doc:
                kept[kept.index(twin)] = chunk_id   # the page takes the place of the manual holding it
                moved.append(twin)
            else:
                moved.append(chunk_id)
        elif per_doc <= 0 or theirs_size * AGGREGATE_RATIO <= mine_size or \
                holds is not None and theirs_size < mine_size and holds(mine):
            moved.append(chunk_id)                  # passages: once is enough; pages: not the manual again
        else:
            kept.append(chunk_id)                   # two pages of their own that share a paragraph
    done = set(kept) | set(moved)
    return kept + moved + [c for c in ranked if c not in done]


def _own_pages(window: list[int], k: int, doc_of: dict[int, int], doc_sizes: Callable[[int], int],
               twin_of: Twins) -> dict[int, int]:
    """Chunk → the page's chunk it copies, for the long documents' chunks among the window's first k
    documents' (module docstring)."""
    found: dict[int, int] = {}
    cleared: set[int] = set()
    docs: set[int] = set()
    lookups = 0
    for chunk_id in window:
        doc = doc_of[chunk_id]
        docs.add(doc)
        if len(docs) > k or lookups == MAX_LOOKUPS:
            break
        if doc in cleared or doc_sizes(doc) < AGGREGATE_MIN_CHUNKS:
            continue
        lookups += 1
        twin = twin_of(chunk_id, doc)
        if twin is None:
            cleared.add(doc)
            continue
        found[chunk_id] = twin[0]
        doc_of[twin[0]] = twin[1]
    return found


def twin_finder(snapshot: Snapshot, nearest: Callable[[np.ndarray], np.ndarray],
                texts: Callable[[list[int]], dict[int, str]], searched: int) -> TwinFinder:
    """`distinct`'s twin_of (and `holds`) over a snapshot: `nearest` (a vector → the collection's nearest chunk
    ids, best first) proposes, the cosine and the words decide, as for the copies `distinct` compares. Answers
    are kept on the snapshot: a document whose first chunk looked up copies nothing is not looked up again.
    Only a document holding AGGREGATE_SHARE of the `searched` chunks (the collection's) is looked up."""
    return TwinFinder(snapshot, nearest, texts, max(AGGREGATE_MIN_CHUNKS, AGGREGATE_SHARE * searched))


class TwinFinder:
    """twin_finder's answer: called, a Twins; `holds`, whether a document holds pages (module docstring)."""

    def __init__(self, snapshot: Snapshot, nearest: Callable[[np.ndarray], np.ndarray],
                 texts: Callable[[list[int]], dict[int, str]], least: float) -> None:
        self.snapshot, self.nearest, self.texts, self.least = snapshot, nearest, texts, least
        self.asked = 0                      # documents asked `holds` by this search (at most HOLD_LOOKUPS)

    def __call__(self, chunk_id: int, doc: int) -> tuple[int, int] | None:
        snapshot = self.snapshot
        if snapshot.copies_pages.get(doc) is False or snapshot.doc_sizes.get(doc, 0) < self.least:
            return None
        if chunk_id not in snapshot.page_twins:
            snapshot.page_twins[chunk_id] = found = self.look_up(chunk_id, doc, AGGREGATE_RATIO)
            snapshot.copies_pages.setdefault(doc, found is not None)
        return snapshot.page_twins[chunk_id]

    def holds(self, doc: int) -> bool:
        """Whether `doc` holds pages: HOLD_SAMPLES of its chunks copy HOLD_PAGES or more smaller documents."""
        snapshot = self.snapshot
        if doc not in snapshot.holds_pages:
            if snapshot.doc_sizes.get(doc, 0) < self.least or self.asked == HOLD_LOOKUPS:
                return False                # as for twin_of: only a long document, a share of the collection
            self.asked += 1
            rows = np.flatnonzero(snapshot.doc_ids == doc)
            picked = rows[np.linspace(0, len(rows) - 1, HOLD_SAMPLES).astype(int)]
            found = {self.look_up(int(c), doc, 1) for c in snapshot.ids[picked].tolist()}
            snapshot.holds_pages[doc] = len({page[1] for page in found if page is not None}) >= HOLD_PAGES
        return snapshot.holds_pages[doc]

    def look_up(self, chunk_id: int, doc: int, ratio: float) -> tuple[int, int] | None:
        """The chunk of a document `ratio` times smaller or more than `doc` that `chunk_id` copies, or None."""
        snapshot = self.snapshot
        vector = snapshot.vectors_of([chunk_id])[0]
        ids = self.nearest(vector)
        docs = snapshot.doc_ids[snapshot.rows_of(ids)].tolist()
        sizes = snapshot.doc_sizes
        size = sizes.get(doc, 0)
        pages = [(c, d) for c, d in zip(ids.tolist(), docs)
                 if d != doc and (other := sizes.get(d, 0)) * ratio <= size and other < size]
        if not pages:
            return None
        cosines = snapshot.vectors_of([c for c, _ in pages]) @ vector
        close = [page for page, cosine in zip(pages, cosines.tolist()) if cosine >= NEAR][:3]
        if not close:
            return None
        text_of = self.texts([chunk_id, *(c for c, _ in close)])
        mine = shingles(text_of.get(chunk_id, ""))
        return next((page for page in close if copies(mine, shingles(text_of.get(page[0], "")))), None)


def _near_pairs(window: list[int], doc_of: dict[int, int],
                vectors: Callable[[list[int]], np.ndarray] | None) -> set[tuple[int, int]]:
    """(earlier, later) pairs of the window from two documents that could be copies: every such pair
    without `vectors`, else those at cosine >= NEAR."""
    if vectors is None:
        return {(a, b) for i, a in enumerate(window) for b in window[i + 1:] if doc_of[a] != doc_of[b]}
    matrix = vectors(window)
    close = np.argwhere(np.triu(matrix @ matrix.T, 1) >= NEAR)
    return {(window[i], window[j]) for i, j in close.tolist() if doc_of[window[i]] != doc_of[window[j]]}


def distinct_ranked(ranked: list[Ranked], k: int, doc_of: dict[int, int], snapshot: Snapshot,
                    texts: Callable[[list[int]], dict[int, str]], per_doc: int = 0,
                    twin_of: Twins | None = None) -> list[Ranked]:
    """`distinct` over ranking.rank()'s items, in the order it gives, with the snapshot's vectors. A page's
    chunk brought by `twin_of` carries the scores of the chunk whose place it takes."""
    by_id = {item.chunk_id: item for item in ranked}
    stands_for: dict[int, int] = {}         # a page's chunk brought by twin_of → the copy whose place it takes
    order = distinct(list(by_id), k, doc_of, lambda doc: snapshot.doc_sizes.get(doc, 0), texts, per_doc,
                     snapshot.vectors_of, _noting(twin_of, stands_for) if twin_of is not None else None,
                     twin_of.holds if isinstance(twin_of, TwinFinder) else None)
    return [by_id[c] if c in by_id else replace(by_id[stands_for[c]], chunk_id=c, copy_of=stands_for[c])
            for c in order]


def _noting(twin_of: Twins, stands_for: dict[int, int]) -> Twins:
    """`twin_of`, noting in `stands_for` each page's chunk it finds → the copy it was asked about."""
    def noted(chunk_id: int, doc: int) -> tuple[int, int] | None:
        found = twin_of(chunk_id, doc)
        if found is not None:
            stands_for.setdefault(found[0], chunk_id)
        return found
    return noted

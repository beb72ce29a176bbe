"""Exact top-k BM25 that reads the heads of the posting lists, not the whole lists.

At 1M chunks a query's posting lists hold ~10^6 entries (`tool` is in a third
of the benchmark's chunks), and scoring every entry was 18 ms of a 37 ms
search (benchmarks/results/scale_1000000_measure.md, before this module).
A chunk's BM25 score is a sum of per-term contributions ("impacts") that are
fixed for an index version, so each term's postings are ordered by impact
once, when the search files are written (`impact_order`; ann_sidecar.py keeps
it as `by_impact.npy`), and a query reads only what can still matter:

1. θ: the exact scores of the first `limit` postings (by impact, in the
   window) of every list; the limit-th best of them is ≤ the final
   limit-th best score, since they are real rows.
2. MaxScore: the lists whose upper bounds (their head's impact) sum to less
   than θ are non-essential: a row found only in them scores below θ.
3. A row scoring ≥ θ is in some essential list j with impact ≥ θ − (U − ub_j)
   (U: the upper bounds' sum), else its score is < θ: the candidates are
   those heads of the essential lists.
4. The candidates are scored exactly: every list looked up, contributions
   added in the query's order with the full walk's float64 expression, so
   scores are bit-for-bit the full walk's, and the best `limit` are chosen
   by the full walk's own selection (lexical.select_top): the same rows in
   the same order (tests/docindex/test_lexical_topk.py compares the two on
   randomized postings).

Where no θ > 0 is found (fewer than `limit` seeds in the window) it returns None
and the caller walks the lists.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np


class Postings(Protocol):
    """What this module reads of lexical.Lexical (a protocol, so the two modules do not import each other)."""

    @property
    def term_index(self) -> dict[str, int]: ...
    @property
    def offsets(self) -> np.ndarray: ...
    @property
    def rows(self) -> np.ndarray: ...
    @property
    def tf(self) -> np.ndarray: ...
    @property
    def norm(self) -> np.ndarray: ...
    @property
    def n_docs(self) -> int: ...
    @property
    def by_impact(self) -> np.ndarray | None: ...
    @property
    def impacts(self) -> np.ndarray | None: ...

K1 = 1.2
IDF_FLOOR = 1e-6          # FTS5 clamps a non-positive idf to this
_MARGIN = 1e-9            # bounds are lowered by this share: rounding can only add candidates
_SEARCH_COST = 8          # a binary search costs about this many sequential reads of a posting
# Reading a head's row and looking it up costs ~25 times walking a posting (numpy, 1M chunks):
# beyond this share of the lists' postings, walking them whole is cheaper.
WALK_SHARE = 0.04


def idf(n_docs: int, hits: int) -> float:
    """FTS5's idf, clamped at IDF_FLOOR."""
    value = math.log((n_docs - hits + 0.5) / (hits + 0.5))
    return value if value > 0 else IDF_FLOOR


def impact(weight: float, tf: np.ndarray, norm: np.ndarray) -> np.ndarray:
    """FTS5's per-term BM25 in float64: the one expression both paths use, so their sums are equal bit for bit."""
    out = np.asarray(tf).astype(np.float64)         # weight * tf * (K1 + 1) / (tf + norm), in place
    denominator = out + norm
    out *= weight
    out *= K1 + 1
    out /= denominator
    return out


@dataclass
class _List:
    """One query phrase's postings: rows ascending, their impacts, and the order by impact."""

    rows: np.ndarray                  # ascending rows
    impacts: Callable[[np.ndarray], np.ndarray]   # positions → impacts (the full walk's float64 values)
    order: np.ndarray                 # positions, impact descending
    lo: int                           # positions [lo, hi) are in the window
    hi: int
    upper: float                      # the largest impact

    def lookup(self, candidates: np.ndarray, slots: np.ndarray | None = None) -> np.ndarray:
        """The impact of each of `candidates` (distinct rows in the window) in this list; 0.0 where absent.
        `slots`: zeros, one per row up to the window's end (left zeroed): with many candidates the
        window's postings are read through it instead of binary searches."""
        out = np.zeros(len(candidates), dtype=np.float64)
        if self.hi == self.lo or not len(candidates):
            return out
        if slots is not None and len(candidates) * _SEARCH_COST > self.hi - self.lo:
            slots[candidates] = np.arange(1, len(candidates) + 1, dtype=slots.dtype)
            marks = slots[self.rows[self.lo:self.hi]]
            slots[candidates] = 0
            hits = np.flatnonzero(marks)
            out[marks[hits] - 1] = self.impacts(hits + self.lo)
            return out
        at = np.searchsorted(self.rows, candidates)
        found = at < len(self.rows)
        found[found] = self.rows[at[found]] == candidates[found]
        out[found] = self.impacts(at[found])
        return out

    def head(self, bound: float, depth: int, most: int) -> tuple[np.ndarray, np.ndarray, int]:
        """From position `depth` in impact order, at most `most` positions whose impact is ≥ bound:
        (their rows in the window, those rows' impacts, the new depth). The depth stops at the first
        impact below bound."""
        block = np.asarray(self.order[depth:depth + most])
        impacts = self.impacts(block)
        if bound > 0:
            taken = int(np.count_nonzero(impacts >= bound))   # impacts descend
            block, impacts = block[:taken], impacts[:taken]
        inside = (block >= self.lo) & (block < self.hi)
        return self.rows[block[inside]], impacts[inside], depth + len(block)

    def seeds(self, count: int) -> np.ndarray:
        """Rows of the first `count` positions by impact that are in the window."""
        positions = np.asarray(self.order[:count])
        rows: np.ndarray = self.rows[positions[(positions >= self.lo) & (positions < self.hi)]]
        return rows


def token_list(lex: Postings, token: str, start: int, end: int) -> _List | None:
    """The impact-ordered list of a single-token phrase (None: the token has no postings)."""
    assert lex.by_impact is not None
    t = lex.term_index.get(token)
    if t is None:
        return None
    a, b = int(lex.offsets[t]), int(lex.offsets[t + 1])
    if a == b:
        return None
    rows, tf_all, norm = lex.rows[a:b], lex.tf[a:b], lex.norm
    weight = idf(lex.n_docs, b - a)
    stored = lex.impacts[a:b] if lex.impacts is not None else None

    def impacts(positions: np.ndarray) -> np.ndarray:
        if stored is not None:
            values: np.ndarray = stored[positions]
            return values
        return impact(weight, tf_all[positions], norm[rows[positions]])

    order = lex.by_impact[a:b]
    lo, hi = np.searchsorted(rows, [start, end])
    return _List(rows, impacts, order, int(lo), int(hi), float(impacts(np.asarray(order[:1]))[0]))


def phrase_list(rows: np.ndarray, values: np.ndarray, start: int, end: int) -> _List | None:
    """A multi-token phrase's (rows, scores) from FTS5 as a list (None: no rows)."""
    if not len(rows):
        return None
    by_row = np.argsort(rows, kind="stable")
    rows, values = rows[by_row], np.asarray(values, dtype=np.float64)[by_row]
    order = np.argsort(-values, kind="stable")
    lo, hi = np.searchsorted(rows, [start, end])
    return _List(rows, lambda positions: values[positions], order, int(lo), int(hi), float(values[order[0]]))


def top_rows(lists: list[_List], limit: int, start: int, end: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(rows, exact scores) that hold every row of [start, end) scoring ≥ the limit-th best there.
    None when no θ > 0 is found, or when the rows to read pass WALK_SHARE of the lists' (walking is cheaper)."""
    seeds = np.unique(np.concatenate([lst.seeds(limit) for lst in lists]))
    if len(seeds) < limit:
        return None
    rows, scores = seeds, exact_scores(lists, seeds)
    seen = np.zeros(end, dtype=bool)              # by row (rows below start stay unused)
    seen[seeds] = True
    slots = np.zeros(end, dtype=np.int32)
    depth = [0] * len(lists)
    budget, read = WALK_SHARE * sum(lst.hi - lst.lo for lst in lists), 0
    by_upper = sorted(range(len(lists)), key=lambda i: -lists[i].upper)
    total = sum(lst.upper for lst in lists)
    while True:
        theta = float(np.partition(scores, len(scores) - limit)[len(scores) - limit])
        if theta <= 0:
            return None
        bound = theta * (1 - _MARGIN)
        # The essential lists: all but those of the lowest bounds that sum to less than θ. The one
        # of the highest bound with a head left to read is read whole; θ rises, the rest shrink.
        essential, non_essential = [], 0.0
        for j in reversed(by_upper):
            if non_essential + lists[j].upper < bound:
                non_essential += lists[j].upper
            else:
                essential.append(j)
        for j in reversed(essential):
            head_bound = bound - (total - lists[j].upper)
            if head_bound <= 0 and read + len(lists[j].order) - depth[j] > budget:
                return None                    # the rest of a whole list to read: walking is cheaper
            found, impacts, reached = lists[j].head(head_bound, depth[j], len(lists[j].order))
            if reached > depth[j]:
                break
        else:
            return rows, scores                # every essential head is read
        read += reached - depth[j]
        depth[j] = reached
        if read > budget:
            return None
        new = ~seen[found]
        found = found[new]
        seen[found] = True
        found, found_scores = _score_pruned(lists, j, by_upper, found, impacts[new], total, bound, slots)
        rows, scores = np.concatenate([rows, found]), np.concatenate([scores, found_scores])


def _score_pruned(lists: list[_List], source: int, by_upper: list[int], rows: np.ndarray, impacts: np.ndarray,
                  total: float, bound: float, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, exact scores) of those of `rows` (from list `source`, with these `impacts` there) that can
    reach `bound`: lists are looked up highest bound first, and a row goes once its contributions so far
    plus the bounds of the lists not yet looked up stay below it (MaxScore). The kept rows' scores add
    their contributions in the query's order, as the full walk does."""
    contributions = {source: impacts}
    remaining = total - lists[source].upper
    for j in [source] + [i for i in by_upper if i != source]:
        if j != source:
            contributions[j] = lists[j].lookup(rows, slots)
            remaining -= lists[j].upper
        reach = np.full(len(rows), remaining)
        for values in contributions.values():
            reach += values
        keep = reach >= bound
        if not keep.all():
            rows = rows[keep]
            contributions = {i: values[keep] for i, values in contributions.items()}
    scores = np.zeros(len(rows), dtype=np.float64)
    for i in range(len(lists)):
        scores += contributions[i]
    return rows, scores


def exact_scores(lists: list[_List], rows: np.ndarray) -> np.ndarray:
    """Scores of sorted `rows`: contributions added in the query's order, as the full walk adds them."""
    scores = np.zeros(len(rows), dtype=np.float64)
    for lst in lists:
        scores += lst.lookup(rows)
    return scores


def posting_impacts(lex: Postings) -> np.ndarray:
    """Every posting's BM25 contribution, float64, term by term: the values the walk would compute per query
    (the same expression on the same inputs). Written with the search files (ann_sidecar.py): at 1M chunks
    computing them was ~7 of a query's ~10 ms of BM25 on the AVX2 VM (stop 50, /tmp profile)."""
    out = np.zeros(len(lex.rows), dtype=np.float64)
    offsets = np.asarray(lex.offsets)
    for t in np.flatnonzero(np.diff(offsets) > 0).tolist():
        a, b = int(offsets[t]), int(offsets[t + 1])
        out[a:b] = impact(idf(lex.n_docs, b - a), lex.tf[a:b], lex.norm[lex.rows[a:b]])
    return out


def impact_order(lex: Postings, impacts: np.ndarray | None = None) -> np.ndarray:
    """Per term, its postings' positions (from the term's first) by impact, descending (ties: position).
    int32: a term has fewer than 2^31 postings. Written with the search files (ann_sidecar.py).
    `impacts`: posting_impacts(lex) when the caller has them."""
    values = posting_impacts(lex) if impacts is None else impacts
    out = np.zeros(len(lex.rows), dtype=np.int32)
    offsets = np.asarray(lex.offsets)
    lengths = np.diff(offsets)
    for t in np.flatnonzero(lengths > 1).tolist():
        a, b = int(offsets[t]), int(offsets[t + 1])
        out[a:b] = np.argsort(-values[a:b], kind="stable")
    return out

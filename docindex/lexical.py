"""BM25 over FTS5's own postings, scored in memory with numpy.

`SELECT … ORDER BY bm25(chunks_fts)` makes FTS5 score every row that matches
any term of an OR query before it can sort: 11.9 ms P50 at 20k chunks for the
benchmark questions (benchmarks/results/docindex_search_latency.md, before
this module), most of a search. The postings themselves are small (6 bytes
per (term, chunk)), so they are read once per index version through
`fts5vocab` and scored here:

- tokens are FTS5's own (porter, unicode61, diacritics): the index's
  postings come from `fts5vocab`, and a query term is tokenized by a temp
  FTS5 table with the same tokenizer, so both sides always agree;
- the formula and constants are FTS5's `bm25()` (k1 1.2, b 0.75, idf
  clamped at 1e-6, avgdl over all rows, N and hit counts over all
  collections), computed in double precision like FTS5's, so scores equal
  FTS5's for single-token terms; equal scores rank by ascending chunk id, as
  FTS5 returns them (tests/docindex/test_lexical.py compares both);
- a term FTS5 splits into several tokens (`max_ongoing_requests`) is a
  phrase: postings carry no positions, so its rows and scores come from FTS5
  itself (a MATCH on that phrase alone: adjacent tokens are selective, so it
  is cheap), and the ranking equals FTS5's for every query.

Memory: ~6 bytes per distinct (term, chunk) pair + 4 bytes per chunk
(20k chunks ≈ 8 MB). Loading reads every token instance once: 0.3 s at 20k.
"""
from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import lexical_topk
from .lexical_topk import IDF_FLOOR as IDF_FLOOR  # both re-exported
from .lexical_topk import K1 as K1
from .lexical_topk import idf, impact
from .phrase_postings import EMPTY as EMPTY_PHRASES
from .phrase_postings import PhrasePostings
from .store import FTS_TOKENIZE
from .textsearch import index_text

B = 0.75
_TOKEN_CACHE_MAX = 8192   # query terms → tokens; cleared when full
# With impact-ordered postings (search files), a query whose single-token lists hold more postings
# than this reads their heads (lexical_topk.py); None: every query walks them. Off: on the scale
# benchmark's postings at ~1M rows the heads cost more than the bincount walk (P50 15.3 vs 13.5
# CPU-ms, benchmarks/results/bm25_paths_*.md): its rare terms' whole lists are the heads to read.
EARLY_STOP_MIN_POSTINGS: int | None = None
_SELECT_BLOCK = 256       # rows per block when bounding the limit-th best score (select_top_of_all)


def prepare_connection(conn: sqlite3.Connection) -> None:
    """Temp tables (this connection only; nothing is written to the index file):
    a view of the index's token instances, and a scratch FTS5 table that
    tokenizes query terms exactly as the index was tokenized."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_instances "
                 "USING fts5vocab(main, chunks_fts, instance)")
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_scratch "
                 f"USING fts5(body, tokenize = '{FTS_TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_scratch_tokens "
                 "USING fts5vocab(temp, lexical_scratch, instance)")
    # The fields of each chunk (document title, heading path, file path), rebuilt per index version.
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_fields "
                 f"USING fts5(body, tokenize = '{FTS_TOKENIZE}')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.lexical_field_instances "
                 "USING fts5vocab(temp, lexical_fields, instance)")


@dataclass(frozen=True)
class Lexical:
    """Postings of one index version, by snapshot row (not chunk id)."""

    term_index: dict[str, int]
    offsets: np.ndarray        # (terms + 1,) int64: term t's postings are [offsets[t], offsets[t+1])
    rows: np.ndarray           # int32 snapshot rows, ascending within a term
    tf: np.ndarray             # float32 occurrences of the term in the row
    norm: np.ndarray           # float64 per row: k1 * (1 - b + b * len / avglen)
    n_docs: int                # FTS5's row count (idf uses it)
    chunk_ids: np.ndarray      # int64 chunk id per row (ties rank by it)
    by_impact: np.ndarray | None = None   # int32 per posting: each term's positions by impact (lexical_topk.py)
    phrases: PhrasePostings = EMPTY_PHRASES   # FTS5's BM25 of the common phrases (search files only)
    impacts: np.ndarray | None = None     # float64 per posting: its term's BM25 contribution (search files only)

    @classmethod
    def load(cls, conn: sqlite3.Connection, chunk_ids: np.ndarray,
             rows_of: Callable[[np.ndarray], np.ndarray], *,
             instances: str = "temp.lexical_instances") -> Lexical:
        """Inside the caller's read transaction. `chunk_ids` are the snapshot's
        rows; `rows_of` maps chunk ids to them (-1: none, and the FTS5 row is dropped).
        `instances`: the fts5vocab instance table to read (the chunks' or the fields')."""
        terms: list[str] = []
        counts: list[int] = []
        joined: list[str] = []
        for term, count, docs in conn.execute(
                f"SELECT term, count(*), group_concat(doc, ' ') FROM {instances} GROUP BY term"):
            terms.append(term)
            counts.append(count)
            joined.append(docs)
        n_docs = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        n_rows = len(chunk_ids)
        if not terms or not n_rows:
            return cls({}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32),
                       np.full(n_rows, K1, np.float64), n_docs, chunk_ids)
        # Parsed in C: a Python list of every instance would cost ~50 bytes each.
        docs = np.fromstring(" ".join(joined), dtype=np.int64, sep=" ")
        if len(docs) != sum(counts):
            raise ValueError("fts5vocab postings did not parse")
        term_of = np.repeat(np.arange(len(terms), dtype=np.int32), counts)
        rows = rows_of(docs)
        lengths = np.bincount(rows[rows >= 0], minlength=n_rows).astype(np.float32)
        keep = rows >= 0
        term_of, rows = term_of[keep], rows[keep]
        order = np.lexsort((rows, term_of))            # group_concat's order is not guaranteed
        term_of, rows = term_of[order], rows[order]
        starts = np.flatnonzero(np.r_[True, (term_of[1:] != term_of[:-1]) | (rows[1:] != rows[:-1])])
        tf = np.diff(np.r_[starts, len(rows)]).astype(np.float32)
        term_of, rows = term_of[starts], rows[starts].astype(np.int32)
        offsets = np.searchsorted(term_of, np.arange(len(terms) + 1)).astype(np.int64)
        # FTS5's avgdl: all tokens over all rows (the table's totals, not one collection's)
        total_tokens = float(sum(counts))
        avg = total_tokens / n_docs if n_docs else 1.0
        norm = K1 * (1 - B + B * lengths.astype(np.float64) / max(avg, 1e-9))
        return cls({t: i for i, t in enumerate(terms)}, offsets, rows, tf, norm, n_docs, chunk_ids)

    def postings(self, token: str) -> tuple[np.ndarray, np.ndarray]:
        t = self.term_index.get(token)
        if t is None:
            return self.rows[:0], self.tf[:0]
        a, b = self.offsets[t], self.offsets[t + 1]
        return self.rows[a:b], self.tf[a:b]

    def unseen(self, phrases: list[tuple[str, ...]], start: int, end: int) -> list[int]:
        """Indexes of the phrases with a token no row start..end (one collection's) holds: words the collection
        never uses. The Gate weighs a question that names one (deployments/gate_rule.py)."""
        out = []
        for i, phrase in enumerate(phrases):
            for token in phrase:
                rows, _ = self.postings(token)
                at = int(np.searchsorted(rows, start))
                if at == len(rows) or rows[at] >= end:
                    out.append(i)
                    break
        return out

    def impacts_of(self, token: str, lo: int, hi: int, tf: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The BM25 contributions of `token`'s postings lo..hi (their `tf` and `rows` given): read from the
        search files where they were written with them (`impacts`), else computed; the same float64 values."""
        t = self.term_index[token]
        first = int(self.offsets[t])
        if self.impacts is not None:
            stored: np.ndarray = self.impacts[first + lo:first + hi]
            return stored
        return impact(idf(self.n_docs, int(self.offsets[t + 1]) - first), tf, self.norm[rows])

    def scores(self, phrases: list[tuple[str, ...]], start: int, end: int, limit: int,
               phrase_scores: Callable[[int], tuple[np.ndarray, np.ndarray]],
               *, early_stop_min: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(rows, scores) of the best `limit` rows in [start, end) matching any
        phrase, best first (equal scores: ascending chunk id); scores positive
        (FTS5's bm25() negated). `phrase_scores(i)` returns (rows, scores)
        for the multi-token phrase `phrases[i]`, from FTS5. With impact-ordered
        postings and more than `early_stop_min` postings (default EARLY_STOP_MIN_POSTINGS;
        None: never) only the lists' heads are read (lexical_topk.py): the same rows and scores."""
        fts5: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def phrase(i: int) -> tuple[np.ndarray, np.ndarray]:
            if i not in fts5:
                fts5[i] = phrase_scores(i)
            return fts5[i]

        least = EARLY_STOP_MIN_POSTINGS if early_stop_min is None else early_stop_min
        if limit > 0 and self.by_impact is not None and least is not None:
            if sum(len(self.postings(p[0])[0]) for p in phrases if len(p) == 1) > least:
                found = self._top(phrases, start, end, limit, phrase)
                if found is not None:
                    return found
        # Every list's (row, impact) pairs, summed per row by one bincount in the query's order:
        # the same float64 additions as adding list after list, without a scatter per list.
        offsets: list[np.ndarray] = []
        values: list[np.ndarray] = []
        for i, tokens in enumerate(phrases):
            if not tokens:
                continue
            if len(tokens) > 1:
                rows, scores = phrase(i)
                inside = (rows >= start) & (rows < end)
                offsets.append(rows[inside] - start)
                values.append(np.asarray(scores[inside], dtype=np.float64))
                continue
            rows, tf = self.postings(tokens[0])
            if not len(rows):
                continue
            lo, hi = np.searchsorted(rows, [start, end])     # rows ascend within a term
            offsets.append(rows[lo:hi] - start if start else rows[lo:hi])
            values.append(self.impacts_of(tokens[0], lo, hi, tf[lo:hi], rows[lo:hi]))
        if not offsets:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        acc = np.bincount(np.concatenate(offsets), weights=np.concatenate(values), minlength=end - start)
        return select_top_of_all(acc, start, self.chunk_ids[start:end], limit)

    def _top(self, phrases: list[tuple[str, ...]], start: int, end: int, limit: int,
             phrase: Callable[[int], tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray] | None:
        """scores() by the lists' heads; None where no threshold is found (the caller walks them)."""
        lists = []
        for i, tokens in enumerate(phrases):
            if not tokens:
                continue
            listed = lexical_topk.token_list(self, tokens[0], start, end) if len(tokens) == 1 \
                else lexical_topk.phrase_list(*phrase(i), start, end)
            if listed is not None:
                lists.append(listed)
        if not lists:
            return None
        found = lexical_topk.top_rows(lists, limit, start, end)
        if found is None:
            return None
        rows, scores = found
        return select_top(rows, scores, self.chunk_ids[rows], limit)

    def coverage(self, phrases: list[tuple[str, ...]], rows: np.ndarray) -> np.ndarray:
        """Per row: the idf-weighted share of the query's tokens that occur in it, in [0, 1].
        A token the index has never seen weighs most (idf of a zero-hit term), so a question
        about something the collection does not mention scores low wherever it looks."""
        tokens = list(dict.fromkeys(t for phrase in phrases for t in phrase))
        if not tokens or not len(rows):
            return np.zeros(len(rows), dtype=np.float64)
        found = np.zeros(len(rows), dtype=np.float64)
        total = 0.0
        for token in tokens:
            posting_rows, _ = self.postings(token)
            hits = len(posting_rows)
            weight = idf(self.n_docs, hits)
            total += weight
            if hits:
                at = np.clip(np.searchsorted(posting_rows, rows), 0, hits - 1)
                found += weight * (posting_rows[at] == rows)
        return found / total


def select_top(rows: np.ndarray, scores: np.ndarray, ids: np.ndarray,
               limit: int) -> tuple[np.ndarray, np.ndarray]:
    """The best `limit` of `rows` with a positive score, best first (equal scores: ascending
    chunk id `ids`): the same rows in the same order whatever order they come in."""
    matched = np.flatnonzero(scores > 0)
    if len(matched) > limit:
        # Everything above the limit-th score, then its ties by chunk id: the
        # same set whatever order the rows are in (argpartition alone is not).
        values = scores[matched]
        kth = np.partition(values, len(values) - limit)[len(values) - limit]
        ties = matched[values == kth]
        above = matched[values > kth]
        ties = ties[np.argsort(ids[ties], kind="stable")][: limit - len(above)]
        matched = np.concatenate([above, ties])
    matched = matched[np.lexsort((ids[matched], -scores[matched]))]
    return rows[matched], scores[matched]


def select_top_of_all(acc: np.ndarray, start: int, ids: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """select_top over rows start.. with scores `acc`, reading only the rows scoring at least the
    limit-th best of the blocks' maxima (≤ the limit-th best score: `limit` blocks hold a score ≥ it)."""
    blocks = len(acc) // _SELECT_BLOCK
    if blocks > 4 * limit:
        maxima = acc[: blocks * _SELECT_BLOCK].reshape(blocks, _SELECT_BLOCK).max(axis=1)
        floor = np.partition(maxima, blocks - limit)[blocks - limit]
        if floor > 0:
            rows = np.flatnonzero(acc >= floor)
            return select_top(rows + start, acc[rows], ids[rows], limit)
    return select_top(np.arange(start, start + len(acc)), acc, ids, limit)


class QueryTokenizer:
    """Query terms → FTS5 tokens, via the connection's scratch FTS5 table (cached)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[str, ...]] = {}

    def tokens(self, conn: sqlite3.Connection, terms: list[str]) -> list[tuple[str, ...]]:
        missing = [t for t in dict.fromkeys(terms) if t not in self._cache]
        if missing:
            if len(self._cache) + len(missing) > _TOKEN_CACHE_MAX:
                self._cache.clear()
            conn.execute("DELETE FROM temp.lexical_scratch")
            conn.executemany("INSERT INTO temp.lexical_scratch(rowid, body) VALUES (?, ?)",
                             list(enumerate(missing, start=1)))
            found: dict[int, list[tuple[int, str]]] = {}
            for doc, term, offset in conn.execute(
                    "SELECT doc, term, offset FROM temp.lexical_scratch_tokens"):
                found.setdefault(doc, []).append((offset, term))
            conn.execute("DELETE FROM temp.lexical_scratch")
            for i, term in enumerate(missing, start=1):
                self._cache[term] = tuple(token for _, token in sorted(found.get(i, [])))
        return [self._cache[t] for t in terms]


FIELDS_TABLE = "temp.lexical_fields"


def load_fields(conn: sqlite3.Connection, chunk_ids: np.ndarray,
                rows_of: Callable[[np.ndarray], np.ndarray]) -> Lexical:
    """Inside the caller's read transaction: postings of each chunk's fields (document title,
    the headings under it, file path; no body), in a temp FTS5 table rebuilt per index version."""
    conn.execute(f"DELETE FROM {FIELDS_TABLE}")
    rows = conn.execute("SELECT c.id, d.title, c.heading_path, d.source FROM chunks c "
                        "JOIN documents d ON d.id = c.doc_id")
    conn.executemany(f"INSERT INTO {FIELDS_TABLE}(rowid, body) VALUES (?, ?)",
                     ((chunk_id, _field_text(title, path, source)) for chunk_id, title, path, source in rows))
    return Lexical.load(conn, chunk_ids, rows_of, instances="temp.lexical_field_instances")


def _field_text(title: str, path_json: str, source: str) -> str:
    headings = [h for h in json.loads(path_json) if h != title]
    return index_text("\n".join([title, *headings, source]))

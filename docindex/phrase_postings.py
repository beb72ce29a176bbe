"""FTS5's BM25 of common phrases, computed once per index version and kept with the search files.

A query term FTS5 splits into several tokens (`crag_search`, `max_ongoing_requests`) is a
phrase, and the in-memory postings carry no positions, so its rows and scores come from
FTS5 itself (lexical.py; `Index._phrase_scores`). That is cheap while the phrase is rare,
and slow when it is not: on the 1M-chunk scale index `crag_search` matches 34,098 rows and
FTS5's `bm25()` takes 83 ms for them, which alone set the MCP round trip's P95
(KNOWN_LIMITATIONS.md, "A million chunks").

Only an identifier with an underscore becomes a phrase (query_terms keeps `\\w+`, FTS5
splits at "_"), so the candidates are the index's own such identifiers. The search files'
writer (ann_build.py) finds them in the chunk texts, keeps those whose phrase matches at
least `MIN_ROWS` rows, and stores FTS5's own (rows, -bm25) for each, queried inside the
ingest transaction: the same statement a reader would run against the same rows, so the
scores are FTS5's to the bit. A reader takes a phrase from here when it is stored and asks
FTS5 otherwise (a rare phrase, or an identifier the documents do not contain).

On the 1M-chunk scale index (benchmarks/results/phrase_postings_cost.md): 570 identifiers,
339 phrases of ≥ 2,000 rows stored (2.5 M rows, 30 MB), ~25 s of build; `crag search` from the
files in 0.07 ms against 49 ms from FTS5, `cmcp client` (116,610 rows) 0.2 against 181 ms.
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .textsearch import match_expression

MIN_ROWS = 2000
"""A phrase matching fewer rows is left to FTS5 at query time (~5 ms or less at 1M chunks)."""
_IDENTIFIER = re.compile(r"\b[^\W_]*+_\w*")   # a \w+ run holding "_" (possessive: no backtracking)
_BATCH = 4096
_FILES = ("phrase_offsets", "phrase_rows", "phrase_values")


@dataclass(frozen=True)
class PhrasePostings:
    """(rows, FTS5 BM25) of each stored phrase, by its FTS5 tokens."""

    index: dict[tuple[str, ...], int]
    offsets: np.ndarray     # (phrases + 1,) int64
    rows: np.ndarray        # int32 snapshot rows, FTS5's order (ascending chunk id)
    values: np.ndarray      # float64: -bm25(), FTS5's own

    def get(self, tokens: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray] | None:
        i = self.index.get(tokens)
        if i is None:
            return None
        a, b = int(self.offsets[i]), int(self.offsets[i + 1])
        return np.asarray(self.rows[a:b], dtype=np.int64), np.asarray(self.values[a:b])


EMPTY = PhrasePostings({}, np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float64))


def fts5_scores(conn: sqlite3.Connection, term: str, rows_of: Callable[[np.ndarray], np.ndarray],
                table: str = "chunks_fts") -> tuple[np.ndarray, np.ndarray]:
    """FTS5's own BM25 of one multi-token term (a phrase) in `table`, as (rows, scores) of the rows
    `rows_of` maps (chunk ids to snapshot rows; -1: not in the snapshot, dropped)."""
    name = table.rsplit(".", 1)[-1]
    found = conn.execute(f"SELECT rowid, -bm25({name}) FROM {table} WHERE {name} MATCH ?",
                         (match_expression([term]),)).fetchall()
    rows = rows_of(np.array([row[0] for row in found], dtype=np.int64))
    values = np.array([row[1] for row in found], dtype=np.float64)
    present = rows >= 0
    return rows[present], values[present]


def identifiers(conn: sqlite3.Connection) -> list[str]:
    """Every lower-cased `\\w+` run with an underscore in the chunk texts, sorted."""
    found: set[str] = set()
    cursor = conn.execute("SELECT text FROM chunks WHERE instr(text, '_') > 0")
    while batch := cursor.fetchmany(_BATCH):
        found.update(_IDENTIFIER.findall("\n".join(row[0] for row in batch).lower()))
    return sorted(found)


def build(conn: sqlite3.Connection, tokens_of: Callable[[list[str]], list[tuple[str, ...]]],
          postings_count: Callable[[str], int], rows_of: Callable[[np.ndarray], np.ndarray],
          min_rows: int | None = None) -> PhrasePostings:
    """Inside the writer's transaction: the phrases of the index's identifiers that match at least
    `min_rows` rows (default MIN_ROWS), each with FTS5's rows and scores. `tokens_of` tokenizes terms
    as queries are; `postings_count(token)` bounds a phrase's rows (its rarest token's rows);
    `rows_of` maps chunk ids to snapshot rows."""
    least = MIN_ROWS if min_rows is None else min_rows
    terms = identifiers(conn)
    phrases: dict[tuple[str, ...], str] = {}
    for term, tokens in zip(terms, tokens_of(terms)):
        if len(tokens) > 1 and tokens not in phrases and min(map(postings_count, tokens)) >= least:
            phrases[tokens] = term
    index: dict[tuple[str, ...], int] = {}
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for tokens, term in phrases.items():
        rows, values = fts5_scores(conn, term, rows_of)
        if len(rows) >= least:
            index[tokens] = len(parts)
            parts.append((rows.astype(np.int32), values))
    if not parts:
        return EMPTY
    offsets = np.r_[0, np.cumsum([len(r) for r, _ in parts])].astype(np.int64)
    return PhrasePostings(index, offsets, np.concatenate([r for r, _ in parts]),
                          np.concatenate([v for _, v in parts]))


def save(table: PhrasePostings, folder: Path) -> None:
    (folder / "phrases.json").write_text(json.dumps(
        [list(tokens) for tokens in sorted(table.index, key=table.index.__getitem__)], ensure_ascii=False))
    for name, array in zip(_FILES, (table.offsets, table.rows, table.values)):
        np.save(folder / f"{name}.npy", np.ascontiguousarray(array))


def load(folder: Path, n_rows: int) -> PhrasePostings:
    """Memory-mapped; files written before phrases were stored have none (EMPTY: FTS5 for every phrase)."""
    if not (folder / "phrases.json").is_file():
        return EMPTY
    keys = [tuple(tokens) for tokens in json.loads((folder / "phrases.json").read_text())]
    offsets, rows, values = (np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False) for name in _FILES)
    if len(offsets) != len(keys) + 1 or len(rows) != len(values) or (len(offsets) and offsets[-1] != len(rows)):
        raise ValueError("the phrase postings do not fit together")
    if len(rows) and int(np.max(rows)) >= n_rows:
        raise ValueError("the phrase postings' rows are not the index's")
    return PhrasePostings({k: i for i, k in enumerate(keys)}, offsets, rows, values)

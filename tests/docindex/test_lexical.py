"""In-memory BM25 (docindex/lexical.py) against FTS5's own bm25(): the same
candidates in the same order (ties by chunk id) and the same scores, split
terms (phrases) included; collections and hot reload respected."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from docindex import lexical
from docindex.index import CANDIDATES, Index
from docindex.ingest import ingest
from docindex.textsearch import match_expression, query_terms

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = [json.loads(line)["query"] for line in
             (REPO / "benchmarks/data/docindex_cmcp_queries.jsonl").read_text().splitlines() if line.strip()]


def fts5_bm25(index: Index, terms: list[str], collection: str | None = None,
              limit: int = -1) -> dict[int, float]:
    sql = "SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?"
    params: list = [match_expression(terms)]
    if collection:
        sql += " AND collection = ?"
        params.append(collection)
    return dict(index._conn.execute(sql + " ORDER BY bm25(chunks_fts) LIMIT ?", params + [limit]).fetchall())


def memory_bm25(index: Index, terms: list[str], collection: str | None = None,
                limit: int = 10**9) -> dict[int, float]:
    snapshot = index._snapshot
    start, end = snapshot.slices[collection] if collection else (0, len(snapshot.ids))
    rows, values = snapshot.lexical.scores(index._tokenizer.tokens(index._conn, terms), start, end, limit,
                                           lambda i: index._phrase_scores(terms[i], snapshot))
    return dict(zip(snapshot.ids[rows].tolist(), values.tolist()))


def test_scores_equal_fts5_on_the_benchmark_questions(cmcp_index: Path) -> None:
    assert len(QUESTIONS) >= 20
    with Index(cmcp_index) as index:
        for question in QUESTIONS:
            terms = query_terms(question)
            single = [t for t in terms if len(index._tokenizer.tokens(index._conn, [t])[0]) == 1]
            expected, got = fts5_bm25(index, single), memory_bm25(index, single)
            assert expected.keys() == got.keys(), question
            for chunk_id, score in expected.items():
                assert got[chunk_id] == pytest.approx(score, rel=1e-4, abs=1e-5), question


def test_the_candidates_are_fts5s_in_fts5s_order_split_terms_included(cmcp_index: Path) -> None:
    questions = QUESTIONS + ["bump CMCP_PROTOCOL_VERSION", "crag_search fusion score", "max_ongoing_requests"]
    with Index(cmcp_index) as index:
        for question in questions:
            terms = query_terms(question)
            expected = fts5_bm25(index, terms, limit=CANDIDATES)
            got = memory_bm25(index, terms, limit=CANDIDATES)
            assert list(got) == list(expected), question
            assert list(got.values()) == pytest.approx(list(expected.values()), rel=1e-9), question


def test_query_terms_are_tokenized_as_fts5_tokenizes_the_index(cmcp_index: Path) -> None:
    with Index(cmcp_index) as index:
        tokens = index._tokenizer.tokens(index._conn, ["max_ongoing_requests", "Ray.Serve", "naïve"])
        assert tokens == [("max", "ongo", "request"), ("rai", "serv"), ("naiv",)]   # porter + unicode61
        for term in ["crag_search", "cmcp_protocol_version"]:                       # phrases, from FTS5
            assert memory_bm25(index, [term]) == pytest.approx(fts5_bm25(index, [term]), rel=1e-9)


def test_collection_filter_and_cjk(salon_index: Path) -> None:
    with Index(salon_index) as index:
        for question in ["染发前需要做皮肤测试吗", "会员卡可以退款吗"]:
            terms = query_terms(question)
            expected, got = fts5_bm25(index, terms, "salon"), memory_bm25(index, terms, "salon")
            assert expected and list(expected) == list(got)


def test_a_new_ingest_is_searchable_after_reload(tmp_path: Path, fake_embedder) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe zebrafish swims.\n")
    db = tmp_path / "i.db"
    ingest([docs], db, "c", embedder=fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        assert index.search("quokka", k=3, mode="bm25") == []
        (docs / "b.md").write_text("# Beta\n\nA quokka smiles at the zebrafish.\n")
        ingest([docs], db, "c", embedder=fake_embedder)
        hits = index.search("quokka", k=3, mode="bm25")
        assert [h.source for h in hits] == ["b.md"] and hits[0].bm25 > 0
        assert {h.source for h in index.search("zebrafish", k=3, mode="bm25")} == {"a.md", "b.md"}


def test_an_index_with_no_chunks_scores_nothing(tmp_path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(body, collection UNINDEXED)")
    conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY)")
    lexical.prepare_connection(conn)
    import numpy as np

    lex = lexical.Lexical.load(conn, np.zeros(0, np.int64), lambda ids: np.full(len(ids), -1))
    rows, values = lex.scores([("anything",)], 0, 0, 10, lambda i: (np.zeros(0, np.int64), np.zeros(0)))
    assert len(rows) == 0 and len(values) == 0

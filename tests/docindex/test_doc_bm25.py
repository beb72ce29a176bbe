"""Whole-document BM25 (docindex/doclexical.py) and its place in the ranking.

The document postings are the chunks' postings summed per document, so their
scores must equal FTS5's own bm25() over one row per document holding all its
chunks' indexed text; search fuses that ranking in and every hit says so.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from docindex import doclexical
from docindex.index import Index
from docindex.ingest import ingest
from docindex.ranking import Ranking, fuse_documents
from docindex.store import FTS_TOKENIZE
from docindex.textsearch import match_expression, query_terms

from .conftest import write_files

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = [json.loads(line)["query"] for line in
             (REPO / "benchmarks/data/docindex_cmcp_queries.jsonl").read_text().splitlines() if line.strip()]


def _single_words(question: str) -> list[str]:
    """The question's terms, a term FTS5 would split (`max_ongoing_requests`) given as its words."""
    return list(dict.fromkeys(w for term in query_terms(question) for w in re.findall(r"[^\W_]+", term)))


def test_document_scores_equal_fts5_over_whole_documents(cmcp_index: Path) -> None:
    with Index(cmcp_index) as index:
        conn = index._conn
        conn.execute(f"CREATE VIRTUAL TABLE temp.whole_docs USING fts5(body, tokenize = '{FTS_TOKENIZE}')")
        conn.execute("INSERT INTO temp.whole_docs(rowid, body) SELECT c.doc_id, group_concat(f.body, ' ') "
                     "FROM chunks c JOIN chunks_fts f ON f.rowid = c.id GROUP BY c.doc_id")
        index.refresh()
        snapshot = index._snapshot
        postings = snapshot.document_postings()
        start, end = snapshot.slices["cmcp"]
        for question in QUESTIONS:
            words = _single_words(question)
            expected = conn.execute(
                "SELECT rowid, -bm25(whole_docs) FROM temp.whole_docs WHERE whole_docs MATCH ? "
                "ORDER BY bm25(whole_docs), rowid LIMIT 20", (match_expression(words),)).fetchall()
            docs, scores = postings.rank(index._tokenizer.tokens(conn, words), start, end, 20)
            assert docs.tolist() == [doc for doc, _ in expected], question
            assert scores == pytest.approx([score for _, score in expected], rel=1e-9), question


@pytest.fixture
def spread_index(tmp_path, fake_embedder):
    """`walrus.md` names the three words in three sections, never together; `tusk.md` has one, twice."""
    root = write_files(tmp_path / "docs", {
        "walrus.md": "# Walrus\n\n## Habitat\n\nThe walrus lives on arctic ice floes near the coast.\n\n"
                     "## Food\n\nIt eats clams found on the sea floor, many thousands a day.\n\n"
                     "## Body\n\nA thick layer of blubber keeps the animal warm in icy water.\n",
        "tusk.md": "# Tusks\n\nA tusk is a long tooth; an elephant tusk is ivory, and a narwhal tusk spirals.\n",
        "other.md": "# Other\n\nNothing about the arctic animals here, only spreadsheets and invoices.\n",
    })
    other = write_files(tmp_path / "elsewhere", {"walrus-too.md": "# Walrus\n\nArctic clams blubber walrus.\n"})
    db = tmp_path / "index.db"
    assert not ingest([root], db, "animals", embedder=fake_embedder).errors
    assert not ingest([other], db, "elsewhere", embedder=fake_embedder).errors
    with Index(db, embedder=fake_embedder) as index:
        yield index


def test_hits_carry_their_document_bm25_only_when_the_lever_is_on(spread_index) -> None:
    hits = spread_index.search("arctic clams blubber", k=5, collection="animals")
    assert hits and all(h.doc_bm25 == 0.0 for h in hits)
    spread_index.ranking = Ranking(doc_bm25_weight=1.0)
    hits = spread_index.search("arctic clams blubber", k=5, collection="animals")
    by_source = {h.source: h.doc_bm25 for h in hits}
    assert by_source["walrus.md"] > 0.0
    assert all(h.collection == "animals" for h in hits)          # the other collection's page stays out
    assert "doc_bm25" in hits[0].to_dict()
    assert [h.fusion for h in hits] == sorted((h.fusion for h in hits), reverse=True)


def test_the_page_whose_sections_hold_the_words_gains_its_rank_share(spread_index) -> None:
    question = "arctic clams blubber"
    spread_index.ranking = Ranking()      # the RRF ranking the document list joins
    plain = {h.chunk_id: h.fusion for h in spread_index.search(question, k=20, collection="animals")}
    spread_index.ranking = Ranking(doc_bm25_weight=1.0)
    hits = spread_index.search(question, k=20, collection="animals")
    snapshot = spread_index._snapshot
    start, end = snapshot.slices["animals"]
    phrases = spread_index._tokenizer.tokens(spread_index._conn, query_terms(question))
    docs, _ = snapshot.document_postings().rank(phrases, start, end, 50)
    walrus = next(h for h in hits if h.source == "walrus.md")
    assert docs[0] == walrus.doc_id                                 # the page using all three words ranks first
    for hit in hits:
        rank = docs.tolist().index(hit.doc_id) + 1 if hit.doc_id in docs else None
        gained = 1.0 / (60.0 + rank) if rank else 0.0
        assert hit.fusion == pytest.approx(plain.get(hit.chunk_id, 0.0) + gained)


def test_fuse_documents_adds_the_rank_share_in_place() -> None:
    fused = {10: 0.5, 11: 0.25, 12: 0.1}
    fuse_documents(fused, {10: 1, 11: 2, 12: 3}, [2, 1], weight=2.0, k=60.0)
    assert fused == pytest.approx({10: 0.5 + 2 / 62, 11: 0.25 + 2 / 61, 12: 0.1})
    unchanged = dict(fused)
    fuse_documents(fused, {10: 1, 11: 2, 12: 3}, [2, 1], weight=0.0, k=60.0)
    assert fused == unchanged


def test_best_chunks_picks_each_documents_closest_chunk() -> None:
    doc_ids = np.array([1, 1, 2, 2, 3], dtype=np.int64)
    chunk_ids = np.array([5, 6, 7, 8, 9], dtype=np.int64)
    matrix = np.array([[0.2], [0.4], [0.3], [0.3], [0.9]])      # one dimension: the cosine is the value
    query = np.array([1.0])
    assert doclexical.best_chunks(doc_ids, chunk_ids, matrix, query, np.array([2, 1])) == {1: 6, 2: 7}
    assert doclexical.best_chunks(doc_ids, chunk_ids, matrix, query, np.array([4])) == {}

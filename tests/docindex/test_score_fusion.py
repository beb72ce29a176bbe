"""Score fusion (docindex/score_fusion.py): BM25 at given rows, document centroids, the convex order.

Indexes here use the hashing fake embedder (fakes.py): these tests are about
the arithmetic and the wiring, not about MiniLM.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from docindex import score_fusion
from docindex.index import Index
from docindex.ingest import ingest
from docindex.ranking import DEFAULT_RANKING, DOCUMENT_RANKING, Ranking
from docindex.textsearch import query_terms

from .conftest import write_files

CONVEX = Ranking(fusion="convex", convex_dense=0.8, centroid_weight=0.1)


@pytest.fixture
def index(tmp_path, fake_embedder):
    root = write_files(tmp_path / "docs", {
        "install.md": "# Install\n\nRun make install to create the virtual environment.\n\n"
                      "## Upgrade\n\nRun make install again after a pull; the environment is kept.\n",
        "serving.md": "# Serving\n\n## Your own documents\n\nBuild an index first, then point the db at it.\n\n"
                      "## Ports\n\nThe server listens on port 8000 unless max_ongoing_requests says otherwise.\n",
        "faq.md": "# FAQ\n\nWhy does install fail? The environment needs Python 3.11.\n",
    })
    db = tmp_path / "index.db"
    assert not ingest([root], db, "docs", embedder=fake_embedder).errors
    with Index(db, embedder=fake_embedder) as opened:
        yield opened


@pytest.mark.parametrize("question", ["make install environment", "max_ongoing_requests port", "documents index"])
def test_bm25_at_equals_the_bm25_ranking_for_every_matched_row(index, question):
    index.search("warm up", k=1)
    snapshot = index._snapshot
    terms = query_terms(question)
    phrases = index._tokenizer.tokens(index._conn, terms)

    def phrase_scores(i):
        return index._phrase_scores(terms[i], snapshot)

    rows, values = snapshot.lexical.scores(phrases, 0, len(snapshot.ids), len(snapshot.ids), phrase_scores)
    assert len(rows)
    assert score_fusion.bm25_at(snapshot.lexical, phrases, rows, phrase_scores) == pytest.approx(values, rel=1e-12)
    unmatched = np.setdiff1d(np.arange(len(snapshot.ids)), rows)
    assert not score_fusion.bm25_at(snapshot.lexical, phrases, unmatched, phrase_scores).any()


def test_centroids_are_the_normalized_mean_of_each_documents_vectors():
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(23, 5)).astype(np.float32)
    doc_ids = rng.choice([3, 11, 12, 40], size=23)
    centroids = score_fusion.Centroids(matrix, doc_ids)
    query = rng.normal(size=5).astype(np.float32)
    wanted = np.array([40, 3, 40, 12, 11])
    expected = []
    for doc in wanted:
        mean = matrix[doc_ids == doc].mean(axis=0)
        expected.append(mean / np.linalg.norm(mean) @ query)
    assert centroids.cosines(wanted, query) == pytest.approx(expected, abs=1e-5)
    assert centroids.cosines(np.array([40]), query) == pytest.approx(expected[:1], abs=1e-5)   # made once, kept
    assert centroids.cosines(np.array([99]), query).tolist() == [0.0]       # no chunks: no direction
    assert centroids.cosines(np.array([], dtype=np.int64), query).tolist() == []


def test_convex_orders_by_the_weighted_normalized_scores():
    ids = np.array([10, 20, 30])
    cosine = np.array([0.5, 0.4, 0.1])
    bm25 = np.array([0.0, 6.0, 3.0])
    fused = score_fusion.convex(ids, cosine, bm25, None, dense_share=0.8, bm25_share=0.2, centroid_weight=0.1)
    assert fused == pytest.approx({10: 0.8, 20: 0.8 * 0.75 + 0.2, 30: 0.1})
    by_dense = score_fusion.convex(ids, cosine, bm25, None, dense_share=1.0, bm25_share=0.0, centroid_weight=0.0)
    assert sorted(by_dense, key=by_dense.__getitem__, reverse=True) == [10, 20, 30]
    centroid = np.array([0.2, 0.2, 0.9])
    with_page = score_fusion.convex(ids, cosine, bm25, centroid, dense_share=0.8, bm25_share=0.2, centroid_weight=1.0)
    assert with_page[30] == pytest.approx(0.1 + 1.0)
    assert score_fusion.min_max(np.array([2.0, 2.0])).tolist() == [0.0, 0.0]


def test_convex_adds_the_whole_documents_bm25_as_a_share():
    ids = np.array([10, 20, 30])
    cosine, bm25 = np.array([0.5, 0.4, 0.1]), np.array([0.0, 6.0, 3.0])
    plain = score_fusion.convex(ids, cosine, bm25, None, dense_share=0.8, bm25_share=0.2, centroid_weight=0.0)
    whole = np.array([1.0, 1.0, 9.0])      # chunk 30's page uses the words all over
    fused = score_fusion.convex(ids, cosine, bm25, None, dense_share=0.8, bm25_share=0.2, centroid_weight=0.0,
                                doc_bm25=whole, doc_bm25_weight=0.5)
    assert fused == pytest.approx({10: plain[10], 20: plain[20], 30: plain[30] + 0.5})


def test_convex_search_with_whole_document_bm25_reports_it(index):
    index.ranking = Ranking(fusion="convex", doc_bm25_weight=0.1, per_doc=1)
    hits = index.search("make install environment", k=3)
    assert hits[0].source == "install.md"
    assert any(h.doc_bm25 > 0.0 for h in hits)
    assert all(0.0 <= h.fusion <= 1.1 + 1e-9 for h in hits)


def test_search_with_convex_fusion_explains_each_hit(index):
    index.ranking = CONVEX
    hits = index.search("make install environment", k=4)
    assert hits[0].source == "install.md"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(0.0 <= h.fusion <= 1.0 + CONVEX.centroid_weight and h.score == h.fusion for h in hits)
    assert all(h.doc_cosine != 0.0 for h in hits) and "doc_cosine" in hits[0].to_dict()
    index.ranking = Ranking(fusion="convex")        # no centroid weight: no centroid computed
    assert all(h.doc_cosine == 0.0 for h in index.search("make install environment", k=4))


def test_one_retriever_modes_ignore_the_ranking_levers(index):
    plain = [h.chunk_id for h in index.search("make install environment", k=5, mode="dense")]
    index.ranking = Ranking(fusion="convex", centroid_weight=0.1, per_doc=1)
    assert [h.chunk_id for h in index.search("make install environment", k=5, mode="dense")] == plain


@pytest.mark.parametrize("knobs, message", [
    ({"fusion": "max"}, "fusion must be one of rrf, convex"),
    ({"fusion": "convex", "convex_dense": 1.5}, "convex_dense must be from 0 to 1"),
    ({"fusion": "convex", "fields_weight": 1.0}, "does not combine"),
    ({"candidates": 0}, "candidates must be a positive integer"),
    ({"candidates": True}, "candidates must be a positive integer"),
])
def test_a_ranking_that_cannot_work_is_refused(knobs, message):
    with pytest.raises(ValueError, match=message):
        Ranking(**knobs)


def test_each_retriever_gives_the_rankings_own_number_of_candidates(index):
    # one candidate each leaves at most two chunks to fuse, whatever k asks
    assert DOCUMENT_RANKING.candidates == DEFAULT_RANKING.candidates == 50
    wide = index.search("make install environment", k=10, ranking=replace(DEFAULT_RANKING, same_language=False))
    narrow = index.search("make install environment", k=10,
                          ranking=replace(DEFAULT_RANKING, candidates=1, same_language=False))
    assert len(wide) > 2 and 1 <= len(narrow) <= 2
    assert narrow[0].chunk_id in {h.chunk_id for h in wide}

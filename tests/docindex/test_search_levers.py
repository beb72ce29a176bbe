"""What search scores beyond a chunk's body, and what each hit says about why it ranked.

Indexes here use the hashing fake embedder (fakes.py): these tests are about
BM25 fields, document scores and the per-hit explanation, not about MiniLM.
"""
from __future__ import annotations

import pytest

from docindex.index import Index
from docindex.ingest import ingest
from docindex.ranking import Ranking

from .conftest import write_files


@pytest.fixture
def small_index(tmp_path, fake_embedder):
    root = write_files(tmp_path / "docs", {
        "serving.md": "# Serving\n\n## Your own documents\n\nBuild an index first, then point the db at it.\n",
        "install.md": "# Install\n\nRun make install to create the virtual environment.\n",
    })
    db = tmp_path / "index.db"
    report = ingest([root], db, "docs", embedder=fake_embedder)
    assert not report.errors
    with Index(db, embedder=fake_embedder) as index:
        yield index


def test_the_heading_path_is_scored_by_bm25(small_index):
    # "documents" appears only in the heading, never in the body
    hits = small_index.search("documents", k=3, mode="bm25")
    assert hits and hits[0].source == "serving.md" and hits[0].bm25 > 0
    assert "documents" not in hits[0].text and hits[0].title == "Serving › Your own documents"


def test_every_hit_says_why_it_ranked(small_index):
    small_index.ranking = Ranking(fields_weight=1.0, doc_weight=0.5)
    hits = small_index.search("serving documents index", k=3)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    top = hits[0]
    assert top.source == "serving.md" and top.fields_bm25 > 0 and top.doc_score > 0
    assert top.score == pytest.approx(top.fusion + 0.5 * top.doc_score)
    assert {"cosine", "bm25", "fusion", "fields_bm25", "doc_score", "score"} <= set(top.to_dict())


def test_the_previous_ranking_orders_by_fusion_alone(small_index):
    small_index.ranking = Ranking()
    hits = small_index.search("make install environment", k=3)
    assert all(h.score == h.fusion and h.doc_score == 0.0 and h.fields_bm25 == 0.0 for h in hits)


def test_field_scores_alone_do_not_change_the_score_formula(small_index):
    small_index.ranking = Ranking(fields_weight=1.0)
    hits = small_index.search("install", k=2)
    assert hits[0].source == "install.md" and hits[0].fields_bm25 > 0 and hits[0].score == hits[0].fusion


def test_a_document_cap_lets_other_documents_in(tmp_path, fake_embedder):
    body = "\n\n".join(f"## Part {i}\n\nThe widget setting number {i} controls the widget. Each part says enough about itself, in a sentence of its own, to stand alone as a chunk of the index." for i in range(6))
    root = write_files(tmp_path / "docs", {"widgets.md": f"# Widgets\n\n{body}\n",
                                           "other.md": "# Other\n\nA widget appears here once.\n"})
    db = tmp_path / "index.db"
    ingest([root], db, "docs", embedder=fake_embedder)
    with Index(db, embedder=fake_embedder, ranking=Ranking()) as index:
        uncapped = [h.source for h in index.search("widget setting", k=3, mode="hybrid")]
        index.ranking = Ranking(per_doc=2)
        capped = [h.source for h in index.search("widget setting", k=3)]
    assert uncapped == ["widgets.md"] * 3
    assert capped[:2] == ["widgets.md"] * 2 and capped[2] == "other.md"


def test_coverage_is_the_idf_weighted_share_of_query_words_in_the_chunk(small_index):
    full = small_index.search("build index", k=1)[0]
    assert full.source == "serving.md" and full.coverage == pytest.approx(1.0)
    # "jupiter" is in no chunk: it weighs most, so the share drops below a half
    partial = small_index.search("build jupiter", k=1)[0]
    assert 0.0 < partial.coverage < 0.5
    assert small_index.search("jupiter moons", k=1)[0].coverage == 0.0


def test_a_hit_lists_the_query_words_its_collection_never_uses(tmp_path, fake_embedder):
    root = write_files(tmp_path / "a", {"a.md": "# Audio\n\nMix several audio streams so they play together.\n"})
    other = write_files(tmp_path / "b", {"b.md": "# Speakers\n\nYou can group two Sonos speakers in their app.\n"})
    db = tmp_path / "index.db"
    ingest([root], db, "audio", embedder=fake_embedder)
    ingest([other], db, "home", embedder=fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        hits = index.search("How do I group two Sonos speakers?", k=2, collection="audio")
        assert hits and all(h.unknown_terms == ("group", "two", "sonos", "speakers") for h in hits)   # words, lower case
        assert index.search("group Sonos speakers", k=1, collection="home")[0].unknown_terms == ()
        assert index.search("Sonos audio", k=1)[0].unknown_terms == ()      # every collection: one holds it


def test_the_page_ranking_puts_a_page_with_several_good_chunks_above_one_lucky_chunk():
    from docindex.ranking import DOCUMENT_RANKING, rank

    # page 1: three chunks that match well; page 2: one chunk a little better than any of them
    fused = {11: 0.80, 12: 0.75, 13: 0.70, 21: 0.85, 22: 0.10}
    doc_of = {11: 1, 12: 1, 13: 1, 21: 2, 22: 2}
    best_alone = rank(fused, doc_of, Ranking(fusion="convex", per_doc=1))
    assert [doc_of[r.chunk_id] for r in best_alone[:2]] == [2, 1]
    pages = rank(fused, doc_of, DOCUMENT_RANKING)
    assert [r.chunk_id for r in pages[:2]] == [11, 21]       # one chunk per page first, page 1 ahead
    top = pages[0]
    assert top.doc_score == pytest.approx(0.80 + 0.5 * 0.75 + 0.25 * 0.70)
    assert top.score == pytest.approx(top.fusion + DOCUMENT_RANKING.doc_weight * top.doc_score)

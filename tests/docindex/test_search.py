"""Hybrid search over the real cmcp index (real MiniLM embedder)."""
from __future__ import annotations

import threading

import pytest

from docindex.errors import CollectionNotFound, DocumentNotFound, EmptyQuery, InputError
from docindex.index import Index
from docindex.ranking import DEFAULT_RANKING


@pytest.fixture(scope="module")
def index(cmcp_index):
    with Index(cmcp_index) as opened:
        yield opened


def test_hits_carry_every_field_and_are_ranked_by_fusion(index):
    hits = index.search("how do I put TLS in front of the HTTP transport", k=5)
    assert len(hits) == 5
    assert hits[0].source == "docs/deployment-tls.md"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    for hit in hits:
        assert hit.collection == "cmcp" and hit.text and hit.chunk_id > 0
        assert hit.title == " › ".join(hit.heading_path)
        assert -1.0 <= hit.cosine <= 1.0 and hit.bm25 >= 0
        ranking = DEFAULT_RANKING
        if ranking.fusion == "rrf":
            most = (ranking.dense_weight + ranking.bm25_weight + ranking.fields_weight) / (ranking.rrf_k + 1)
        else:   # convex: min-max normalized terms, shares summing to 1, plus the centroid's
            most = 1.0 + ranking.centroid_weight
        assert 0 <= hit.fusion <= most
    assert any(h.bm25 > 0 for h in hits)


def test_the_anchor_of_a_hit_is_a_section_of_its_document(index):
    hit = index.search("symlink escape case study", k=1)[0]
    document = index.get_document(source=hit.source, collection="cmcp")
    assert hit.anchor in {section.anchor for section in document.sections}
    assert document.chunk_count >= len(document.sections) > 0


@pytest.mark.parametrize("query", ['"unbalanced quote', "NEAR(tls proxy)", "tls AND OR NOT", "col:value*",
                                   "^start -minus {braces}", "drop table chunks; --"])
def test_fts_syntax_in_a_question_is_just_words(index, query):
    assert isinstance(index.search(query, k=3), list)


@pytest.mark.parametrize("query", ["", "   ", "the of and is", "?!... ---", "的 了 吗"])
def test_queries_with_nothing_searchable_raise_empty_query(index, query):
    with pytest.raises(EmptyQuery):
        index.search(query)


def test_bad_arguments_raise_typed_errors(index):
    with pytest.raises(CollectionNotFound, match="collections: cmcp"):
        index.search("tls", collection="nope")
    with pytest.raises(InputError):
        index.search("tls", k=0)
    with pytest.raises(DocumentNotFound):
        index.get_document(source="no/such.md")
    with pytest.raises(CollectionNotFound):
        list(index.iter_chunks("nope"))


def test_search_works_from_another_thread(index):
    results: list = []
    errors: list = []

    def worker():
        try:
            results.append(index.search("fuzzing nightly job", k=2))
        except Exception as exc:   # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 3 and all(len(r) == 2 for r in results)


def test_browsing_apis_describe_the_collection(index):
    stats = index.stats()
    assert stats["embed_model"] == "all-MiniLM-L6-v2" and stats["embed_dim"] == 384 and stats["index_version"] == 1
    assert stats["documents"] == 35 and stats["chunks"] > 300 and stats["size_bytes"] > 0
    chunks = list(index.iter_chunks("cmcp"))
    assert len(chunks) == stats["chunks"]
    assert set(chunks[0]) == {"chunk_id", "doc_id", "source", "doc_title", "anchor", "heading_path", "level",
                              "ordinal", "text", "url"}
    assert index.content_hash("cmcp") == index.content_hash("cmcp") and len(index.content_hash("cmcp")) == 64
    assert [c.name for c in index.collections()] == ["cmcp"]
    assert not index.is_empty("cmcp") and index.is_empty("nope")


def test_a_large_index_embeds_and_searches_the_query_beside_bm25_with_the_same_results(cmcp_index, monkeypatch):
    """From PARALLEL_EMBED_MIN_CHUNKS chunks the query is embedded and its dense search run in
    worker threads while BM25 runs (docindex/query_embedding.py); here the threshold is lowered
    to this index (the exact scan; tests/docindex/test_ann.py covers the graph)."""
    from docindex import query_embedding

    questions = ["how do I put TLS in front of the HTTP transport", "symlink escape case study", "tls"]
    with Index(cmcp_index) as index:
        before = [[(h.chunk_id, h.fusion, h.cosine) for h in index.search(q, k=5)] for q in questions]
        monkeypatch.setattr(query_embedding, "PARALLEL_EMBED_MIN_CHUNKS", 1)
        threads: set[str] = set()
        real = index._get_embedder().embed
        monkeypatch.setattr(index._get_embedder(), "embed",
                            lambda texts: threads.add(threading.current_thread().name) or real(texts))
        dense_threads: set[str] = set()
        real_dense = index._dense_ids
        monkeypatch.setattr(index, "_dense_ids", lambda *a: dense_threads.add(threading.current_thread().name)
                            or real_dense(*a))
        timings: dict[str, float] = {}
        after = [[(h.chunk_id, h.fusion, h.cosine) for h in index.search(q, k=5, timings=timings)]
                 for q in questions]
        with pytest.raises(CollectionNotFound):      # an error while the embedding runs loses nothing
            index.search("tls", collection="nope")
    assert after == before
    assert threads and all(name.startswith("docindex-query") for name in threads)
    assert dense_threads and all(name.startswith("docindex-query") for name in dense_threads)
    assert {"embed", "wait", "bm25", "dense", "fuse", "total"} <= set(timings)

"""A passage copied on two pages takes one place, on the page rather than the manual holding it."""
from __future__ import annotations

import numpy as np

from docindex import duplicates
from docindex.index import Index
from docindex.ingest import ingest
from docindex.ranking import DEFAULT_RANKING, DOCUMENT_RANKING, Ranking

from .conftest import write_files

JOIN = ("The path.join() method joins all given path segments together using the platform-specific "
        "separator as a delimiter, then normalizes the resulting path. Zero-length segments are ignored, and "
        "a segment that is not a string throws a TypeError.")
SEP = ("Provides the platform-specific path segment separator: a backslash on Windows and a slash on POSIX. "
       "Use it to split a path into its segments, or to build one by hand when join does not fit the case.")
OTHER = "The readline module reads a stream one line at a time, from a file or from the terminal."


def _order(ranked, texts, docs, sizes, k=2, per_doc=0):
    return duplicates.distinct(ranked, k, docs, sizes.__getitem__, lambda ids: {i: texts[i] for i in ids}, per_doc)


def test_a_shifted_window_of_the_same_text_is_a_copy_and_other_text_is_not():
    page = duplicates.shingles(f"{JOIN} {SEP}")
    shifted = duplicates.shingles(f"`path.join()` **method** joins all given path segments together using the "
                                  f"platform-specific separator as a delimiter, then normalizes the resulting path. {OTHER}")
    assert duplicates.copies(page, shifted)
    assert not duplicates.copies(page, duplicates.shingles(OTHER))
    assert not duplicates.copies(page, frozenset())


def test_the_page_takes_the_place_of_the_manual_that_holds_it():
    texts = {1: JOIN, 2: JOIN, 3: OTHER}
    docs = {1: 100, 2: 7, 3: 8}                      # 100: all.html, 7: path.html
    sizes = {100: 400, 7: 12, 8: 10}
    assert _order([1, 2, 3], texts, docs, sizes) == [2, 3, 1]
    assert _order([1, 2, 3], texts, docs, sizes, per_doc=1) == [2, 3, 1]
    # the manual's copy ranked below the page's: it follows the first k
    assert _order([2, 1, 3], texts, docs, sizes) == [2, 3, 1]


def test_two_pages_sharing_a_paragraph_give_an_answer_one_copy_and_stay_two_pages():
    texts = {1: JOIN, 2: JOIN, 3: OTHER}
    docs, sizes = {1: 5, 2: 6, 3: 8}, {5: 20, 6: 30, 8: 10}
    assert _order([1, 2, 3], texts, docs, sizes) == [1, 3, 2]                 # passages
    assert _order([1, 2, 3], texts, docs, sizes, per_doc=1) == [1, 2, 3]      # pages


def test_near_identical_chunks_of_one_page_are_both_kept():
    texts = {1: JOIN, 2: JOIN, 3: OTHER}
    docs, sizes = {1: 5, 2: 5, 3: 8}, {5: 20, 8: 10}
    assert _order([1, 2, 3], texts, docs, sizes) == [1, 2, 3]


def test_search_finds_the_page_not_its_copy_in_the_whole_manual(tmp_path, fake_embedder):
    pages = {"path.md": f"# Path\n\n## path.join\n\n{JOIN}\n\n## path.sep\n\n{SEP}\n"}
    filler = "\n\n".join(f"## Topic {i}\n\nTopic {i} of the manual covers widget number {i}, its settings "
                         f"and its limits, in sentences that no other page repeats." for i in range(12))
    pages["all.md"] = f"# All\n\n## path.join\n\n{JOIN}\n\n## path.sep\n\n{SEP}\n\n{filler}\n"
    db = tmp_path / "index.db"
    assert not ingest([write_files(tmp_path / "docs", pages)], db, "docs", embedder=fake_embedder).errors
    with Index(db, embedder=fake_embedder) as index:
        question = "How do I join path segments with the platform separator?"
        for ranking in (DEFAULT_RANKING, DOCUMENT_RANKING):
            hits = index.search(question, k=2, collection="docs", ranking=ranking)
            assert hits[0].source == "path.md" and "all.md" not in {h.source for h in hits[:2]}, hits
            assert len({" ".join(h.text.split()) for h in hits}) == len(hits)
        without = index.search(question, k=4, collection="docs", ranking=Ranking(distinct=False))
        assert {h.source for h in without} == {"path.md", "all.md"}       # what the lever removes



def test_only_chunks_with_close_vectors_are_compared_and_only_their_texts_read():
    texts = {1: JOIN, 2: JOIN, 3: OTHER}
    docs, sizes = {1: 100, 2: 7, 3: 8}, {100: 400, 7: 12, 8: 10}
    read: list[list[int]] = []

    def text_of(ids):
        read.append(ids)
        return {i: texts[i] for i in ids}

    close = {1: [1.0, 0.0], 2: [0.99, 0.141], 3: [0.0, 1.0]}
    far = {1: [1.0, 0.0], 2: [0.0, 1.0], 3: [0.6, 0.8]}
    for vectors, expected, texts_read in ((close, [2, 3, 1], [[1, 2]]), (far, [1, 2, 3], [])):
        read.clear()
        order = duplicates.distinct([1, 2, 3], 2, docs, sizes.__getitem__, text_of,
                                    vectors=lambda ids, v=vectors: np.array([v[i] for i in ids]))
        assert order == expected and read == texts_read


def test_a_long_documents_copy_gives_its_place_to_the_page_it_copies_when_the_page_did_not_rank():
    """Buildbot's full.html ranked first where shell_command.html, which it copies, did not rank at all
    (stop 44): the page's chunk, found by `twin_of`, takes the copy's place; the copy follows the rest."""
    texts = {1: JOIN, 3: OTHER, 9: JOIN}
    docs = {1: 100, 3: 8}                           # 100: full.html (400 chunks); 9 (path.html) not ranked
    sizes = {100: 400, 7: 12, 8: 10}
    asked: list[int] = []

    def twin_of(chunk_id, doc):
        asked.append(chunk_id)
        return (9, 7) if chunk_id == 1 else None

    order = duplicates.distinct([1, 3], 2, docs, sizes.__getitem__, lambda ids: {i: texts[i] for i in ids},
                                twin_of=twin_of)
    assert order == [9, 3, 1] and docs[9] == 7 and asked == [1]
    # a short page is never looked up, nor a long one past the first k documents or MAX_LOOKUPS lookups
    asked.clear()
    short = {1: 8, 3: 100}
    assert duplicates.distinct([1, 3], 1, short, sizes.__getitem__, lambda ids: {}, twin_of=twin_of) == [1, 3]
    assert asked == []
    many = {i: 100 + i for i in range(20)}
    assert duplicates.distinct(list(range(20)), 20, many, lambda doc: 400, lambda ids: {},
                               twin_of=twin_of)[:3] == [0, 9, 2]
    assert len(asked) == duplicates.MAX_LOOKUPS


def test_search_finds_the_page_when_only_the_whole_manual_ranked(tmp_path, fake_embedder):
    """The same through Index.search, with the real lookup (its nearest chunks, the cosine and the words):
    the page's own chunk is not among the candidates; the manual's copy of it is."""
    pages = {f"page{i}.md": f"# Page {i}\n\n## Topic {i}\n\nTopic {i} of the manual covers widget number {i}, its "
                            f"settings and its limits, in sentences that no other page repeats.\n" for i in range(48)}
    pages["path.md"] = f"# Path\n\n## path.join\n\n{JOIN}\n"
    pages["all.md"] = "# All\n\n" + "\n\n".join(text.split("\n", 2)[2] for text in pages.values()) + "\n"
    db = tmp_path / "index.db"
    assert not ingest([write_files(tmp_path / "docs", pages)], db, "docs", embedder=fake_embedder).errors
    with Index(db, embedder=fake_embedder) as index:
        question = "How do I join path segments with the platform separator?"
        plain = index.search(question, k=3, collection="docs", ranking=Ranking(distinct=False))
        assert plain[0].source in ("path.md", "all.md")
        for ranking in (DEFAULT_RANKING, DOCUMENT_RANKING):
            hits = index.search(question, k=3, collection="docs", ranking=ranking)
            assert hits[0].source == "path.md" and "all.md" not in {h.source for h in hits}, hits
        snapshot = index._snapshot
        looked_up = dict(snapshot.copies_pages)
        # a page brought by the lookup says whose place it took (issue 13 item 6); others say nothing
        for h in index.search(question, k=3, collection="docs", ranking=DOCUMENT_RANKING):
            assert h.copy_of is None or h.source == "path.md", h
            assert ("copy_of" in h.to_dict()) == (h.copy_of is not None)
        assert looked_up and all(looked_up.values())            # all.md was looked up, and copies pages
        # the lookup itself: all.md's copy of the join passage → path.md's chunk; nothing for a page's chunk
        copy = next(h for h in plain if h.source == "all.md" or h.source == "path.md")
        whole = index.search(question, k=10, collection="docs", ranking=Ranking(distinct=False))
        by_source = {h.source: h for h in whole if "path.join" in h.text}
        ids, matrix = snapshot.ids, snapshot.matrix
        twin_of = duplicates.twin_finder(snapshot, lambda v: ids[np.argsort(-(matrix @ v))[:20]], index._chunk_texts,
                                         len(ids))
        assert twin_of(by_source["all.md"].chunk_id, by_source["all.md"].doc_id) == \
            (by_source["path.md"].chunk_id, by_source["path.md"].doc_id), copy
        assert twin_of(by_source["path.md"].chunk_id, by_source["path.md"].doc_id) is None
        # a long document holding under a twentieth of what is searched is not looked up
        small_share = duplicates.twin_finder(snapshot, lambda v: ids[:20], index._chunk_texts, 100 * len(ids))
        assert small_share(by_source["all.md"].chunk_id, by_source["all.md"].doc_id) is None


def test_a_page_brought_by_the_lookup_carries_the_copys_scores_and_says_whose_place_it_took():
    from types import SimpleNamespace

    from docindex.ranking import Ranked

    snapshot = SimpleNamespace(doc_sizes={100: 400, 7: 12, 8: 10},
                               vectors_of=lambda ids: np.eye(len(ids)))        # no two chunks close
    ranked = [Ranked(1, 0.9, 0.5, 1.9), Ranked(3, 0.4, 0.1, 0.6)]
    order = duplicates.distinct_ranked(ranked, 2, {1: 100, 3: 8}, snapshot, lambda ids: {},
                                       twin_of=lambda chunk_id, doc: (9, 7) if chunk_id == 1 else None)
    assert [(r.chunk_id, r.score, r.copy_of) for r in order] == [(9, 1.9, 1), (3, 0.6, None), (1, 1.9, None)]


def test_a_document_under_the_ratio_that_holds_pages_gives_the_page_its_place():
    """FFmpeg's ffplay-all.html (1,725 chunks) holds ffmpeg-filters.html (1,224) and smaller pages: under
    AGGREGATE_RATIO, the two were kept as two pages sharing a paragraph, the manual's copy first (stop 53)."""
    texts = {1: JOIN, 2: JOIN, 3: OTHER}
    docs = {1: 100, 2: 7, 3: 8}                      # 100: ffplay-all.html, 7: ffmpeg-filters.html
    sizes = {100: 140, 7: 100, 8: 10}
    asked: list[int] = []

    def holds(doc):
        asked.append(doc)
        return doc == 100

    def order(per_doc, holds):
        return duplicates.distinct([1, 2, 3], 2, docs, sizes.__getitem__, lambda ids: {i: texts[i] for i in ids},
                                   per_doc, holds=holds)

    assert order(1, None) == [1, 2, 3]                 # before: two pages of their own
    assert order(1, holds) == [2, 3, 1] and asked == [100]
    assert order(0, holds) == [2, 3, 1]                # the passages: the page's copy, once
    assert order(1, lambda doc: False) == [1, 2, 3]    # two pages that share a paragraph: both stay


def test_holds_asks_whether_a_documents_chunks_copy_several_smaller_pages(tmp_path, fake_embedder):
    """The real lookup: all.md copies filters.md and path.md, filters.md copies nothing smaller, and a page
    that shares one paragraph with another (createindex.md, reindex.md) holds no pages."""
    def section(name, i):
        return (f"## {name} {i}\n\nThe {name} number {i} changes its input in a way that no other {name} does, "
                f"and this sentence says how, with words kept for {name} {i} alone.\n")
    filters = "# Filters\n\n" + "\n".join(section("filter", i) for i in range(44))
    path = f"# Path\n\n## path.join\n\n{JOIN}\n\n## path.sep\n\n{SEP}\n"
    shared = f"## Building concurrently\n\n{OTHER} {SEP}\n"
    pages = {"filters.md": filters, "path.md": path,
             "all.md": filters.replace("# Filters", "# All") + "\n" + path.split("\n", 2)[2],
             "createindex.md": "# Create\n\n" + "\n".join(section("option", i) for i in range(42)) + shared,
             "reindex.md": "# Reindex\n\n" + "\n".join(section("mode", i) for i in range(8)) + shared}
    db = tmp_path / "index.db"
    assert not ingest([write_files(tmp_path / "docs", pages)], db, "docs", embedder=fake_embedder).errors
    with Index(db, embedder=fake_embedder) as index:
        index.search("filter number 3", k=2, collection="docs")
        snapshot = index._snapshot
        ids, matrix = snapshot.ids, snapshot.matrix
        finder = duplicates.twin_finder(snapshot, lambda v: ids[np.argsort(-(matrix @ v))[:20]], index._chunk_texts,
                                        len(ids))
        doc = {source: doc_id for doc_id, source in index._conn.execute("SELECT id, source FROM documents")}
        assert finder.holds(doc["all.md"]) and not finder.holds(doc["filters.md"])
        assert not finder.holds(doc["createindex.md"])
        assert snapshot.holds_pages == {doc["all.md"]: True, doc["filters.md"]: False, doc["createindex.md"]: False}
        hits = index.search("Which filter number 3 changes its input?", k=2, collection="docs", ranking=DOCUMENT_RANKING)
        assert hits[0].source == "filters.md", hits

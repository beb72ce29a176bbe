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

"""Release notes yield to the page a question is about, in the pages ranking only (docindex/release_notes.py)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from docindex import release_notes
from docindex.index import Index
from docindex.ingest import ingest
from docindex.ranking import DEFAULT_RANKING, DOCUMENT_RANKING, Ranking
from docindex.release_notes import asks_about_releases, is_release_notes, is_version_heading

from .conftest import write_files


@pytest.mark.parametrize("heading", ["6.56.3 - 2022-10-17", "Version 2.2.2", "E.1. Release 15.2", "[0.3.0] - 2024-05-01",
                                     "Issues closed in 7.0", "21.12.0 (2021-12-11)", "1.4.46 Released: January 3, 2023"])
def test_a_short_heading_with_a_version_number_is_a_version_heading(heading: str) -> None:
    assert is_version_heading(heading)


@pytest.mark.parametrize("heading", ["8.15.1. Declaration of Array Types", "3.1. Objects, values and types", "Added",
                                     "Upgrading from an older release", "Python 3.11 and the new parser: what it means for "
                                     "the extension modules you wrote", "Use 2.5x less memory", "Version 2.2.x",
                                     "Wait 1.5s", "2.1 Routing tables", "3.1 alsa", "10.3.1 Options"])
def test_a_section_number_or_a_long_heading_is_not(heading: str) -> None:
    assert not is_version_heading(heading)


@pytest.mark.parametrize("heading", ["2.0 Final", "1.2.0 Unreleased", "3.4 Bugfix release", "1.2.0 (unreleased)",
                                     "4.2 What's new"])
def test_a_bare_number_before_release_words_is_still_a_version(heading: str) -> None:
    assert is_version_heading(heading)


def test_pages_numbered_without_a_closing_dot_are_no_release_notes(monkeypatch: pytest.MonkeyPatch) -> None:
    # BIRD's programmer's guide (LinuxDoc-Tools) and FFmpeg's manual (makeinfo) read as release notes before stop 58
    headings = ["2.1 Forwarding Information Base", "2.2 Routing tables", "2.3 Route attribute cache", "Function"]
    assert not is_release_notes(headings)
    monkeypatch.setattr(release_notes, "BARE_SECTION_NUMBERS", False)
    assert is_release_notes(headings)


def test_pre_releases_and_release_titles_are_measured_switches(monkeypatch: pytest.MonkeyPatch) -> None:
    # stop 54 measured both and shipped neither (docindex/release_notes.py: PRE_RELEASES, RELEASE_TITLES)
    headings = ["What’s new in PyTables 1.2", "API additions", "Deprecated features"]
    titles = ["What’s new in PyTables 1.2 — PyTables 3.7.0 documentation", "What’s new in PyTables 1.2"]
    assert not is_version_heading("Changes from 2.2b1 to 2.2b2")
    assert not is_release_notes(headings, titles)
    monkeypatch.setattr(release_notes, "PRE_RELEASES", True)
    for heading in ("Changes from 2.2b1 to 2.2b2", "Release 1.0rc1", "2.0.0a3"):
        assert is_version_heading(heading)
    assert not is_version_heading("Use 1.5GB of RAM")
    monkeypatch.setattr(release_notes, "RELEASE_TITLES", True)
    # PyTables' "What’s new in PyTables 1.2" over "API additions", "Deprecated features"; one version heading, not three
    assert is_release_notes(headings, titles)
    assert is_release_notes(["API additions"], ["E.18. Release 15.1"])             # PostgreSQL's release pages
    assert is_release_notes([], ["Release notes for PyTables 3.7 series — PyTables 3.7.0 documentation"])
    # the site's version after " — " is not the page's, and a version without a release word names no release
    assert not is_release_notes([], ["Installation — PyTables 3.7.0 documentation"])
    assert not is_release_notes([], ["Upgrading to 2.0", "Python 3.11 support"])


def test_a_page_is_release_notes_when_most_of_its_headings_are_versions() -> None:
    assert is_release_notes(["6.56.3 - 2022-10-17", "6.56.2 - 2022-10-10", "6.56.1 - 2022-10-05"])
    assert is_release_notes(["Version 2.2.2", "Version 2.2.1", "Version 2.2.0", "Added", "Fixed"])
    assert not is_release_notes(["Version 2.2.2", "Version 2.2.1"])                     # fewer than three
    assert not is_release_notes(["E.1.1. Migration to Version 15.2", "E.1.2. Changes", "Overview", "Install",
                                 "Release 15.1", "Release 15.0", "Configure", "Tuning"])  # under half


@pytest.mark.parametrize("query, asks", [
    ("How do I keep generated data small?", False),
    ("Right after I save my changes the tests fail", False),
    ("What changed in 6.56?", True),
    ("Which release added the lark extra?", True),
    ("What's new in the latest version?", True),
    ("Is it deprecated?", True),
])
def test_a_question_about_releases_keeps_them(query: str, asks: bool) -> None:
    assert asks_about_releases(query) is asks


def test_the_ranking_knob_is_a_share() -> None:
    assert DEFAULT_RANKING.release_notes == DOCUMENT_RANKING.release_notes == 0.5   # both rankings (stop 51)
    with pytest.raises(ValueError, match="release_notes"):
        Ranking(release_notes=0.0)


@pytest.fixture
def manual(tmp_path, fake_embedder):
    releases = "\n\n".join(f"## {v}.0.0 - 2022-0{v}-01\n\nThe widget cache size setting now keeps more entries "
                           f"(fixed in release {v})." for v in range(1, 8))
    root = write_files(tmp_path / "docs", {
        "changes.md": f"# Changelog\n\n{releases}\n",
        "cache.md": "# Widget cache\n\n## How big it grows\n\nThe size setting bounds the widget cache.\n",
        **{f"other{i}.md": f"# Topic {i}\n\nThis page is about gardening tools, soil and seeds number {i}.\n"
           for i in range(12)},      # the query's words are rare: BM25 counts
    })
    db = tmp_path / "index.db"
    assert not ingest([root], db, "docs", embedder=fake_embedder).errors
    with Index(db, embedder=fake_embedder) as index:
        yield index


def _pages(index: Index, query: str, share: float) -> list[str]:
    ranking = replace(DOCUMENT_RANKING, release_notes=share)
    return [hit.source for hit in index.search(query, k=2, ranking=ranking)]


def test_release_notes_yield_to_the_page_unless_the_question_asks_about_releases(manual) -> None:
    question = "widget cache size setting entries"
    assert _pages(manual, question, 1.0)[0] == "changes.md"         # seven matching sections lift it
    assert _pages(manual, question, DOCUMENT_RANKING.release_notes) == ["cache.md", "changes.md"]
    assert _pages(manual, question + " in release 5", DOCUMENT_RANKING.release_notes)[0] == "changes.md"
    hits = manual.search(question, k=2, ranking=DOCUMENT_RANKING)
    assert [h.release_notes for h in hits] == [False, True]          # each hit says why it ranked
    assert "release_notes" not in hits[0].to_dict() and hits[1].to_dict()["release_notes"] is True


def test_the_passages_an_answer_gets_put_release_notes_after_the_page_they_change(manual) -> None:
    """Stop 51: the passages ranking (answers, the Gate) scales release notes too: a changelog entry took one
    of the 4 places an answer draws on, above the section that answers."""
    question = "widget cache size setting entries"
    first = manual.search(question, k=1)[0]
    assert first.source == "cache.md" and not first.release_notes
    flagged = [h for h in manual.search(question, k=5) if h.source == "changes.md"]
    assert flagged and all(h.release_notes for h in flagged)
    off = manual.search(question, k=1, ranking=replace(DEFAULT_RANKING, release_notes=1.0))[0]
    assert off.source == "changes.md"               # without the rule its entries come first
    assert manual.search(question + " in release 5", k=1)[0].source == "changes.md"

"""Release notes in the pages ranking: a page of version headings yields to the pages a question is about.

A manual's release notes (Hypothesis' `changes.html`, gevent's `changelog.html`, IPython's
`github-stats-*.html`, Varnish's `changes-*.html`) repeat, release by release, the words of every
feature the rest of the manual documents, and a long one brings several matching sections to its score
(ranking.py's document score): it ranked first, above the page that answers, for questions that ask
how to use something, not when it changed.

What is release notes is read from the page, not its file name (Python's "Design and History FAQ",
Buildbot's "Change Sources and Changes" are no release notes): at least VERSION_HEADINGS of its
headings below the title, and at least half of them, are short and carry a version number ("6.56.3 -
2022-10-17", "Version 2.2.2", "Release 15.2", "[0.3.0] - 2024-05-01", "Issues closed in 7.0").

In both rankings (`Ranking.release_notes`: ranking.DOCUMENT_RANKING since stop 50, DEFAULT_RANKING, which feeds
answers and the Gate, since stop 51) such a page's chunks score that share of their fused score unless the
question is about releases itself: it names a version number or a release word (`asks_about_releases`).
Its known cost: a limitation stated only in the release notes (BIND's: named cannot forward over DoT/DoH)
ranks below the pages about the feature when the question names no version (KNOWN_LIMITATIONS.md).
"""
from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable

VERSION_HEADINGS = 3
"""Version headings a page needs before it reads as release notes (and half of its headings)."""
SHORT_HEADING_WORDS = 8
_VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*(?![\w.]*[A-Za-z])")
_SECTION_NUMBER = re.compile(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.\s+")
_RELEASE_WORDS = re.compile(
    r"\b(?:releases?|released|release notes|changelog|change ?log|what'?s new|new in|versions?|upgrad\w*|"
    r"deprecat\w*|(?:added|removed|introduced|changed) in)\b", re.IGNORECASE)


def is_version_heading(heading: str) -> bool:
    """A short heading that carries a version number; a section number ("8.15.1. Declaration of Array
    Types", "E.1. Release 15.2") is not one."""
    text = _SECTION_NUMBER.sub("", heading)
    return len(text.split()) <= SHORT_HEADING_WORDS and bool(_VERSION.search(text))


def is_release_notes(headings: Iterable[str]) -> bool:
    """Whether a page's distinct headings below its title read as release notes (module docstring)."""
    distinct = set(headings)
    versions = sum(is_version_heading(h) for h in distinct)
    return versions >= VERSION_HEADINGS and 2 * versions >= len(distinct)


def asks_about_releases(query: str) -> bool:
    """The question names a version number or a release word: release notes may be what it wants."""
    return bool(_VERSION.search(query) or _RELEASE_WORDS.search(query))


def release_notes_docs(conn: sqlite3.Connection, doc_ids: Iterable[int], known: dict[int, bool]) -> set[int]:
    """Those of `doc_ids` that are release notes, read from their chunks' heading paths (inside the
    caller's read transaction); `known` caches each answer for the index version it belongs to."""
    wanted = sorted({int(d) for d in doc_ids} - known.keys())
    if wanted:
        headings: dict[int, set[str]] = {doc: set() for doc in wanted}
        marks = ",".join("?" * len(wanted))
        for doc, path_json in conn.execute(
                f"SELECT doc_id, heading_path FROM chunks WHERE doc_id IN ({marks})", wanted):
            headings[doc].update(json.loads(path_json)[1:])
        known.update({doc: is_release_notes(found) for doc, found in headings.items()})
    return {int(d) for d in doc_ids if known.get(int(d))}


def demote(fused: dict[int, float], doc_of: dict[int, int], release_notes: set[int], share: float) -> None:
    """Scale the fused score of each chunk of a release-notes page by `share` (in place); `doc_of` maps every
    fused chunk to its document."""
    for chunk_id in fused:
        if doc_of[chunk_id] in release_notes:
            fused[chunk_id] *= share

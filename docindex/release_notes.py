"""Release notes in the pages ranking: a page of version headings yields to the pages a question is about.

A manual's release notes (Hypothesis' `changes.html`, gevent's `changelog.html`, IPython's
`github-stats-*.html`, Varnish's `changes-*.html`) repeat, release by release, the words of every
feature the rest of the manual documents, and a long one brings several matching sections to its score
(ranking.py's document score): it ranked first, above the page that answers, for questions that ask
how to use something, not when it changed.

What is release notes is read from the page, not its file name (Python's "Design and History FAQ",
Buildbot's "Change Sources and Changes" are no release notes): at least VERSION_HEADINGS of its
headings below the title, and at least half of them, are short and carry a version number ("6.56.3 -
2022-10-17", "Version 2.2.2", "Release 15.2", "[0.3.0] - 2024-05-01", "Issues closed in 7.0"). Stop 54 measured two
wider readings and did not ship them (PRE_RELEASES, RELEASE_TITLES: KNOWN_LIMITATIONS.md): on PyTables' manual they
demoted release notes that held the answer's facts.

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
_RELEASE = r"(?<![\w.])v?\d+\.\d+(?:\.\d+)*"
_PRE_RELEASE = r"(?:a|b|c|rc|dev|alpha|beta|pre|post)\d*"      # PEP 440's pre-, post- and dev-release segments
_NO_LETTER_AFTER = r"(?![\w.]*[A-Za-z])"                          # "2.2.x", "1.2ms" are no versions
PRE_RELEASES = False
"""Stop 54, measured and not shipped: a pre-release number as a version too ("Changes from 2.2b1 to 2.2b2", PyTables'
release notes, which read as 4 version headings of 13 without it)."""
_VERSIONS = {pre: re.compile(_RELEASE + (f"(?:{_PRE_RELEASE})?" if pre else "") + _NO_LETTER_AFTER)
             for pre in (True, False)}
_SECTION_NUMBER = re.compile(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.\s+")
_RELEASE_WORDS = re.compile(
    r"\b(?:releases?|released|release notes|changelog|change ?log|what'?s new|new in|versions?|upgrad\w*|"
    r"deprecat\w*|(?:added|removed|introduced|changed) in)\b", re.IGNORECASE)


def _version_pattern() -> re.Pattern[str]:
    return _VERSIONS[PRE_RELEASES]


BARE_SECTION_NUMBERS = True
"""Stop 58: a number without a closing dot before a title of words ("2.1 Routing tables", "3.1 alsa": LinuxDoc-Tools'
and makeinfo's section numbers) is a section number, not a version, unless the words name a release. Before, 8 of
BIRD's 17 pages and 18 of FFmpeg's 31 read as release notes and kept half their score (KNOWN_LIMITATIONS.md)."""
_BARE_SECTION = re.compile(r"^\s*\d+(?:\.\d+)+\s+(?=[^\W\d_])")
_RELEASE_QUALIFIERS = re.compile(r"\b(?:final|beta|alpha|preview|lts|stable|unreleased|bugfix|hotfix|patch|"
                                 r"release candidate|changes|fixes|highlights)\b", re.IGNORECASE)


def _bare_section_number(heading: str) -> bool:
    """"2.1 Routing tables": a number, no closing dot, then words with no digit and no release word."""
    found = _BARE_SECTION.match(heading)
    if found is None:
        return False
    rest = heading[found.end():]
    return not any(ch.isdigit() for ch in rest) and not _RELEASE_WORDS.search(rest) \
        and not _RELEASE_QUALIFIERS.search(rest)


def is_version_heading(heading: str) -> bool:
    """A short heading that carries a version number; a section number ("8.15.1. Declaration of Array
    Types", "E.1. Release 15.2", "2.1 Routing tables") is not one."""
    if BARE_SECTION_NUMBERS and _bare_section_number(heading):
        return False
    text = _SECTION_NUMBER.sub("", heading)
    return len(text.split()) <= SHORT_HEADING_WORDS and bool(_version_pattern().search(text))


def is_release_notes(headings: Iterable[str], titles: Iterable[str] = ()) -> bool:
    """Whether a page's distinct headings below its title read as release notes (module docstring), or, with
    RELEASE_TITLES, one of its `titles` (its title, its first heading) names a release (`is_release_title`)."""
    distinct = set(headings)
    versions = sum(is_version_heading(h) for h in distinct)
    return versions >= VERSION_HEADINGS and 2 * versions >= len(distinct) or \
        RELEASE_TITLES and any(is_release_title(t) for t in titles)


RELEASE_TITLES = False
"""Stop 54, measured and not shipped: a page of one release ("What's new in PyTables 1.2" over "API additions";
"Release notes for PyTables 3.7 series"; PostgreSQL's "E.18. Release 15.1") as release notes by its title, which
has one version heading, not three. Both together: page MRR equal on 42 of 43 sets (PyTables 0.871 -> 0.874), but
PyTables' answers 0.317 -> 0.289 of the reference words (its release notes held the PerformanceWarning limit and
the in-memory file's backing store) and one more off-topic question through the Gate on Celery."""
_TITLE_WORDS = re.compile(r"\b(?:what['’]?s new|release notes?|releases?|changelog|change ?log|changes|news)\b",
                          re.IGNORECASE)


def is_release_title(title: str) -> bool:
    """A title naming a release: a version heading (`is_version_heading`) with a release word, the site's name after
    " — " or " | " left out ("What's New In Python 3.11 — Python 3.11.2 documentation")."""
    own = re.split(r" [—|] ", title, maxsplit=1)[0]
    return is_version_heading(own) and bool(_TITLE_WORDS.search(own))


def asks_about_releases(query: str) -> bool:
    """The question names a version number or a release word: release notes may be what it wants."""
    return bool(_version_pattern().search(query) or _RELEASE_WORDS.search(query))


def release_notes_docs(conn: sqlite3.Connection, doc_ids: Iterable[int], known: dict[int, bool]) -> set[int]:
    """Those of `doc_ids` that are release notes, read from their chunks' heading paths (inside the
    caller's read transaction); `known` caches each answer for the index version it belongs to."""
    wanted = sorted({int(d) for d in doc_ids} - known.keys())
    if wanted:
        headings: dict[int, set[str]] = {doc: set() for doc in wanted}
        titles: dict[int, set[str]] = {doc: set() for doc in wanted}
        marks = ",".join("?" * len(wanted))
        for doc, path_json in conn.execute(
                f"SELECT doc_id, heading_path FROM chunks WHERE doc_id IN ({marks})", wanted):
            path = json.loads(path_json)
            headings[doc].update(path[1:])
            titles[doc].update(path[:2])
        known.update({doc: is_release_notes(found, titles[doc]) for doc, found in headings.items()})
    return {int(d) for d in doc_ids if known.get(int(d))}


def demote(fused: dict[int, float], doc_of: dict[int, int], release_notes: set[int], share: float) -> None:
    """Scale the fused score of each chunk of a release-notes page by `share` (in place); `doc_of` maps every
    fused chunk to its document."""
    for chunk_id in fused:
        if doc_of[chunk_id] in release_notes:
            fused[chunk_id] *= share

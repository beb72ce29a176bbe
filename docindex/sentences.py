"""Sentences of a passage, with character offsets, read as Markdown.

Documentation is hard-wrapped: a line break inside a paragraph is not a
sentence end. A passage is first cut into *units* — a paragraph (lines
joined until a blank line), a heading, one list item (with its wrapped
continuation lines), one table row, a code fence — and each prose unit is
then cut at `.`/`!`/`?` followed by white space. Offsets always index the
passage text as given, so a span can be highlighted in it.

It also splits an *answer* into its sentences the way the CitationChecker
and the page read them (`split_sentences`: a citation closes a sentence).

Used at ingest (docindex/quotable.py: the sentences worth quoting, embedded
once), by the CitationChecker (evidence spans) and the extractive engine.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

UnitKind = Literal["prose", "heading", "item", "row", "code"]

_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])(?:\s+|$)")     # "3." alone: a chunk cut after an item's marker
_HEADING = re.compile(r"^\s*#{1,6}\s")
_ROW = re.compile(r"^\s*\|")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
# A full stop followed by a lower-case word or an en or em dash ("e.g. the", "TLS?\" — no") ends nothing,
# nor does one that closes a Latin abbreviation ("the default driver (i.e. `bridge`) has", Docker's manual).
_ABBREVIATIONS = ("e.g", "i.e", "E.g", "I.e", "eg", "ie", "Eg", "Ie", "cf", "vs")   # also split_sentences and the
# page's splitSentences. "eg."/"ie." without their inner stops (Ant's manual: "… using English locale (eg.
# 21-May-2001)" was quoted as "… using English locale (eg").
_SENTENCE_END = re.compile(r"(?<=[.!?])" + "".join(rf"(?<!\b{re.escape(a)}\.)" for a in _ABBREVIATIONS)
                           + r"[\"')\]*_`]*\s+(?![a-z\u2013\u2014])")
# A line that is only a blockquote marker ("> **Warning:**" / ">" / "> It is not …") ends a paragraph.
_QUOTE_BLANK = re.compile(r"^\s*(?:>\s*)+$")


@dataclass(frozen=True)
class Unit:
    kind: UnitKind
    start: int
    end: int


def _lines(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans


def units(text: str) -> list[Unit]:
    """The passage's blocks in order (see the module docstring)."""
    found: list[Unit] = []
    current: tuple[UnitKind, int, int] | None = None
    in_code = False
    fence = ""                  # the open fence: closed by a bare run of its character at least as long

    def close() -> None:
        nonlocal current
        if current is not None:
            found.append(Unit(*current))
            current = None

    for start, end in _lines(text):
        line = text[start:end]
        marker = _FENCE.match(line)
        if marker and (not in_code or (marker.group(1)[0] == fence[0] and len(marker.group(1)) >= len(fence)
                                       and not marker.group(2).strip())):
            fence = marker.group(1)
            if in_code:
                current = ("code", current[1] if current else start, end)
                close()
                in_code = False
            else:
                close()
                current, in_code = ("code", start, end), True
            continue
        if in_code:
            current = ("code", current[1] if current else start, end)
            continue
        if not line.strip() or _QUOTE_BLANK.match(line):
            close()
            continue
        kind: UnitKind | None = ("heading" if _HEADING.match(line) else "row" if _ROW.match(line)
                                 else "item" if _ITEM.match(line) else None)
        if kind is not None:
            close()
            current = (kind, start, end)
            if kind in ("heading", "row"):
                close()
        elif current is not None and current[0] in ("prose", "item"):
            current = (current[0], current[1], end)          # a wrapped continuation line
        else:
            close()
            current = ("prose", start, end)
    close()
    return found


PROSE_KINDS: tuple[UnitKind, ...] = ("prose", "item", "heading", "row")


def unit_sentence_spans(text: str, unit: Unit) -> list[tuple[int, int]]:
    """Character spans (in `text`) of one unit's sentences."""
    spans: list[tuple[int, int]] = []
    start = unit.start
    for m in _SENTENCE_END.finditer(text, unit.start, unit.end):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, unit.end))
    return [(a, b) for a, b in ((_lstrip(text, a, b), b) for a, b in spans) if b > a]


_TITLE_WORD = re.compile(r"[^\W\d_][\w'\u2019-]*")
_TITLE_SMALL_WORDS = frozenset("a an and as at but by for from in into of on or the to via vs with".split())


def is_title(line: str) -> bool:
    """A one-line paragraph in title case with no sentence's end: a page's title set as text
    (SQLite's "Using SQLite In Multi-Threaded Applications"), not a sentence to quote; or a block's
    title (`is_label`)."""
    line = line.strip()
    if is_label(line):
        return True                 # a block's title, written bold
    words = _TITLE_WORD.findall(line)
    capitals = sum(w[0].isupper() for w in words)
    return "\n" not in line and line[-1:] not in (".", "!", "?", ":", ";") and capitals >= 3 \
        and all(w[0].isupper() or w.lower() in _TITLE_SMALL_WORDS for w in words)


def is_label(line: str) -> bool:
    """A one-line paragraph that is all bold with no sentence's end: a block's title (the HTML
    reader writes DocBook's `<p class="title">` so, "**TIP Listing a package contents …**"), or a
    Markdown writer's pseudo-heading. Not a sentence to quote, nor a term to quote with one."""
    line = line.strip()
    inner = line[2:-2].strip()
    return "\n" not in line and len(line) > 4 and line.startswith("**") and line.endswith("**") \
        and "**" not in inner and inner[-1:] not in (".", "!", "?", ":", ";")


def sentence_spans(text: str, kinds: tuple[UnitKind, ...] = PROSE_KINDS) -> list[tuple[int, int]]:
    """Character spans of the sentences of the units of `kinds` (code is never a sentence)."""
    return [span for unit in units(text) if unit.kind in kinds for span in unit_sentence_spans(text, unit)]


def _lstrip(text: str, start: int, end: int) -> int:
    while start < end and text[start].isspace():
        start += 1
    return start


CITATION_PATTERN = r"\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]"
# An answer's sentence ends at . ! ? (optionally followed by closing quotes/brackets) and whitespace.
_ANSWER_SENTENCE_END = re.compile(r"((?<=[.!?])[\"')\]]*\s+)")    # captured: a continued sentence keeps it
# What follows a full stop in lower case or as an en or em dash continues the sentence, as does anything
# after "e.g." / "i.e." / "cf." / "vs." or a stop with no word before it, unless a citation closed it
# ("… [1]. fs_read …"). The page (serve_app/static/index.html, splitSentences) applies the same rule.
_CONTINUES = re.compile(r"[a-z\u2013\u2014]")
_WORDY = re.compile(r"\w")      # a "sentence" of no word ("?") is a symbol the next one names: "? (question mark) …"
_ABBREVIATED_END = re.compile(r"\b(?:" + "|".join(map(re.escape, _ABBREVIATIONS)) + r")\.$")
_STOP_ONLY = re.compile(r"^\s*[.!?]+[\"')\]]*\s*$")
_CITED_END = re.compile(r"\]\s*[.!?]+$")
_LEADING_CITATIONS = re.compile(r"^(\s*" + CITATION_PATTERN.replace("(", "(?:", 1) + ")+")
# Citations that end a sentence, as the page reads them: followed by white space, the end, or a stop.
_CITATIONS_THEN_END = re.compile(_LEADING_CITATIONS.pattern + r"(?=\s|[.!?]+[\"')\]]*$|$)")


def split_sentences(answer: str) -> list[str]:
    """Sentences, with a citation that follows the full stop ("... end. [2]") kept
    on the sentence it closes."""
    parts: list[str] = []
    pieces = _ANSWER_SENTENCE_END.split(answer.strip())         # text, separator, text, …
    for at in range(0, len(pieces), 2):
        part, closing = pieces[at], pieces[at - 1].rstrip() if at else ""
        if parts and (_CONTINUES.match(part) or not _WORDY.search(parts[-1])
                      or _ABBREVIATED_END.search(parts[-1]) and not _CITATIONS_THEN_END.match(part)) \
                and not _CITED_END.search(parts[-1]):
            parts[-1] += closing + " " + part    # "e.g. the …", "TLS?\" — no …", "f(x,...) returns": one sentence
        elif part.strip():
            parts.append(part)
    sentences: list[str] = []
    for part in parts:
        lead = _LEADING_CITATIONS.match(part)
        if lead and sentences:
            abbreviated = _ABBREVIATED_END.search(sentences[-1])
            sentences[-1] += " " + lead.group(0).strip()
            part = part[lead.end():]
            if abbreviated and _STOP_ONLY.match(part):      # "Done e.g. [3]. Next.": the stop closes it
                sentences[-1] += part.strip()
                continue
        if part.strip():
            sentences.append(part.strip())
    return sentences

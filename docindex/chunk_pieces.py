"""Prose cut for the chunker: sentences and lines, with the separator each had before it.

A paragraph too long for one chunk is cut between these pieces, and the overlap
carried into the next chunk is made of them (chunking.py). A line break counts
as a boundary (a list's items are lines), but a hard-wrapped sentence's lines
are joined again first (`sentences`), so no chunk starts mid-sentence.
"""
from __future__ import annotations

import re

SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s+|(?<=[。！？；])|\n+")


LIST_MARKER = re.compile(r"(?:^|\n)\s*\d+[.)]$")   # "4." opening a numbered item is not a sentence


_ITEM_START = re.compile(r"(?:[-*+]|\d+[.)])\s")


def pieces(text: str) -> list[tuple[str, str]]:
    """Sentences and lines of prose, each with the separator to put before it: "\n" before a
    list item that began a line, else " " (a wrapped line joins the one before it); a numbered
    item's marker stays with its text."""
    out: list[tuple[str, str]] = []
    position, broke = 0, False

    def add(piece: str) -> None:
        out.append((piece, "\n" if broke and _ITEM_START.match(piece) else " "))

    for boundary in SENTENCE_END.finditer(text):
        piece = text[position:boundary.start()]
        if not piece.strip() or LIST_MARKER.search(piece.rstrip()):
            continue
        add(piece.strip())
        position, broke = boundary.end(), "\n" in boundary.group()
    if text[position:].strip():
        add(text[position:].strip())
    return out


_SENTENCE_CLOSED = re.compile(r"[.!?:;。！？；…][\"'’”)\]*_`]*$")


def wrapped(before: str, after: str) -> bool:
    """A line break inside a sentence: the line before does not end one and the next line is
    no list item (hard-wrapped Markdown, the source lines Sphinx keeps in its HTML)."""
    return not _SENTENCE_CLOSED.search(before.rstrip()) and not _ITEM_START.match(after.lstrip())


def sentences(text: str) -> list[tuple[str, str]]:
    """`pieces` with a hard-wrapped sentence's lines joined again: a chunk that starts with
    the carried tail of the one before, or a long paragraph's next piece, starts at a
    sentence, not mid-sentence ("[creating a .dockerignore file](../builder.md#…)." was the
    carried last line of "The builder reference contains detailed information on …")."""
    out: list[tuple[str, str]] = []
    for piece, sep in pieces(text):
        if out and wrapped(out[-1][0], piece):
            out[-1] = (f"{out[-1][0]} {piece}", out[-1][1])
        else:
            out.append((piece, sep))
    return out

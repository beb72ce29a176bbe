"""A whole-manual PDF or text file that only repeats the pages ingested with it (HTML, Markdown, reST, AsciiDoc).

Documentation often ships one manual in several formats in one folder: debmake-doc's `html/`
pages beside `debmake-doc.en.pdf` and `debmake-doc.en.txt.gz`. Pointed at the folder, ingest
read all three, and the copies took the pages' places: 12 questions, gold page first / top 5 /
MRR@10 5 / 10 / 0.604 with them, 8 / 12 / 0.819 with the pages alone (stop 41,
`benchmarks/unseen_manuals.py`). A PDF or `.txt` whose name matches its HTML build is skipped at
discovery (discover.py, no read); one that does not (`debmake-doc.en.pdf` beside `html/`) is
held until the run's pages are read, then skipped when COPY_SHARE of its text is in them.

Text is compared as word 6-grams (lower case, words only: a PDF's line breaks, hyphens and
page furniture break few of them), sampled by hash (1 in SAMPLE) so the pages' set stays small
(~1/8 of their words). Only when the run has HTML pages and a PDF or text file to compare.
"""
from __future__ import annotations

import re
import zlib
from collections.abc import Iterable
from pathlib import Path

from .bounds import COPY_GROUP
from .extract import reader_suffix

__all__ = ["COPY_GROUP", "COPY_REASON", "COPY_SHARE", "CopyCheck", "is_copy_format", "is_page", "shingles"]

COPY_SUFFIXES = (".pdf", ".txt")        # whole-manual formats that repeat an HTML build
PAGE_SUFFIXES = (".html", ".htm", ".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".asc")   # structured
COPY_SHARE = 0.5                        # of a file's sampled 6-grams found in the pages: a copy
SHINGLE = 6
SAMPLE = 8
MIN_SHINGLES = 20                       # fewer sampled 6-grams (a one-page note): never a copy
_WORD = re.compile(r"\w+")
COPY_REASON = ("a copy of the pages ingested with it ({share:.0%} of its text is in them; "
               "name the file alone to ingest it)")


def is_copy_format(path: Path) -> bool:
    return reader_suffix(path) in COPY_SUFFIXES


def is_page(path: Path) -> bool:
    return reader_suffix(path) in PAGE_SUFFIXES


def shingles(texts: Iterable[str]) -> set[int]:
    """The sampled word 6-grams of `texts` (each text on its own: no 6-gram spans two)."""
    found: set[int] = set()
    for text in texts:
        words = _WORD.findall(text.lower())
        for at in range(len(words) - SHINGLE + 1):
            key = zlib.crc32(" ".join(words[at:at + SHINGLE]).encode())
            if key % SAMPLE == 0:
                found.add(key)
    return found


class CopyCheck:
    """The pages' 6-grams, then the share of a file's 6-grams found among them."""

    def __init__(self) -> None:
        self.pages: set[int] = set()

    def add_pages(self, texts: Iterable[str]) -> None:
        self.pages |= shingles(texts)

    def share(self, texts: Iterable[str]) -> float | None:
        """The share of `texts`' sampled 6-grams in the pages; None when there are too few to say."""
        own = shingles(texts)
        if len(own) < MIN_SHINGLES:
            return None
        return len(own & self.pages) / len(own)

"""HTML pages that read but are no document of their own: a redirect (a meta refresh and almost no
text) and a source file numbered line by line. html_reader raises bounds.NotADocument for them, so
ingest skips them and reports them by kind."""
from __future__ import annotations

import re
from typing import Any

from .blocks import Block


def visible(text: str | None) -> int:
    """The characters of `text` a reader sees (not whitespace)."""
    return sum(not c.isspace() for c in text or "")


SOURCE_LISTING_SHARE = 0.9
REDIRECT_MAX_CHARS = 200    # "The node you are looking for is at XREFcsvread.", "Redirecting… Click here if …"
_REFRESH_URL = re.compile(     # "0; url=page.html", "0;index.html" (the "url=" is optional)
    r"^\s*\d*(?:\.\d*)?\s*[;,]\s*(?:url\s*=\s*)?['\"]?\s*([^'\"\s][^'\"]*)", re.IGNORECASE)


def source_listing(blocks: list[Block], numbered: int) -> bool:
    """A page that is one source file, numbered line by line: Doxygen's `*_source.html` (83 of
    SDL2's 469 pages: each header again, its license in 81 of them), the code its documented
    pages already say. True when code is SOURCE_LISTING_SHARE of its text, over 40 lines, and most
    of them numbered: HAProxy's manual is plain text in `<pre>` blocks (its 2.6 MB
    configuration.html all code by tag) and is a document."""
    code = [block.text for block in blocks if block.kind == "code"]
    lines = sum(text.count("\n") - 1 for text in code)
    shown = sum(visible(block.text) for block in blocks)
    return (lines > 40 and 2 * numbered >= lines
            and sum(visible(text) for text in code) >= SOURCE_LISTING_SHARE * max(shown, 1))


def numbered_lines(tree: Any) -> int:
    """How many code lines carry a line number: Doxygen's and Pygments' inline numbers, one element a
    line, and Pygments' table of numbers (`td.linenos`), a line each."""
    inline = len(tree.css("span.lineno, span.linenos"))
    return inline + sum((cell.text(deep=True) or "").count("\n") + 1 for cell in tree.css("td.linenos"))


def redirect_target(tree: Any) -> str | None:
    """Where a `<meta http-equiv="refresh" content="0; url=…">` sends the reader, or None. With
    (almost) no text of its own such a page is a redirect, not a document: GNU Octave's texinfo
    manual is 568 pages and 2,324 of them ("XREFcsvread.html": "The node you are looking for is
    at XREFcsvread."), which were a quarter of its chunks and came up among the pages found first;
    Sphinx, MkDocs, Jekyll and Hugo redirects are the same shape. A refresh inside <noscript> on a page
    with a heading is a fallback for browsers without scripts, not the page's redirect (Sphinx's
    reredirects have no heading)."""
    for meta in tree.css("meta[http-equiv]"):
        if meta.parent is not None and meta.parent.tag == "noscript" and tree.css_first("h1, h2, h3") is not None:
            continue        # LibreOffice's help: every page, titled, sends a browser without scripts to "noscript.html"
        if (meta.attributes.get("http-equiv") or "").strip().lower() == "refresh":
            found = _REFRESH_URL.match(meta.attributes.get("content") or "")
            if found:
                return found.group(1).strip()
    return None

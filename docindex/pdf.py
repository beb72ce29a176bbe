"""PDF → blocks: text from pypdfium2 (fast), headings from the pypdf outline.

- **Title**: the document's metadata Title; else the first page's largest
  text (a cover title set bigger than the body), else None (the caller uses
  the file name). Never the first outline entry: that is a chapter
  ("1. Introduction"), and as the title it would start every heading path.
- **Headings**: one per outline entry, at the depth of its own nesting in the
  outline, placed where its title first appears on its page (or at the top
  of that page when the text does not contain it).
- **Front matter**: text before the first heading (a cover page) gets a
  heading of its own, the title (or "Front matter"), so its section has a
  real anchor instead of an empty one.
- **Hyphenated words** at a line's end are joined (`_dehyphenated`).
- **Running headers and footers**: a line among the first or last
  `EDGE_LINES` of a page that recurs (digits aside: "Page 3 of 9") at the
  same edge on at least `RUNNING_SHARE` of the pages (and on 2 or more) is
  dropped: it is layout, not content, and would otherwise sit in every chunk.
"""
from __future__ import annotations

import io
import math
import re
from collections import Counter
from typing import Any

from . import bounds
from .blocks import Block, Extracted
from .bounds import UnreadableFile

EDGE_LINES = 2              # lines at the top and at the bottom of a page that may be running text
RUNNING_SHARE = 0.6         # ... when they recur on this share of the pages
TITLE_SIZE_RATIO = 1.15     # the cover title is at least this much larger than the body text
BODY_PAGES = 3              # the body text size: the commonest size on the first pages (a cover has little text)
MAX_TITLE_CHARS = 200
FRONT_MATTER = "Front matter"


def parse_pdf(data: bytes) -> Extracted:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        raise UnreadableFile(f"not a readable PDF ({exc})") from None
    try:
        pages: list[str] = []
        total = 0
        sized: list[tuple[str, list[float]]] = []          # the first pages' characters and font sizes
        for number, page in enumerate(pdf):
            textpage = page.get_textpage()
            pages.append(_dehyphenated(textpage.get_text_range().replace("\r\n", "\n").replace("\r", "\n")))
            if number < BODY_PAGES:
                sized.append(char_sizes(textpage))
            textpage.close()
            page.close()
            total += len(pages[-1])
            if total > bounds.MAX_PDF_TEXT_CHARS:    # compressed streams can expand far past the file size
                raise UnreadableFile(f"more than {bounds.MAX_PDF_TEXT_CHARS:,} characters of text")
        meta_title = " ".join((pdf.get_metadata_dict().get("Title") or "").split())
    finally:
        pdf.close()
    title = meta_title or largest_text(sized)
    pages = strip_running_lines(pages)
    outline = pdf_outline(data)
    blocks: list[Block] = []
    for number, page_text in enumerate(pages):
        cursor = 0
        for heading, page, level in outline:
            if page != number:
                continue
            found = page_text.find(heading, cursor)
            if found >= 0:
                blocks.extend(paragraphs(page_text[cursor:found]))
                cursor = found + len(heading)
            blocks.append(Block("heading", heading, level))
        blocks.extend(paragraphs(page_text[cursor:]))
    if blocks and blocks[0].kind != "heading" and (outline or title):
        blocks.insert(0, Block("heading", title or FRONT_MATTER, 1))
    return Extracted(title or None, blocks, {"pages": len(pages)})


def _dehyphenated(text: str) -> str:
    """pdfium marks a hyphen that breaks a word at a line's end as U+FFFE and drops the line break:
    shown as "coordi<U+FFFE>nates" (gnuplot's manual: 98 in 1,391 chunks) and two tokens for search.
    The word is joined; a compound broken at its own hyphen ("user-defined") loses it. Soft hyphens
    (U+00AD) are invisible by definition."""
    return text.replace("\ufffe", "").replace("\u00ad", "")


def char_sizes(textpage: object) -> tuple[str, list[float]]:
    """A page's text and each character's font size (0 for spaces and line breaks);
    ("", []) when characters and text do not line up (surrogate pairs)."""
    import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

    count = textpage.count_chars()                         # type: ignore[attr-defined]
    text = textpage.get_text_range()                       # type: ignore[attr-defined]
    if count <= 0 or len(text) != count:
        return "", []
    raw = textpage.raw                                     # type: ignore[attr-defined]
    return text, [0.0 if text[i].isspace() else round(pdfium_c.FPDFText_GetFontSize(raw, i), 1)
                  for i in range(count)]


def largest_text(pages: list[tuple[str, list[float]]]) -> str | None:
    """The first page's text in its largest font, when that is clearly larger than the body
    text (the commonest size over the first pages)."""
    weights = Counter(size for _, sizes in pages for size in sizes if size > 0)
    if not pages or not weights:
        return None
    body = weights.most_common(1)[0][0]
    text, sizes = pages[0]
    top = max(sizes, default=0.0)
    if top < body * TITLE_SIZE_RATIO:
        return None
    picked = "".join(ch if size >= top * 0.95 or (size == 0.0 and ch.isspace()) else "\n"
                     for ch, size in zip(text, sizes))
    lines = [" ".join(line.split()) for line in picked.splitlines()]
    title = " ".join(line for line in lines if line)
    return title[:MAX_TITLE_CHARS] or None


_DIGITS = re.compile(r"\d+")


def _shape(line: str) -> str:
    """A line as it recurs across pages: digits (page numbers, dates) and spacing do not count."""
    return _DIGITS.sub("#", " ".join(line.split())).lower()


def strip_running_lines(pages: list[str]) -> list[str]:
    """Pages without the lines that recur at the same edge (top or bottom) of most pages."""
    if len(pages) < 2:
        return pages
    edges: list[tuple[list[int], list[int]]] = []       # per page: indexes of its top and bottom lines
    seen: dict[str, Counter[str]] = {"top": Counter(), "bottom": Counter()}
    for text in pages:
        lines = text.split("\n")
        filled = [i for i, line in enumerate(lines) if line.strip()]
        top, bottom = filled[:EDGE_LINES], filled[-EDGE_LINES:]
        edges.append((top, bottom))
        seen["top"].update({_shape(lines[i]) for i in top})
        seen["bottom"].update({_shape(lines[i]) for i in bottom})
    need = max(2, math.ceil(RUNNING_SHARE * len(pages)))
    running = {edge: {shape for shape, n in counter.items() if n >= need} for edge, counter in seen.items()}
    out = []
    for text, (top, bottom) in zip(pages, edges):
        lines = text.split("\n")
        drop = {i for i in top if _shape(lines[i]) in running["top"]}
        drop |= {i for i in bottom if _shape(lines[i]) in running["bottom"]}
        out.append("\n".join(line for i, line in enumerate(lines) if i not in drop))
    return out


def pdf_outline(data: bytes) -> list[tuple[str, int, int]]:
    """(title, page index, level 1-6) for each outline entry, level = depth in the outline's
    own nesting; [] if none or unreadable."""
    try:
        from pypdf import PdfReader

        reader = PdfReader(io.BytesIO(data))
        entries: list[tuple[str, int, int]] = []

        def visit(items: list[Any], level: int) -> None:
            for item in items:
                if isinstance(item, list):        # the children of the entry just before
                    visit(item, level + 1)
                    continue
                page = reader.get_destination_page_number(item)
                title = " ".join(str(item.title or "").split())
                if title and page is not None and page >= 0:
                    entries.append((title, page, min(level, 6)))

        visit(reader.outline, 1)
        return entries
    except Exception:  # a broken outline only costs us the headings
        return []


def paragraphs(text: str) -> list[Block]:
    return [Block("para", p.strip()) for p in re.split(r"\n[ \t]*\n", text) if p.strip()]

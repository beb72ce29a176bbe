"""HTML pages as blocks: headings, paragraphs, code and data tables, without the page's chrome.

A DocBook block's title (`<p class="title">` over a sidebar, admonition, example, figure or table:
the Debian Administrator's Handbook's "TIP Listing a package contents and finding a file's
package", PostgreSQL's "Table 9.1. Comparison Operators") is a bold line of its own: searched
and embedded with its block, never quoted as a sentence (sentences.is_label). Read as a
paragraph, it was an answer's sentence: "TIP Listing a package contents and finding a file's
package [1]." A Sphinx rubric and a paragraph that is one bold run (pytest's "Run tests by keyword
expressions" over its command) are such labels too, and so is a picture's short caption (`_image_caption`);
a label right over a short code block is quoted with it (quotable.LABELS_CARRY_CODE). A Sphinx field
list's term and its one-paragraph body are one paragraph, ended as a sentence ("Exit code 5: No tests
were collected.").

A data table (2+ rows and columns, no cell with more than one paragraph or any other block)
becomes one paragraph holding a Markdown table, one row a line, so it is chunked, embedded and
quoted like one (docindex/table_rows.py): "on-failure — Restart only if the container exits
with a non-zero exit status". Its cells were separate paragraphs, and Node.js's
version-history tables were quoted as terms: "v12.12.0, Added in: v12.12.0: Enable Source Map
v3 support for stack traces". A layout table, or PostgreSQL's function tables (a signature, its
text and an example in one cell, which the signature-term rule reads), is walked as before.
"""
from __future__ import annotations

import re
from typing import Any

from .blocks import Block, Extracted
from .bounds import REDIRECT_GROUP, NotADocument

_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_LABEL_CLASSES = {"title", "rubric"}
_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "button", "form"}
_BLOCK = {
    "p", "div", "section", "article", "main", "li", "ul", "ol", "table", "tr", "td", "th",
    "blockquote", "dl", "dt", "dd", "header", "footer", "nav", "aside", "figure",
    "figcaption", "details", "summary", "hr", "body", "html",
}


_PERMALINKS = ("a.headerlink, a.hash-link, a.anchor-link, .viewcode-link, .viewcode-back, "   # + Sphinx "[source]"
               "a.copiable-anchor, a.copiable-link")    # texinfo 6.8-7's "¶": in 41 % of Octave's chunks
# Page chrome that documentation generators put around the text: navigation bars, sidebars,
# footers, search boxes. Kept, each became a chunk of its own ("Prev | Up | Home | Next",
# "Next topic: copy — Shallow and deep copy operations", "Part of the git(1) suite") whose
# heading path matches any question about its page: 17 % of the PostgreSQL manual's chunks
# and 17 % of the Python docs' were such bodies under 100 characters.
_CHROME = ", ".join((
    "nav", "footer", "[role=navigation]", "[role=search]", "[role=contentinfo]", "[role=banner]",
    "div.navheader", "div.navfooter",                   # DocBook (the PostgreSQL manual)
    "div.sphinxsidebar", "div.related", "div.footer",   # Sphinx (the Python docs)
    "div#footer",                                       # AsciiDoc (git's manual pages)
    "div#menu-bar",                                     # mdBook (its <h1> is the book's name on every page)
    "dialog", "[role=dialog]", "[role=alertdialog]",    # modals: search boxes, keyboard-shortcut tables
))

# Link-dense blocks: navigation whatever a generator calls it (menus, breadcrumbs, "on this page"
# and "see also" link lists, language bars of links).
_LINK_BLOCKS = "div, ul, ol, dl, table, p"
LINK_DENSITY = 0.75     # share of a block's visible characters inside links at which it is navigation
MIN_LINKS = 3
_PAGINATION = re.compile(r"^[\s«»‹›←→|·]*(?:(?:previous|prev|next|up|home|top)[\s«»‹›←→|·]*)+$", re.IGNORECASE)
_PAGINATION_BLOCKS = {"div", "p", "span", "ul", "ol", "li"}
_SKIP_LINK = re.compile(r"\s*(?:skip|jump) to (?:the )?(?:main )?(?:content|navigation|nav|menu|search|article)\s*$",
                        re.IGNORECASE)


def _link_dense(tree: Any) -> list[Any]:
    """The outermost blocks of `tree` that are navigation by link density (no heading or code inside)."""
    found: list[Any] = []
    ids: set[int] = set()
    for node in tree.css(_LINK_BLOCKS):
        if _inside(node, ids) or node.css_first("h1, h2, h3, h4, h5, h6, pre") is not None:
            continue
        links = node.css("a")
        if len(links) < MIN_LINKS:
            continue
        total, linked = _visible_and_linked(node, links)
        if total and linked >= LINK_DENSITY * total and not (PROSE_KEPT and _holds_prose(node)):
            found.append(node)
            ids.add(node.mem_id)
    return found


# A block holding a paragraph of prose is not navigation as a whole, however many links sit beside it:
# PostgreSQL's part pages wrap their introduction and their table of contents in one div.partintro,
# 80 % link text, and the introduction went with it. Its link-dense parts are still found on their own.
PROSE_KEPT = True
PROSE_MIN_CHARS = 80


def _holds_prose(node: Any) -> bool:
    for paragraph in node.css("p"):
        total, linked = _visible_and_linked(paragraph, paragraph.css("a"))
        if total >= PROSE_MIN_CHARS and linked < LINK_DENSITY * total:
            return True
    return False


def _visible_and_linked(node: Any, links: list[Any]) -> tuple[int, int]:
    """The visible characters of `node`, and how many of them are inside `links` (its <a> elements)."""
    return _visible(node.text(deep=True)), sum(_visible(a.text(deep=True)) for a in links)


def _pagination(tree: Any) -> list[Any]:
    """The outermost blocks whose whole text is pagination words around a link of them: found from the
    links up, so a page is read once per such link, not once per block."""
    found: list[Any] = []
    ids: set[int] = set()
    paginates: dict[int, bool] = {}     # each block's text read once, however many links it holds

    def only_pagination(node: Any) -> bool:
        if node.mem_id not in paginates:
            paginates[node.mem_id] = bool(_PAGINATION.match(node.text(deep=True) or ""))
        return paginates[node.mem_id]

    for link in tree.css("a"):
        if not _PAGINATION.match(link.text(deep=True) or ""):
            continue
        top, node = None, link.parent
        while node is not None and node.tag in _PAGINATION_BLOCKS and only_pagination(node):
            top, node = node, node.parent
        if top is not None and top.mem_id not in ids:
            found.append(top)
            ids.add(top.mem_id)
    return [node for node in found if not _inside(node, ids)]      # the outermost ones


def _inside(node: Any, ids: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


def _visible(text: str | None) -> int:
    return sum(not c.isspace() for c in text or "")


def parse_html(text: str) -> Extracted:
    """Headings, paragraphs and code of an HTML page, without its chrome (`_CHROME`), its
    link-dense navigation and its skip links. A page with no text outside them (a chunked
    manual's table of contents, a 404 page, a site map) keeps its headings only: it says nothing
    its linked pages do not. It used to be read whole, chrome and all: Wireshark's `index.html`
    was 23 chunks of section titles, among the 5 pages found first for 9 of 17 questions, and
    MkDocs Material's 404 page the whole site's menu."""
    return _parse_html(text, drop_chrome=True)


def html_fragment(text: str) -> list[Block]:
    """The blocks of a piece of HTML inside another format (raw HTML in Markdown), chrome and all."""
    return _parse_html(text, drop_chrome=False).blocks


def _parse_html(text: str, *, drop_chrome: bool) -> Extracted:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(text)
    for permalink in tree.css(_PERMALINKS):     # Sphinx/MkDocs "¶", Docusaurus "#", "[source]": not text
        permalink.decompose()
    for category in tree.css("dt span.category, dt span.category-def"):
        if not any(ch.isalnum() for ch in category.text(deep=True) or ""):
            category.decompose()                # texinfo's empty deffn category: ": x = csvread (filename)"
    _join_field_terms(tree)
    if drop_chrome:
        for chrome in tree.css(_CHROME):
            if chrome.parent is not None:       # not inside chrome already removed
                chrome.decompose()
        for navigation in _link_dense(tree):
            navigation.decompose()
        for link in tree.css('a[href^="#"]'):
            if _SKIP_LINK.match(link.text(deep=True) or ""):    # "Skip to content": for screen readers
                link.decompose()
        for node in _pagination(tree):                          # "« Previous Next »" (Read the Docs' version bar)
            node.decompose()
    title_node = tree.css_first("title")
    blocks: list[Block] = []
    buffer: list[str] = []
    marker = ""             # a list item's "- " / "3. ", put before its first paragraph

    def flush() -> None:
        nonlocal marker
        joined = " ".join("".join(buffer).split())
        if joined:
            blocks.append(Block("para", marker + joined))
            marker = ""
        buffer.clear()

    def walk(node: Any) -> None:
        nonlocal marker
        items = 0
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "li":         # an item, as Markdown writes one: a lead-in's list is carried with it
                flush()
                items += 1
                marker = f"{items}. " if node.tag == "ol" else "- "
                walk(child)
                flush()
                marker = ""
            elif tag == "-text":
                buffer.append(child.text(deep=False) or "")
            elif tag in _SKIP or tag == "-comment":
                continue
            elif tag in _HEADINGS:
                flush()
                heading = inline_text(child)
                blocks.append(Block("heading", heading, _HEADINGS[tag]))
            elif tag == "pre":
                flush()
                code = (child.text(deep=True) or "").strip("\n")
                if code.strip():
                    blocks.append(Block("code", f"```\n{code}\n```"))
            elif tag == "br":
                buffer.append("\n")
            elif tag == "p" and (_LABEL_CLASSES & set((child.attributes.get("class") or "").split())
                                 or _bold_only(child)):
                flush()             # a DocBook block's title: "TIP Listing a package contents …" (a sidebar's),
                #                     a Sphinx rubric, a paragraph that is one bold run (a pseudo-heading)
                caption = inline_text(child)
                if caption:
                    blocks.append(Block("para", f"**{caption}**"))
            elif caption := _image_caption(child):
                flush()             # what a picture shows, which no answer can: a label, as a block's title is
                blocks.append(Block("para", f"**{caption}**"))
            elif tag == "table" and (table := markdown_table(child)):
                flush()
                blocks.append(Block("para", table))
            elif tag in _BLOCK:
                flush()
                walk(child)
                flush()
            else:
                walk(child)

    root = tree.body or tree.root
    if root is not None:
        walk(root)
    flush()
    target = _redirect_target(tree) if drop_chrome else None
    if target and sum(_visible(block.text) for block in blocks) <= REDIRECT_MAX_CHARS:
        raise NotADocument(f"a redirect to {target[:200]} (no text of its own)", REDIRECT_GROUP)
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    if not title:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    return Extracted(title or None, blocks)


REDIRECT_MAX_CHARS = 200    # "The node you are looking for is at XREFcsvread.", "Redirecting… Click here if …"
_REFRESH_URL = re.compile(     # "0; url=page.html", "0;index.html" (the "url=" is optional)
    r"^\s*\d*(?:\.\d*)?\s*[;,]\s*(?:url\s*=\s*)?['\"]?\s*([^'\"\s][^'\"]*)", re.IGNORECASE)


def _redirect_target(tree: Any) -> str | None:
    """Where a `<meta http-equiv="refresh" content="0; url=…">` sends the reader, or None. With
    (almost) no text of its own such a page is a redirect, not a document: GNU Octave's texinfo
    manual is 568 pages and 2,324 of them ("XREFcsvread.html": "The node you are looking for is
    at XREFcsvread."), which were a quarter of its chunks and came up among the pages found first;
    Sphinx, MkDocs, Jekyll and Hugo redirects are the same shape."""
    for meta in tree.css("meta[http-equiv]"):
        if (meta.attributes.get("http-equiv") or "").strip().lower() == "refresh":
            found = _REFRESH_URL.match(meta.attributes.get("content") or "")
            if found:
                return found.group(1).strip()
    return None


_CELL_BLOCKS = "div, pre, ul, ol, dl, table, blockquote, h1, h2, h3, h4, h5, h6"


def markdown_table(table: Any) -> str:
    """A data table as a Markdown table (`| a | b |` rows, the first followed by a separator row), or ""
    for a table that is layout: under 2 rows or 2 columns, or a cell holding more than one paragraph or
    any other block (PostgreSQL's function tables: signature, description and example in one cell,
    which the walk reads as a term and its text)."""
    rows = table.css("tr")
    if len(rows) < 2 or len(table.css(_CELL_BLOCKS)) > 1:      # css() finds the table itself too
        return ""
    kept: list[list[str]] = []
    for tr in rows:
        cells = tr.css("th, td")
        if any(len(cell.css("p")) > 1 for cell in cells):
            return ""
        texts = [inline_text(cell).replace("|", "\\|") for cell in cells]
        if any(texts):
            kept.append(texts)
    if len(kept) < 2 or len(kept[0]) < 2:
        return ""
    lines = ["| " + " | ".join(texts) + " |" for texts in kept]
    return "\n".join([lines[0], "|" + "---|" * len(kept[0]), *lines[1:]])


CAPTION_MAX_WORDS = 25  # a longer caption explains more than its picture: read as text


def _image_caption(node: Any) -> str:
    """The text of a picture's caption (HTML's <figcaption>, DocBook's `div.caption` in its
    `div.mediaobject`), when short; "" for anything else. GIMP's manual captions each screenshot
    ("Before applying the command", "The layer after it has been rotated 30° clockwise"): read as
    paragraphs they were quoted as an answer's sentences, and taken for the term the paragraph
    after them defines ("Original image, “Red Eye Removal” applied: The aim of this filter …")."""
    if node.tag != "figcaption" and not (
            node.tag == "div" and "caption" in (node.attributes.get("class") or "").split()
            and node.parent is not None and "mediaobject" in (node.parent.attributes.get("class") or "").split()):
        return ""
    if node.css_first("pre, table, ul, ol, dl") is not None:
        return ""
    text = inline_text(node)
    return text if 0 < len(text.split()) <= CAPTION_MAX_WORDS else ""


def inline_text(node: Any) -> str:
    """A heading's, label's or table cell's text as a paragraph's is read: inline elements joined as
    written (“Red Eye Removal”, "`path`, `value`"), a space only where a block or <br> breaks the line.
    Joined with a space between every node, they read "“ Red Eye Removal ”" and "path , value"."""
    parts: list[str] = []

    def collect(parent: Any) -> None:
        for child in parent.iter(include_text=True):
            if child.tag == "-text":
                parts.append(child.text(deep=False) or "")
            elif child.tag in _SKIP or child.tag == "-comment":
                continue
            elif child.tag == "br" or child.tag in _BLOCK:
                parts.append(" ")
                collect(child)
                parts.append(" ")
            else:
                collect(child)

    collect(node)
    return " ".join("".join(parts).split())


def _bold_only(paragraph: Any) -> bool:
    """A <p> whose only content is one <strong> or <b> (pytest's "Run tests by keyword expressions"
    over its command): a label, as a Markdown writer's **pseudo-heading** is."""
    parts = [node for node in paragraph.iter(include_text=True)
             if node.tag != "-text" or (node.text(deep=False) or "").strip()]
    return len(parts) == 1 and parts[0].tag in ("strong", "b")


def _join_field_terms(tree: Any) -> None:
    """A Sphinx field list's term and its one-paragraph body as one paragraph: pytest's "Exit code 5:" over
    "No tests were collected" was two, and neither said what exit code 5 means. A body with a list or
    code ("Parameters:" over its items) keeps its term as a lead-in line."""
    for term in tree.css("dl.field-list > dt"):
        body = term.next
        while body is not None and body.tag == "-text":
            body = body.next
        if body is None or body.tag != "dd" or body.css_first("ul, ol, pre, table, dl") is not None:
            continue
        paragraphs = body.css("p")
        name = inline_text(term).rstrip(":").rstrip()
        if len(paragraphs) == 1 and paragraphs[0].child is not None and name:
            paragraphs[0].child.insert_before(f"{name}: ")
            if (paragraphs[0].text(deep=True) or "").rstrip()[-1:] not in (".", "!", "?", ":", ";"):
                paragraphs[0].insert_child(".")     # a sentence, not a term line for the next paragraph
            term.decompose()

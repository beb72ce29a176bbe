"""Raw HTML inside Markdown, read as a renderer shows it.

A line that opens with a block-level tag starts an HTML block (CommonMark's kinds 1 and 6),
which runs to the next blank line, or for `<pre>` to its `</pre>`. Read as Markdown its
tags were text: Docker's run reference was quoted as "</td> </tr> <tr> <td> <span
style=…> <strong>on-failure</strong>(:max-retries)". Now the block is read as HTML
(extract.parse_html's walk: headings, paragraphs, code), and an HTML table becomes a
Markdown table, one row a line, so it is chunked, embedded and quoted like one
(docindex/table_rows.py): "on-failure[:max-retries] — Restart only if the container
exits with a non-zero exit status". Inline tags in a paragraph read as their text.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .blocks import Block

_BLOCK_START = re.compile(
    r"^ {0,3}</?(?:address|article|aside|blockquote|center|details|dialog|dd|div|dl|dt|figcaption|figure|footer"
    r"|h[1-6]|header|hr|li|main|nav|ol|p|picture|section|summary|table|tbody|td|tfoot|th|thead|tr|ul|pre)"
    r"(?:\s|/?>|$)", re.I)
_PRE_START = re.compile(r"^\s*<pre(?:\s|>|$)", re.I)
_PRE_END = re.compile(r"</pre>", re.I)
_PLACEHOLDER = "\ue000table{}\ue000"          # private-use characters: never in a document's text
# Inline tags a renderer shows as their text ("Press <kbd>q</kbd>"); not a placeholder like `<name>`.
_INLINE_TAG = re.compile(r"</?(?:a|abbr|b|br|cite|code|del|em|font|i|img|ins|kbd|mark|q|s|samp|small|span|strong"
                         r"|sub|sup|u|var)(?:\s[^<>]*)?/?>", re.I)
_CODE_SPAN = re.compile(r"(`+).+?\1")


def without_inline_tags(text: str) -> str:
    """`text` with inline HTML tags removed, outside code spans."""
    if "<" not in text:
        return text
    out, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [_INLINE_TAG.sub("", text[at:span.start()]), span.group()]
        at = span.end()
    return "".join(out) + _INLINE_TAG.sub("", text[at:])


def starts_block(line: str) -> bool:
    return bool(_BLOCK_START.match(line))


def continues_block(lines: list[str], line: str) -> bool:
    """Whether `line` belongs to the HTML block `lines` started."""
    if _PRE_START.match(lines[0]) and not any(_PRE_END.search(kept) for kept in lines):
        return True
    return bool(line.strip())


def html_block(lines: list[str], parse: Callable[[str], list[Block]]) -> list[Block]:
    """The blocks of one HTML block; `parse` reads HTML text into blocks (extract's HTML reader)."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser("\n".join(lines))
    tables: list[str] = []
    for table in tree.css("table"):
        if len(table.css("table")) > 1 or _inside_table(table):     # css() finds the node itself too
            continue                    # nested tables stay as their cells' text
        markdown = _markdown_table(table)
        if markdown:
            table.replace_with(_PLACEHOLDER.format(len(tables)))
            tables.append(markdown)
    if not tables:
        return parse("\n".join(lines))
    blocks = []
    for block in parse(tree.html or ""):
        parts = re.split("\ue000table(\\d+)\ue000", block.text)
        if len(parts) == 1:
            blocks.append(block)
            continue
        for i, part in enumerate(parts):        # text, table, text, …
            text = tables[int(part)] if i % 2 else part.strip()
            if text:
                blocks.append(Block("para", text))
    return blocks


def _inside_table(node: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag == "table":
            return True
        parent = parent.parent
    return False


def _markdown_table(table: Any) -> str:
    """`| a | b |` rows, the first followed by a separator row (a Markdown table needs one)."""
    rows = []
    for tr in table.css("tr"):
        cells = [" ".join((cell.text(deep=True, separator=" ") or "").split()).replace("|", "/")
                 for cell in tr.css("th, td")]
        if any(cells):
            rows.append("| " + " | ".join(cells) + " |")
    if not rows:
        return ""
    width = rows[0].count(" | ") + 1
    return "\n".join([rows[0], "|" + "---|" * width, *rows[1:]])

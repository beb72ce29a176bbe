"""HTML tables and raw HTML inside Markdown, read as a renderer shows them.

A line that opens with a block-level tag starts an HTML block in Markdown (CommonMark's
kinds 1 and 6), which runs to the next blank line, or for `<pre>` to its `</pre>`. Read as
Markdown its tags were text: Docker's run reference was quoted as "</td> </tr> <tr> <td>
<span style=…> <strong>on-failure</strong>(:max-retries)". Now the block is read as HTML
(extract's HTML reader), and inline tags in a paragraph read as their text.

An HTML data table, in a page or in Markdown, becomes a Markdown table, one row a line, so
it is chunked, embedded and quoted like one (docindex/table_rows.py): "on-failure —
Restart only if the container exits with a non-zero exit status". Its cells were separate
paragraphs, and Node.js's version-history tables were quoted as terms: "v12.12.0, Added
in: v12.12.0: Enable Source Map v3 support for stack traces".
"""
from __future__ import annotations

import re
from typing import Any

_BLOCK_START = re.compile(
    r"^ {0,3}</?(?:address|article|aside|blockquote|center|details|dialog|dd|div|dl|dt|figcaption|figure|footer"
    r"|h[1-6]|header|hr|li|main|nav|ol|p|picture|section|summary|table|tbody|td|tfoot|th|thead|tr|ul|pre)"
    r"(?:\s|/?>|$)", re.I)
_PRE_START = re.compile(r"^\s*<pre(?:\s|>|$)", re.I)
_PRE_END = re.compile(r"</pre>", re.I)
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


_CELL_BLOCKS = "div, pre, ul, ol, dl, table, blockquote, h1, h2, h3, h4, h5, h6"


def markdown_table(table: Any) -> str:
    """A data table as a Markdown table (`| a | b |` rows, the first followed by a separator row), or ""
    for a table that is layout: under 2 rows or 2 columns, or a cell holding more than one paragraph or
    any other block (PostgreSQL's function tables: signature, description and example in one cell,
    which the walk reads as a term and its text)."""
    rows = table.css("tr")
    if len(rows) < 2 or len(table.css(_CELL_BLOCKS)) > 1:      # css() finds the table itself too
        return ""
    lines = []
    for tr in rows:
        cells = tr.css("th, td")
        if any(len(cell.css("p")) > 1 for cell in cells):
            return ""
        texts = [" ".join((cell.text(deep=True, separator=" ") or "").split()).replace("|", "/") for cell in cells]
        if any(texts):
            lines.append("| " + " | ".join(texts) + " |")
    if len(lines) < 2 or lines[0].count(" | ") < 1:
        return ""
    return "\n".join([lines[0], "|" + "---|" * (lines[0].count(" | ") + 1), *lines[1:]])

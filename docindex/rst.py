"""reStructuredText → blocks: section titles as headings, literal blocks as code, directives by kind.

Read as plain text (before stop 30), a Sphinx or CMake source had no headings, so no anchors
or heading paths, and its `.. code-block::` bodies and `:command:` roles were prose. This is
not docutils: it reads what documentation sources use and leaves the rest as text.

* Section titles: a line under- (and optionally over-) lined with one repeated punctuation
  character; levels in the order the styles first appear, as docutils assigns them.
* Literal blocks: the indented block after a paragraph ending in "::", and the body of
  `code-block`, `code`, `sourcecode` and `parsed-literal` directives.
* Admonitions and version notes (`note`, `warning`, `versionadded`, …) keep their text;
  `only` and `container` their body (their argument is a condition or a class); `toctree`,
  `image`, `include`, `index`, `raw`, `contents`, comments, targets and substitutions are not text.
* Any other directive is an object being described (Sphinx's `function`, `class`, `option`,
  `py:method`, CMake's `variable`, `genex`): its argument is the term (`-S <path-to-source>`)
  and its body the description; without a body (content a Sphinx extension generates, pip's
  `.. pip-command-usage:: freeze`) it is not text. They were dropped before stop 33: CMake's cmake(1) manual lost
  every option's text.
* Indented blocks (definition lists, block quotes, directive bodies) are dedented and read
  the same way; a definition's term stays a paragraph of its own.
* A list item's wrapped lines (indented under its text) continue it; they were read as the
  description of a definition list whose term was the item's first line.
* Simple tables (`=====  =====` borders) become Markdown tables, as HTML data tables do: read
  as text, CMake's install() defaults table was quoted as "`TYPE` Argument … ======= `BIN` …".
  Grid tables (`+---+`) are still text.
* Inline: ``literal`` becomes `literal`, :role:`text <target>` its text, :role:`target` the
  target (`~a.b` → b), `text <url>`_ its text.
"""
from __future__ import annotations

import re

from .blocks import Block, Extracted, code_block

_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}\s*$")
_DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
_OPTION = re.compile(r"^:[\w-]+:")
_LIST_ITEM = re.compile(r"^(?:[-*+\u2022]|\d+[.)]|#\.|\(?[a-zA-Z0-9]\))\s+\S")   # "- x", "1. x", "#. x", "(a) x"
_TABLE_BORDER = re.compile(r"^=+(?: +=+)+ *$")          # a simple table's border: two columns or more
CODE_DIRECTIVES = {"code-block", "code", "sourcecode", "parsed-literal", "doctest", "testcode", "testoutput",
                   "productionlist", "ipython", "prompt", "code-tab", "jupyter-execute", "console"}
TEXT_DIRECTIVES = {"note", "warning", "tip", "important", "caution", "attention", "danger", "error", "hint",
                   "seealso", "admonition", "topic", "sidebar", "rubric", "deprecated", "versionadded",
                   "versionchanged"}
BODY_DIRECTIVES = {"only", "container", "figure", "program", "module", "currentmodule", "default-domain",
                   "tab", "tabs", "tab-set", "tab-item", "grid", "grid-item"}
SKIPPED_DIRECTIVES = {"toctree", "image", "include", "index", "literalinclude", "raw", "contents", "sectnum",
                      "highlight", "meta", "tabularcolumns", "default-role", "role", "title", "math",
                      "cmake-module", "autosummary", "automodule", "autoclass", "autofunction", "automethod",
                      "autodata", "autoattribute", "autoexception", "moduleauthor", "sectionauthor",
                      "codeauthor", "spelling", "ifconfig", "testsetup", "testcleanup", "graphviz", "digraph",
                      "graph", "plot", "mermaid", "uml", "inheritance-diagram"}
VERSION_NOTES = {"versionadded": "New in version", "versionchanged": "Changed in version",
                  "deprecated": "Deprecated since version"}

_ROLE_WITH_TEXT = re.compile(r":[\w:+-]+:`([^`<]+?)\s*<[^`>]*>`")
_ROLE = re.compile(r":[\w:+-]+:`(~?)([^`]+)`")
_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]*>`__?")
_NAMED_LINK = re.compile(r"`([^`]+)`__?")
_LITERAL = re.compile(r"``(.+?)``")


def clean_inline(text: str) -> str:
    """RST inline markup as a reader sees it (module docstring)."""
    text = _ROLE_WITH_TEXT.sub(r"\1", text)
    text = _ROLE.sub(lambda m: m.group(2).rsplit(".", 1)[-1] if m.group(1) else m.group(2), text)
    text = _LINK.sub(r"\1", text)
    text = _LITERAL.sub(lambda m: f"\0{m.group(1)}\0", text)      # `code` after links: no clash
    text = _NAMED_LINK.sub(r"\1", text)
    return text.replace("\0", "`")


def looks_like_rst(text: str) -> bool:
    """Whether a `.txt` file is reStructuredText: a directive (`.. contents::`) and a title adorned to
    its length. lighttpd's 33 module documents are such `.txt` files; read as plain text, their
    "======\nAccess\n======" titles and `.. meta::` blocks were paragraphs and nothing had a heading."""
    lines = text.splitlines()[:400]
    titled = any(title.strip() and _ADORNMENT.match(line) and len(line.rstrip()) >= len(title.rstrip())
                 and not _ADORNMENT.match(title) for title, line in zip(lines, lines[1:]))
    return titled and any(_DIRECTIVE.match(line) for line in lines)


_DOCINFO = re.compile(r"^:(?:authors?|date|revision|version|copyright|contact|organization|address|status|"
                      r"dedication|abstract):", re.IGNORECASE)


def parse_rst(text: str) -> Extracted:
    styles: dict[tuple[str, bool], int] = {}
    blocks = _blocks(text.expandtabs(8).splitlines(), styles)
    title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    return Extracted(title, _without_docinfo(blocks))


def _without_docinfo(blocks: list[Block]) -> list[Block]:
    """The document's bibliographic fields (":Author: …", ":Date: $Date: 2005/01/30 $", ":Revision: …" under
    its title, as docutils reads them) are not text; an abstract's text stays, its ":abstract:" label goes."""
    at = 0
    while at < len(blocks) and blocks[at].kind == "heading":
        at += 1
    end = at
    while end < len(blocks) and blocks[end].kind == "para" \
            and all(_DOCINFO.match(line) for line in blocks[end].text.splitlines()):
        end += 1
    return blocks[:at] + blocks[end:] if end > at else blocks


def _blocks(lines: list[str], styles: dict[tuple[str, bool], int]) -> list[Block]:
    blocks: list[Block] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(Block("para", clean_inline("\n".join(para))))
            para.clear()

    def heading(title: str, style: tuple[str, bool]) -> None:
        flush()
        blocks.append(Block("heading", clean_inline(title.strip()), styles.setdefault(style, len(styles) + 1)))

    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if _ADORNMENT.match(line) and i + 2 < n and lines[i + 1].strip() and lines[i + 2].strip() == line.strip():
            heading(lines[i + 1], (line.strip()[0], True))      # over- and underlined title
            i += 3
            continue
        if (not para and line.strip() and not line[0].isspace() and i + 1 < n and _ADORNMENT.match(lines[i + 1])
                and len(lines[i + 1].strip()) >= min(len(line.strip()), 4)):
            heading(line, (lines[i + 1].strip()[0], False))
            i += 2
            continue
        if line.startswith(".."):
            flush()
            i = _directive(lines, i, blocks, styles)
            continue
        if not para and _TABLE_BORDER.match(line):
            table, i = _simple_table(lines, i)
            blocks += [table] if table else []
            continue
        if not line.strip():
            flush()
            i += 1
            continue
        if line[0].isspace():                           # an indented block: a definition, a quote
            flush()
            body, i = _indented(lines, i)
            blocks += _blocks(body, styles)
            continue
        para.append(line)
        i += 1
        if line.rstrip().endswith("::"):               # a literal block follows
            para[-1] = line.rstrip()[:-2].rstrip() + (":" if line.rstrip()[:-2].strip() else "")
            if not para[-1]:
                para.pop()
            flush()
            body, i = _indented(lines, _skip_blank(lines, i))
            if body:
                blocks.append(code_block(body))
        elif i < n and lines[i][:1].isspace() and lines[i].strip() and _LIST_ITEM.match(line):
            body, i = _indented(lines, i)               # a list item's wrapped lines, then its own blocks
            text = body[:body.index("")] if "" in body else body
            para.extend(text)
            if len(text) < len(body):
                flush()
                blocks += _blocks(body[len(text):], styles)
        elif i < n and lines[i][:1].isspace() and lines[i].strip() and len(para) == 1:
            flush()                                     # a definition list's term: its own paragraph
    flush()
    return blocks


def _directive(lines: list[str], i: int, blocks: list[Block], styles: dict[tuple[str, bool], int]) -> int:
    """Read the directive, comment or target at `i`; returns the index after its body."""
    match = _DIRECTIVE.match(lines[i])
    body, after = _indented(lines, i + 1)
    while body and _OPTION.match(body[0]):             # :linenos:, :caption: …
        body = body[1:]
    name = match.group(1) if match else ""
    if name in CODE_DIRECTIVES:
        content = body[1:] if body and not body[0].strip() else body
        if any(line.strip() for line in content):
            blocks.append(code_block(content))
    elif name and name not in SKIPPED_DIRECTIVES:   # text, a body, or an object's term and description
        # An object directive without a body has its content generated elsewhere (pip's `pip-command-usage::`).
        described = name in TEXT_DIRECTIVES or any(line.strip() for line in body)
        argument = match.group(2).strip() if match and described and name not in BODY_DIRECTIVES else ""
        lead = f"{VERSION_NOTES[name]} {argument}." if name in VERSION_NOTES and argument else argument
        if lead:
            blocks.append(Block("para", clean_inline(lead)))
        blocks += _blocks(body, styles)
    return after


def _indented(lines: list[str], i: int) -> tuple[list[str], int]:
    """The block indented under line `i - 1` (blank lines inside kept), dedented; and the index after it."""
    start = i
    while i < len(lines) and (not lines[i].strip() or lines[i][:1].isspace()):
        i += 1
    while i > start and not lines[i - 1].strip():
        i -= 1
    body = lines[start:i]
    indent = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
    return [x[indent:] for x in body], i


def _skip_blank(lines: list[str], i: int) -> int:
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i



def _simple_table(lines: list[str], i: int) -> tuple[Block | None, int]:
    """The simple table whose top border is at `i`, as a Markdown table (a row whose first cell is
    empty continues the row above); and the index after its bottom border (the end of `lines`
    when it has none)."""
    columns = [(m.start(), m.end()) for m in re.finditer(r"=+", lines[i])]
    rows: list[list[list[str]]] = []                    # each row's cells, each cell its lines' parts
    header = 0
    end = i + 1
    while end < len(lines):
        line = lines[end]
        end += 1
        if _TABLE_BORDER.match(line):
            if header or end >= len(lines) or not lines[end].strip():
                break                                   # the bottom border: after a header's, or before a blank
            header = len(rows)                          # the border under the header rows
            continue
        if not line.strip():
            continue
        starts = [a for a, _ in columns[1:]] + [len(line)]
        cells = [line[a:b].strip() for (a, _), b in zip(columns, starts)]
        if rows and not cells[0]:                       # a continuation line of the row above
            for parts, cell in zip(rows[-1], cells):
                parts += [cell] if cell else []
        else:
            rows.append([[cell] if cell else [] for cell in cells])
    out = ["| " + " | ".join(clean_inline(" ".join(c)).replace("|", "\\|") for c in row) + " |" for row in rows]
    out.insert(max(header, 1), "|" + "---|" * len(columns))
    return (Block("para", "\n".join(out)) if rows else None), end

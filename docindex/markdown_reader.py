"""Markdown as blocks: headings, paragraphs and code, as a renderer shows them.

Read line by line, not by a CommonMark parser: ATX and setext headings, fenced code, YAML
front matter (metadata, and the title when it has one). What a renderer never shows is not
text: HTML comments (Node.js's API docs carry their version history in `<!-- YAML … -->`
blocks: 15 % of its chunks held one) and link reference definitions (`[v8]: https://v8.dev/`,
whole chunks of URLs); a reference link reads as its text.

A blockquote's content is Markdown too, read without its `>` markers: Docker's "> **Note**"
boxes hold fenced examples, which were quoted as sentences. Code opened outside a quote keeps
its "> " lines (a REPL's prompts), and a quoted fence ends with its quote.

Indented code (4 spaces or a tab, after a blank line or a heading) is code, as CommonMark reads
it, unless a list item, a MkDocs block (`!!! note`, `??? tip`, `=== "Tab"`), a footnote or a
definition is open: their content is indented too. Docker's "    --rm=false: Automatically remove the container when it
exits" was quoted as a sentence. MDX has no indented code (`indented_code=False`).

MyST (Markdown for Sphinx): a role reads as its text ({ref}`pip hash` → `pip hash`); a fenced
directive whose body is text (```{note}, ```{versionadded} 21.2, ```{tab}) is read as Markdown,
```{eval-rst} as reStructuredText, ```{toctree} and the like are not text; any other fenced
directive (```{code-block}, ```{pip-cli}) stays code. pip's notes and version notes were code.

Raw HTML: a line that opens with a block-level tag starts an HTML block (CommonMark's kinds
1 and 6), which runs to the next blank line; `<pre>` runs to its `</pre>`, and `<table>` to
its `</table>` across blank lines between rows. The block is read by the HTML reader
(docindex/html_reader.py: a data table becomes a Markdown table). Read as Markdown its tags
were text: Docker's run reference was quoted as "</td> </tr> <tr> <td> <span style=…>
<strong>on-failure</strong>(:max-retries)". Inline tags (`<kbd>`, `<br>`) read as their text.
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from .blocks import Block, Extracted
from .html_reader import html_fragment
from .mdx import without_comments
from .rst import BODY_DIRECTIVES, SKIPPED_DIRECTIVES, TEXT_DIRECTIVES, VERSION_NOTES, parse_rst
from .table_rows import piped

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_QUOTE = re.compile(r"^ {0,3}(?:>[ \t]?)+")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_LIST_ITEM = re.compile(r"^\s*([-*+]|\d+[.)])\s")
# What opens indented content: a list item, a MkDocs block, a footnote, a definition (": …").
_CONTAINER = re.compile(r"^ {0,3}(?:(?:[-*+]|\d+[.)])(?:\s|$)|(?:!!!|\?\?\?\+?|===|:)[ \t]|\[\^[^\]]+\]:)")
_LINK_DEFINITION = re.compile(r"^ {0,3}\[(?!\^)[^\]]+\]:\s*\S")     # not a footnote's "[^1]: …"
_REFERENCE_LINK = re.compile(r"(!?)\[([^\]]+)\]\[[^\]]*\]")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_MYST_ROLE = re.compile(r"\{[a-zA-Z][\w:.+-]*\}$")              # {ref}`target`: the role's name
_MYST_DIRECTIVE = re.compile(r"^ {0,3}(?:`{3,}|~{3,})\{([\w:-]+)\}[ \t]*(.*)$")
_MYST_OPTION = re.compile(r"^\s*:[\w-]+:")

_HTML_BLOCK = re.compile(
    r"^ {0,3}</?(?:address|article|aside|blockquote|center|details|dialog|dd|div|dl|dt|figcaption|figure|footer"
    r"|h[1-6]|header|hr|li|main|nav|ol|p|picture|section|summary|table|tbody|td|tfoot|th|thead|tr|ul|pre)"
    r"(?:\s|/?>|$)", re.I)
_PRE_START, _PRE_END = re.compile(r"^\s*<pre(?:\s|>|$)", re.I), re.compile(r"</pre\s*>", re.I)
_TABLE_START = re.compile(r"^\s*<table(?:\s|>|$)", re.I)
_TABLE_OPEN, _TABLE_CLOSE = re.compile(r"<table(?:\s|>|$)", re.I), re.compile(r"</table\s*>", re.I)
# Inline tags a renderer shows as their text ("Press <kbd>q</kbd>"); not a placeholder like `<name>`.
_INLINE_TAG = re.compile(r"</?(?:a|abbr|b|br|cite|code|del|em|font|i|img|ins|kbd|mark|q|s|samp|small|span|strong"
                         r"|sub|sup|u|var)(?:\s[^<>]*)?/?>", re.I)


def without_inline_tags(text: str) -> str:
    """`text` with inline HTML tags removed (`<br>` as a space), outside code spans."""
    if "<" not in text:
        return text

    def strip(part: str) -> str:
        return _INLINE_TAG.sub(lambda m: " " if m.group()[1:3].lower() == "br" else "", part)

    out, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [strip(text[at:span.start()]), span.group()]
        at = span.end()
    return "".join(out) + strip(text[at:])


def _without_myst_roles(text: str) -> str:
    """`text` with each MyST role's name taken off the code span it opens ({ref}`x` → `x`);
    a code span's own braces (`{text}`) stay."""
    if "}`" not in text:
        return text
    out, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [_MYST_ROLE.sub("", text[at:span.start()]), span.group()]
        at = span.end()
    return "".join(out) + text[at:]


def _reference_links_as_text(line: str) -> str:
    """`[text][ref]` and `[text][]` → `text` (code spans in the text kept; the text may wrap onto
    the next line), never inside a code span (`a[i][j]`): the spans are masked while links are found."""
    masked = _CODE_SPAN.sub(lambda m: "\0" * len(m.group()), line)
    out, at = [], 0
    for link in _REFERENCE_LINK.finditer(masked):
        out += [line[at:link.start()], line[link.start(2):link.end(2)]]
        at = link.end()
    return "".join(out) + line[at:]


class _HtmlBlock:
    """A raw HTML block being read: its lines, and whether it is still open."""

    def __init__(self, line: str, quoted: bool) -> None:
        self.lines: list[str] = []
        self.kind = "pre" if _PRE_START.match(line) else "table" if _TABLE_START.match(line) else "other"
        self.depth, self.open, self.quoted = 0, True, quoted     # quoted: opened inside a blockquote
        self.add(line, False)

    def add(self, line: str, tag_follows: bool) -> bool:
        """Takes `line` if it belongs to the block; False: the block ended before it. `tag_follows`:
        the next non-blank line starts with a tag (a table's rows may have blank lines between them)."""
        if not line.strip() and self.kind != "pre" and (self.kind == "other" or not tag_follows):
            return False
        self.lines.append(line)
        if self.kind == "pre":
            self.open = not _PRE_END.search(line)
        elif self.kind == "table":
            self.depth += len(_TABLE_OPEN.findall(line)) - len(_TABLE_CLOSE.findall(line))
            self.open = self.depth > 0
        return True


def _indent(line: str) -> int:
    """Columns of leading white space (a tab to the next multiple of 4)."""
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 4 - width % 4
        else:
            break
    return width


def _dedent4(line: str) -> str:
    """`line` without its first 4 columns of indentation."""
    width = 0
    for i, char in enumerate(line):
        if width >= 4 or char not in " \t":
            return line[i:]
        width += 1 if char == " " else 4 - width % 4
    return ""


class _Reader:
    def __init__(self, indented_code: bool = True, depth: int = 0) -> None:
        self.indented_code, self.depth = indented_code, depth      # depth: MyST directives around it
        self.indented: list[str] | None = None      # an indented code block being read
        self.container = False                      # a list item, MkDocs block, footnote or definition is open
        self.blocks: list[Block] = []
        self.para: list[str] = []
        self.para_quoted = self.in_comment = self.code_quoted = False
        self.code: list[str] | None = None
        self.fence = ""
        self.html: _HtmlBlock | None = None

    def flush(self) -> None:
        if any(line.strip() for line in self.para):
            text = _without_myst_roles(without_inline_tags("\n".join(self.para)))
            self.blocks.append(Block("para", _reference_links_as_text(text).strip("\n")))
        self.para.clear()

    def end_code(self) -> None:
        if self.code is not None:
            directive = _myst_directive(self.code, self.depth) if self.depth < MYST_MAX_DEPTH else None
            self.blocks.extend(directive if directive is not None else [Block("code", "\n".join(self.code))])
        self.code = None

    def end_indented(self) -> None:
        if self.indented is not None:
            while self.indented and not self.indented[-1].strip():
                self.indented.pop()
            body = "\n".join(_dedent4(line) for line in self.indented)
            fence = "````" if "```" in body else "```"           # written as the fenced form, as <pre> is
            self.blocks.append(Block("code", f"{fence}\n{body}\n{fence}"))
        self.indented = None

    def end_html(self) -> None:
        if self.html is not None:
            self.blocks.extend(html_fragment("\n".join(self.html.lines)))
        self.html = None

    def feed(self, line: str, tag_follows: bool) -> None:
        quote = None
        if self.html.quoted if self.html is not None else self.code is None or self.code_quoted:
            if quote := _QUOTE.match(line):
                line = line[quote.end():]
        if self.html is not None:
            if (quote or not self.html.quoted) and self.html.add(line, tag_follows):
                if not self.html.open:
                    self.end_html()
                return
            self.end_html()                     # a blank line, its closing tag, or the end of its quote
        if self.code is not None:
            if not (self.code_quoted and not quote):
                self.code.append(line)
                stripped = line.strip()
                if stripped.startswith(self.fence[0] * len(self.fence)) and set(stripped) <= {self.fence[0]}:
                    self.end_code()
                return
            self.end_code()                     # the blockquote ended, and its code with it
        if self.indented is not None:                 # code: a "<!--" in it is text
            if not quote and (not line.strip() or _indent(line) >= 4):
                self.indented.append(line)
                return
            self.end_indented()
        if self.indented_code and _indent(line) >= 4 and line.strip() and not (
                quote or self.in_comment or self.para or self.container):
            self.indented = [line]
            return
        if self.in_comment or "<!--" in line:
            line, self.in_comment = without_comments(line, self.in_comment, "<!--", "-->")
            if not line.strip():
                return                          # a line that was only comment
        if _LINK_DEFINITION.match(line):
            return
        if quote and self.para and not self.para_quoted:
            self.flush()                        # a blockquote interrupts a paragraph
        if line.strip() and not quote and _indent(line) < 4:
            # A list item or MkDocs block opens a container; a new block at the margin closes it.
            if _CONTAINER.match(line):
                self.container = True
            elif not self.para and _indent(line) == 0:
                self.container = False
        if fence := _FENCE.match(line):
            self.flush()
            self.fence, self.code, self.code_quoted = fence.group(1), [line], bool(quote)
            return
        if _HTML_BLOCK.match(line):
            self.flush()
            self.html = _HtmlBlock(line, bool(quote))
            if not self.html.open:
                self.end_html()
            return
        if not quote and (heading := _ATX.match(line)):
            self.flush()
            self.container = self.container and _indent(line) > 0        # a heading at the margin ends a list
            self.blocks.append(Block("heading", clean_inline(heading.group(2) or ""), len(heading.group(1))))
            return
        if not quote and _SETEXT.match(line) and len(self.para) == 1 and self.para[0].strip() \
                and not _LIST_ITEM.match(self.para[0]):
            self.blocks.append(Block("heading", clean_inline(self.para[0].strip()), 1 if "=" in line else 2))
            self.para.clear()
            return
        if not line.strip():
            self.flush()
            return
        if not self.para:
            self.para_quoted = bool(quote)
        self.para.append(line)


MYST_MAX_DEPTH = 8
"""Fenced MyST directives nested deeper than this are code: hostile nesting must not recurse without end."""


def _myst_directive(lines: list[str], depth: int = 0) -> list[Block] | None:
    """The blocks of a fenced MyST directive whose body is text (module docstring); None: code."""
    match = _MYST_DIRECTIVE.match(lines[0])
    if match is None:
        return None
    name, argument = match.group(1), match.group(2).strip()
    body = lines[1:-1] if len(lines) > 1 and _FENCE.match(lines[-1]) and not lines[-1].strip("`~ \t") else lines[1:]
    while body and _MYST_OPTION.match(body[0]):
        body = body[1:]                                 # :class: tip
    if name in SKIPPED_DIRECTIVES:
        return []
    if name == "eval-rst":
        return parse_rst("\n".join(body)).blocks
    if name not in TEXT_DIRECTIVES and name not in BODY_DIRECTIVES:
        return None
    lead = "" if name in BODY_DIRECTIVES else \
        f"{VERSION_NOTES[name]} {argument}." if name in VERSION_NOTES and argument else argument
    inner = parse_markdown("\n".join(body), depth=depth + 1).blocks
    return ([Block("para", clean_inline(lead))] if lead else []) + inner


def parse_markdown(text: str, indented_code: bool = True, *, depth: int = 0) -> Extracted:
    metadata: dict[str, Any] = {}
    match = _FRONT_MATTER.match(text)
    if match:
        metadata = _front_matter(match.group(1))
        text = text[match.end():]
    lines = text.splitlines()
    tag_follows = [False] * len(lines)          # the next non-blank line after each one starts with a tag
    for i in range(len(lines) - 2, -1, -1):
        after = _QUOTE.sub("", lines[i + 1], count=1).lstrip()
        tag_follows[i] = after.startswith("<") if after else tag_follows[i + 1]
    reader = _Reader(indented_code, depth)
    for line, tag in zip(lines, tag_follows):
        reader.feed(line, tag)
    reader.end_indented()
    reader.end_code()                           # unterminated fence: kept as code anyway
    reader.end_html()
    reader.flush()
    blocks = [replace(b, text=table) if b.kind == "para" and (table := piped(b.text)) else b
              for b in _without_admonition_markers(reader.blocks)]
    title = metadata.get("title") if isinstance(metadata.get("title"), str) else None
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1 and b.text), None)
    return Extracted(title, blocks, metadata)


_MKDOCS_ADMONITION = re.compile(r'^ {0,3}(?:!!!|\?\?\?\+?)[ \t]+([\w-]+)(?:[ \t]+"([^"]*)")?[ \t]*$')
_FENCE_ADMONITION = re.compile(r"^ {0,3}:{3,}[ \t]*(?:([\w-]+)(?:[ \t]+(.+?))?)?[ \t]*$")    # Docusaurus' :::tip


def _without_admonition_markers(blocks: list[Block]) -> list[Block]:
    """MkDocs' `!!! warning "Data loss"` and Docusaurus' `:::tip Title` … `:::` as HTML renders them: the
    title (or the kind, capitalised, where MkDocs gives no title) a paragraph of its own, the body
    dedented; a bare `:::` is nothing. They were read into the text ("!!! warning "Data loss" Dropping …")."""
    out: list[Block] = []
    for block in blocks:
        lines = block.text.split("\n") if block.kind == "para" else []
        marker = lines and (_MKDOCS_ADMONITION.match(lines[0]) or _FENCE_ADMONITION.match(lines[0]))
        if not marker:
            out.append(replace(block, text="\n".join(line.strip() for line in lines))
                       if lines and all(line.startswith("    ") for line in lines) else block)
            continue
        kind, title = marker.group(1), marker.group(2)
        title = title if title is not None else (kind or "").capitalize()
        body = "\n".join(line.strip() for line in lines[1:] if not _FENCE_ADMONITION.match(line)).strip()
        out += [Block("para", text) for text in (title.strip(), body) if text]
    return out


def _front_matter(raw: str) -> dict[str, Any]:
    import yaml

    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError:
        return {}
    if not isinstance(data, dict):
        return {}
    # Only JSON-friendly scalars survive (the metadata column is JSON).
    return {str(k): v for k, v in data.items() if isinstance(v, (str, int, float, bool))}


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"\*\*|\*|~~|`|(?<!\w)__?|__?(?!\w)")   # snake_case keeps its "_"
_HTML_TAG = re.compile(r"<[^>]+>")


def clean_inline(text: str) -> str:
    """Heading text as a reader sees it: links, code spans, emphasis and tags removed."""
    text = _LINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = _EMPHASIS.sub("", text)
    return " ".join(text.split())

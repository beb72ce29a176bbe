"""MDX (Docusaurus, Nextra, …) → Markdown: what a reader of the rendered page sees as text.

MDX is Markdown with JavaScript around it. Left in, the JavaScript becomes text that matches
nothing a user asks: module imports and exports, `{/* comments */}`, lines that only open or
close a component (`<Tabs groupId="os">`, `</TabItem>`), and Docusaurus admonition fences
(`:::tip Title` … `:::`). They are removed outside code blocks; the text inside components,
and an admonition's title, stay. The result goes through the Markdown reader (markdown_reader.py).
"""
from __future__ import annotations

import re

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)
_MODULE_LINE = re.compile(r"^(?:import|export)\s")
_TAG_ONLY = re.compile(r"^\s*(?:</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>\s*)+$")
_ADMONITION = re.compile(r"^\s*:::+\s*(?:[A-Za-z]+)?(?:\[[^\]]*\])?\s*(.*?)\s*$")


def mdx_to_markdown(text: str) -> str:
    """`text` without its module statements, JSX comments, tag-only lines and admonition fences
    (module docstring); front matter and code blocks untouched."""
    front = _FRONT_MATTER.match(text)
    head = front.group() if front else ""
    return head + _body(text[len(head):])


def _body(text: str) -> str:
    out: list[str] = []
    fence = ""
    statement_depth = 0             # open brackets of a module statement that goes on
    in_comment = False
    for line in text.splitlines():
        if fence:
            out.append(line)
            if line.strip().startswith(fence) and set(line.strip()) <= {fence[0]}:
                fence = ""
            continue
        if in_comment or "{/*" in line:
            line, in_comment = without_comments(line, in_comment, "{/*", "*/}")
            if not line.strip():
                continue
        if statement_depth > 0 or (_MODULE_LINE.match(line) and not _continues_paragraph(out)):
            statement_depth = max(statement_depth + _depth(line), 0)
            continue
        if match := _FENCE.match(line):
            fence = match.group(1)
            out.append(line)
            continue
        if _TAG_ONLY.match(line):
            continue
        if admonition := _ADMONITION.match(line):
            if admonition.group(1):
                out += [admonition.group(1), ""]      # the admonition's own title, a paragraph of its own
            continue
        out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _continues_paragraph(previous: list[str]) -> bool:
    """An `import`/`export` at the start of a line continues a paragraph ("…we\nimport the
    data") unless a blank line or nothing precedes it."""
    return bool(previous) and bool(previous[-1].strip())


def _depth(line: str) -> int:
    """Brackets a line opens minus those it closes (a multi-line import or exported object)."""
    return sum(line.count(c) for c in "({[") - sum(line.count(c) for c in ")}]")


def without_comments(line: str, in_comment: bool, opening: str, closing: str) -> tuple[str, bool]:
    """`line` without its comments delimited by `opening` … `closing` (MDX's `{/*` `*/}`, the
    Markdown reader's `<!--` `-->`), a comment possibly going on over several lines; and whether
    a comment is still open at its end. Linear in the line's length."""
    kept: list[str] = []
    while line:
        if in_comment:
            end = line.find(closing)
            if end < 0:
                return "".join(kept), True
            line, in_comment = line[end + len(closing):], False
        else:
            start = line.find(opening)
            if start < 0:
                kept.append(line)
                break
            kept.append(line[:start])
            line, in_comment = line[start + len(opening):], True
    return "".join(kept), in_comment

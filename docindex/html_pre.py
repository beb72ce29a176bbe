"""A page that is one preformatted text, read as text: Vim's help pages as vim2html writes them (a `<pre>`
holding the whole page), an old FAQ or licence put on the web as it was typed.

html_reader reads `<pre>` as code, and code is never quoted: asked 16 questions on Vim 9.0's help (stop 58),
the service refused all 16, and the Gate had passed every one. A `<pre>` is read as text when it is the page
(PAGE_SHARE of the page's visible characters, at least PAGE_MIN_CHARS), most of its lines are prose (PROSE_SHARE:
five or more words, mostly letters, not opening like a comment or a prompt) and few read as code (CODE_SHARE:
a statement keyword first, or a line ending in an opening bracket, a comma or a semicolon). Whole-page example
programs (sphinx-gallery's, Rust's source pages) and sample configuration files stay code.

DocBook's `literallayout` (a text file laid out line by line with `<br>`: Valgrind's NEWS, README and AUTHORS) is
such a text too; read as paragraphs, each of its pages was one paragraph thousands of words long.

Read as text: paragraphs between blank lines; a row of `=` or `-` is a rule, and a one-line paragraph after one is
a heading, as are a line over its underline and a title framed in rules ("==== CORE CHANGES ===="); Vim's tags
(`*undo-branches*`) are anchors, not words, and its links (`|undo-branches|`) their words.
"""
from __future__ import annotations

import re
from typing import Any

from .blocks import Block

PROSE_PAGES = True
PAGE_SHARE = 0.7
PAGE_MIN_CHARS = 2000
PROSE_SHARE = 0.5
CODE_SHARE = 0.4
_WORDS = re.compile(r"[A-Za-z][a-z]+")
_NOT_PROSE_START = ("#", "/", ";", "%", ">", "$", "@", "{", "}", "[", "]", "(", ")", "<", "=", "|", "+", "*", "\\",
                    "--", "...")
_CODE_LINE = re.compile(r"^\s*(?:def|class|import|from|return|if|elif|else|for|while|try|except|with|async|await|var|"
                        r"let|const|function|public|private|static|#include)\b|[;{(,]\s*$|\)\s*$|^\s*@\w")
_BULLET = re.compile(r"^[*+-]\s+")
_RULE = re.compile(r"^\s*([=\-])\1{9,}\s*$")
_UNDERLINE = re.compile(r"^\s*([=\-~^*#+])\1{2,}\s*$")
_FRAMED = re.compile(r"^[\s*]*[=~-]{3,}\s*(\w.*?\S)\s*[=~-]{3,}\s*$")       # "* ==== CORE CHANGES ====": a heading
_TAG = re.compile(r"(?<!\S)\*[^\s*|]+\*(?!\S)")
_LEADING_TAGS = re.compile(r"^[ \t]*(?:\*[^\s*|]+\*[ \t]*)+")
_LINK = re.compile(r"(?<![^\s(])\|([^\s|]+)\|(?![\w|])")


def _prose_line(line: str) -> bool:
    text = _BULLET.sub("", line.strip())         # "* Fix Rust v0 name demangling.": an item of prose
    if text.startswith(_NOT_PROSE_START):
        return False
    words = _WORDS.findall(text)
    return len(words) >= 5 and sum(map(len, words)) >= 0.7 * len("".join(text.split()))


def is_text_page(pre: str, page_chars: int) -> bool:
    """Whether a `<pre>` holding `pre` is the page's text, not its code (module docstring); `page_chars`: the
    page's visible characters."""
    chars = len("".join(pre.split()))
    lines = [line for line in pre.splitlines() if line.strip()]
    if not PROSE_PAGES or page_chars < PAGE_MIN_CHARS or chars < PAGE_SHARE * page_chars or not lines:
        return False
    return sum(map(_prose_line, lines)) >= PROSE_SHARE * len(lines) \
        and sum(bool(_CODE_LINE.search(line)) for line in lines) < CODE_SHARE * len(lines)


def text_blocks(pre: str) -> list[Block]:
    """The paragraphs and headings of a preformatted text (module docstring)."""
    blocks: list[Block] = []
    after_rule = False
    for paragraph in re.split(r"\n[ \t]*\n", pre):
        lines = [_LINK.sub(r"\1", _TAG.sub("", _LEADING_TAGS.sub("", line))).rstrip()
                 for line in paragraph.strip("\n").splitlines()]
        ruled = any(_RULE.match(line) for line in lines)
        lines = [line for line in lines if line.strip() and not _RULE.match(line)]
        framed = _FRAMED.match(lines[0]) if len(lines) == 1 else None
        if lines and after_rule and len(lines) == 1 and not ruled or framed:
            blocks.append(Block("heading", framed.group(1) if framed else " ".join(lines[0].split()), 2))
        elif len(lines) == 2 and _UNDERLINE.match(lines[1]) and lines[0].strip():
            blocks.append(Block("heading", " ".join(lines[0].split()), 2))      # "Release 3.19.0 (…)" over "~~~~"
        elif lines:
            blocks.append(Block("para", "\n".join(lines)))
        after_rule = ruled and not lines or ruled and bool(_RULE.match(paragraph.strip("\n").splitlines()[-1]))
    return blocks


def layout_text(node: Any) -> str:
    """The text of a DocBook `literallayout` block, a line per `<br>`, non-breaking spaces as spaces."""
    from selectolax.lexbor import LexborHTMLParser

    body = LexborHTMLParser(_BREAK.sub("\n", " ".join((node.html or "").split()))).body   # source newlines: spaces
    return (body.text(deep=True) if body is not None else "").replace("\u00a0", " ")


_BREAK = re.compile(r"\s*<br\s*/?>\s?", re.IGNORECASE)

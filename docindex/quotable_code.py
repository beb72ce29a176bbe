"""How a code block is quoted: on one line, as a lead-in's example (docindex/quotable.py carries it).

Code is quoted only short (CODE_MAX_LINES), without a REPL prompt or a shell continuation, and never
holding what would read as a citation ("[1]") or the prompt's fences ("<<<"); a comment before the last
line would void, on one line, what follows it, so such code is not quoted, except a comment in words
("# The logging alternative:"), which is left out.
"""
from __future__ import annotations

import re

from .sentences import Unit

MARKER_LIKE = re.compile(r"\[\s*\d+(?:\s*,\s*\d+)*\s*\]")  # the source's own "[1]" would read as a citation
FENCE_RUN = re.compile(r"<{3,}|>{3,}")                     # would read as the prompt's fences

CODE_MAX_LINES = 6
_REPL_PROMPT = re.compile(r"^(?:>>>|\.\.\.)(?: |$)")
_COMMENT = re.compile(r"(?:^|\s)(?:#|//|--)(?:\s|$)")           # shell/Python, C/JS, SQL
# A line that is a comment in words ("# The logging alternative:", "-- Create the table."), not a root
# shell prompt ("# postfix reload"): left out of the carried code, which it would otherwise void.
_PROSE_COMMENT = re.compile(r"^(?:#|//|--)\s+(?:[A-Z].*|.*[:.])$")


def code_line(line: str) -> str:
    """One line of code as it is quoted: no REPL prompt, no shell continuation, spaces collapsed."""
    return " ".join(_REPL_PROMPT.sub("", line).strip().removesuffix("\\").split())


def quotable_code(code: str) -> bool:
    """Code on one line that reads as code: no backtick, nothing like a citation or a prompt fence."""
    return bool(code) and "`" not in code and not MARKER_LIKE.search(code) and not FENCE_RUN.search(code)


def inline_code(text: str, unit: Unit) -> str:
    """A short code block as one line of code ("" when it is longer than
    CODE_MAX_LINES or holds what would read as a citation, a prompt fence, a
    backtick, or a comment before its last line): "Create a range partitioned
    table:" answers with its example."""
    lines = [code_line(line) for line in text[unit.start:unit.end].split("\n")]
    lines = [line for line in lines if line and not line.startswith(("```", "~~~")) and not _PROSE_COMMENT.match(line)]
    code = " ".join(lines)
    if len(lines) > CODE_MAX_LINES or not quotable_code(code) or any(_COMMENT.search(line) for line in lines[:-1]):
        return ""                   # on one line, a comment would swallow the lines after it
    return code

"""Markdown table rows as plain text: what the embedder reads and what is quoted.

`| `fs_list` | List the entries of a directory |` reads as
"`fs_list` — List the entries of a directory", and a separator row
(`|---|:---:|`) as nothing. The pipes are markup: embedded as written they
pulled a table's vector away from its words (the cMCP README's four-tool
table scored cosine 0.494 with "Which four tools does filesystem-mcp
provide?", 0.592 as plain rows).
"""
from __future__ import annotations

import re

_SEPARATOR_CELL = re.compile(r":?-{2,}:?")


def row_text(raw: str) -> str:
    """One table row's cells joined by " — "; a separator row (or an empty one) is ""."""
    cells = [c.strip() for c in raw.strip().strip("|").split("|")]
    return "" if all(_SEPARATOR_CELL.fullmatch(c) or not c for c in cells) else " — ".join(c for c in cells if c)


def is_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|")


def plain_tables(text: str) -> str:
    """`text` with each Markdown table (two or more row lines in a row, one of them a separator
    row) as plain rows, one a line; every other line as it is."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        j = i
        while j < len(lines) and is_row(lines[j]):
            j += 1
        run = lines[i:j]
        if len(run) >= 2 and any(not row_text(line) for line in run):
            out += [row for row in (row_text(line) for line in run) if row]
        else:
            out += run or [lines[i]]
        i = max(j, i + 1)
    return "\n".join(out)

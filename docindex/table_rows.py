"""Markdown table rows as plain text: what the embedder reads and what is quoted.

`| `fs_list` | List the entries of a directory |` reads as
"`fs_list` — List the entries of a directory", and a separator row
(`|---|:---:|`) as nothing. The pipes are markup: embedded as written they
pulled a table's vector away from its words (the cMCP README's four-tool
table scored cosine 0.494 with "Which four tools does filesystem-mcp
provide?", 0.592 as plain rows).
"""
from __future__ import annotations

import itertools
import re

_SEPARATOR_CELL = re.compile(r":?-{2,}:?")
_CELL_SEPARATOR = re.compile(r"(?<!\\)\|")         # GFM: "\|" is a pipe inside a cell (`ls \| grep x`)
_OUTER_PIPES = re.compile(r"^\||(?<!\\)\|$")


def row_text(raw: str) -> str:
    """One table row's cells joined by " — "; a separator row (or an empty one) is ""."""
    cells = [c.strip().replace("\\|", "|") for c in _CELL_SEPARATOR.split(_OUTER_PIPES.sub("", raw.strip()))]
    return "" if all(_SEPARATOR_CELL.fullmatch(c) or not c for c in cells) else " — ".join(c for c in cells if c)


def is_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|")


def plain_tables(text: str) -> str:
    """`text` with each Markdown table (two or more row lines in a row, one of them a separator
    row) as plain rows, one a line; every other line as it is."""
    out: list[str] = []
    for rows, group in itertools.groupby(text.split("\n"), key=is_row):
        run = list(group)
        if rows and len(run) >= 2 and any(not row_text(line) for line in run):
            out += [row for row in map(row_text, run) if row]
        else:
            out += run
    return "\n".join(out)

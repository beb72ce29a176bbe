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


def row_cells(raw: str) -> list[str]:
    """One table row's cells, stripped (empty ones kept)."""
    return [c.strip().replace("\\|", "|") for c in _CELL_SEPARATOR.split(_OUTER_PIPES.sub("", raw.strip()))]


def row_text(raw: str) -> str:
    """One table row's cells joined by " — ", or by a space after a cell that is a label ending in ":"
    (Apache's directive tables: "Default: LimitRequestBody 1073741824", which read "Default: — …");
    a separator row (or an empty one) is ""."""
    cells = row_cells(raw)
    if all(_SEPARATOR_CELL.fullmatch(c) or not c for c in cells):
        return ""
    kept = [c for c in cells if c]
    return "".join(cell + (" " if cell.endswith(":") else " — ") for cell in kept[:-1]) + kept[-1]


_DELIMITER_ROW = re.compile(r"^\s*\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)+\|?\s*$")     # 2+ columns


def piped(text: str) -> str | None:
    """A GFM table written without its outer pipes ("Name | Description" over "-----|-----": the spec
    makes them optional; Icinga's manual writes every table so) with them, one row a line, so it is
    read as the table it is; None for anything else (a table already piped included)."""
    lines = text.split("\n")
    if len(lines) < 2 or not _DELIMITER_ROW.match(lines[1]) or all(is_row(line) for line in lines):
        return None
    if any(not _CELL_SEPARATOR.search(line) for line in lines) \
            or len(row_cells(_pipe(lines[0]))) != len(row_cells(_pipe(lines[1]))):
        return None
    return "\n".join(_pipe(line) for line in lines)


def _pipe(line: str) -> str:
    row = line.strip()
    row = row if row.startswith("|") else f"| {row}"
    return row if row.endswith("|") and not row.endswith("\\|") else f"{row} |"


def is_row(line: str) -> bool:
    stripped = line.strip()
    return len(stripped) > 1 and stripped.startswith("|") and stripped.endswith("|")


def table_lines(text: str) -> tuple[list[str], list[str]] | None:
    """A Markdown table's header (its first row and separator row) and its other rows, one a
    line; None when `text` is not a table (every line a row, two or more lines). A table without
    a separator row in second place has no header: ([], rows)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or not all(line.startswith("|") for line in lines):
        return None
    if len(lines) > 2 and not row_text(lines[1]) and row_text(lines[0]):
        return lines[:2], lines[2:]
    return [], lines


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

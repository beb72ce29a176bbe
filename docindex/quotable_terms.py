"""Lines that name what the text under them describes, beyond quotable.py's terms: value fields
("Default: 25") and a list of codes' numbers ("413" over "Request too large; …"). quotable.py's `_term`
uses them; nothing here imports quotable.py.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from .sentences import Unit

VALUE_FIELD = re.compile(r"^\**(?:Default(?: value)?|Defaults|Type|Values?|Range|Units?|Scope|Context)\**::?\**\s+\S",
                         re.IGNORECASE)
VERSION_NOTE = re.compile(r"^(?:New in version|Changed in version|Deprecated since version) [\w.]+")  # Sphinx's


def is_value(text: str, unit: Unit) -> bool:
    """A one-line value field: "Default: 25", "Default:: {}" (Scrapy's source), "Type: int"."""
    line = text[unit.start:unit.end].strip()
    return "\n" not in line and bool(VALUE_FIELD.match(line))


def code_term(text: str, blocks: Sequence[Unit], at: int, b: int) -> str:
    """A number on its own line is the term of the text under it in a list of codes (another number two
    units above or below: CUPS's access_log statuses, "413" / "Request too large; …"), never alone: a page
    number or a stray figure is no term (stop 44; NUMERIC_TERMS False: never a term, it has no letter)."""
    line = text[blocks[at].start:blocks[at].end].strip()
    if not NUMERIC_TERMS or at != b - 1 or not NUMBER_LINE.fullmatch(line):
        return ""
    siblings = [i for i in (at - 2, at + 2) if 0 <= i < len(blocks) and blocks[i].kind == "prose"]
    return line if any(NUMBER_LINE.fullmatch(text[blocks[i].start:blocks[i].end].strip()) for i in siblings) else ""


NUMERIC_TERMS = True
NUMBER_LINE = re.compile(r"[-+]?\d{1,6}")

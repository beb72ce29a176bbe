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


def is_question(raw: str) -> bool:
    """A sentence that asks (a FAQ's question): it answers nothing."""
    return raw.rstrip(" *_`\"')").endswith("?")


def is_value(text: str, unit: Unit) -> bool:
    """A one-line value field: "Default: 25", "Default:: {}" (Scrapy's source), "Type: int"."""
    line = text[unit.start:unit.end].strip()
    return "\n" not in line and bool(VALUE_FIELD.match(line))


# Stop 54, measured and not shipped (False): a field line that is no value field ("Availability: all but Mac OS" over
# Glances' "Dependency: …" and "This plugin is disable by default, …"; Python's "Source code: Lib/timeit.py") taken
# for the page's metadata, never the term of the text under it. Dev: Python 0.317 -> 0.316 of the reference words;
# 35 manuals: 0.4033 -> 0.4028, Jinja's "Import name: jinja2.ext.loopcontrols: This extension adds …" lost the name
# that says what to import (KNOWN_LIMITATIONS.md). Value fields ("Default: 25", "Type: int") name the text either way.
METADATA_FIELDS_NOT_TERMS = False


# Stop 58: in a definition list whose texts are lower-case phrases with no stop (mutagen's tools: "mid3v2" over "is a
# Mutagen-based replacement for id3lib's id3v2", then "moggsplit" over "splits a multiplexed Ogg stream into separate
# files"), the term of one entry took the entries above it as further spellings of its name, up to MAX_TERM_LINES:
# "is a Mutagen-based replacement for id3lib's id3v2, moggsplit, splits a multiplexed …, mutagen-inspect: loads and
# prints …", and "mid3v2" named nothing; and a name ("moggsplit") took the phrase above it for its own term. Such a
# phrase ends the walk up after a term line, and is no term of a line that is a term itself; over a text it still is
# one (BIRD's options: "router id IPv4 address" over "Set BIRD's router ID."). False: as before.
DESCRIPTIONS_END_TERMS = True
_DESCRIPTION = re.compile(r"^[a-z][a-z'’]*(?: [A-Za-z][\w'’-]*){3,}$")
_FUNCTION_WORDS = frozenset("a an the of to for in on at by with from into and or is are be which that as".split())
_PLACEHOLDER = re.compile(r"[A-Z]{2,}")        # FRR's "neighbor PEER port PORT": a command's syntax, not its text


def is_description(line: str) -> bool:
    """A lower-case phrase of four or more plain words, one of them a function word, none a placeholder in
    capitals: the text of the entry above, no spelling of a term."""
    words = line.split()
    return DESCRIPTIONS_END_TERMS and bool(_DESCRIPTION.match(line.strip())) \
        and any(w in _FUNCTION_WORDS for w in words) and not any(_PLACEHOLDER.fullmatch(w) for w in words)


def metadata_field(line: str) -> bool:
    """A field line (quotable._FIELD) that names no value (VALUE_FIELD): never a term (METADATA_FIELDS_NOT_TERMS)."""
    return METADATA_FIELDS_NOT_TERMS and not VALUE_FIELD.match(line.strip())


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


# Stop 51: an option list's item names its option once, at its head ("- css_class: An alias to Pygments cssclass
# formatter option. Set CSS class name for the wrapper <div> tag. Defaults to codehilite.", Python-Markdown's
# extensions); its later sentences were quoted without the name ("Defaults to ///Footnotes Go Here///", "Character
# which replaces white space in id"), or not at all when short ("Defaults to False"). They now lead with it:
# "css_class: Set CSS class name for the wrapper <div> tag" (quotable.py). False: as before.
ITEM_LABELS = True
# Stop 57, measured and not shipped (False): a term's later sentences lead with it too, where it is short. cdist's
# "mode" over "Unix permissions, suitable for chmod. Defaults to a very secure 0600." gives "mode: Unix permissions, …"
# and "Defaults to a very secure 0600", naming nothing ("owner"'s "Defaults to root." is too short to quote at all).
# Dev, at 25 characters (chosen over 40 and 60 there): cMCP key facts 0.676 either way, reference words PostgreSQL
# 0.278 -> 0.281, Python 0.317 -> 0.321, 26 manuals 0.4088 -> 0.4098; held out: the test halves 0.323 -> 0.322 and
# 0.322 -> 0.325, 24 manuals 0.3981 -> 0.3975. The name lifts every later sentence's overlap with a question that says
# it: FRR's answer on VTYSH_PAGER became three "VTYSH_PAGER: …" sentences in place of the one that says what it does.
TERM_LATER_SENTENCES = False
TERM_LATER_MAX_CHARS = 25


def named_later(sentence: str, label: str, term: str) -> str:
    """A later sentence of a list item (its `label`, ITEM_LABELS) or of the text a term names (a `term` of at most
    TERM_LATER_MAX_CHARS, TERM_LATER_SENTENCES), led by that name unless it says it already."""
    name = label or (term if TERM_LATER_SENTENCES and len(term) <= TERM_LATER_MAX_CHARS else "")
    return f"{name}: {sentence}" if name and name.lower() not in sentence.lower() else sentence
_ITEM_LABEL = re.compile(r"^[-*+•]?\s*`?([A-Za-z_][\w.\-]{0,39}?)`?\s*(?:\([^()\n]{1,40}\))?\s*(?::|\s[–—])\s+\S")
_GENERIC_LABELS = frozenset({"note", "notes", "example", "examples", "warning", "tip", "hint", "important", "caution",
                             "default", "defaults", "type", "types", "value", "values", "see", "usage", "returns",
                             "return", "raises", "yields", "parameters", "options", "result", "output", "input",
                             "syntax", "description", "summary", "status", "since", "deprecated", "todo", "fixme"})


def item_label(line: str) -> str:
    """The option a list item names at its head ("- PLACE_MARKER: A text string …" → "PLACE_MARKER", Sphinx's
    "- timeout (float) – …" → "timeout"), "" when it names none: one word that reads as an identifier (an
    underscore, dot, hyphen or digit in it, or all one case), never a generic label ("Note:", "default:")."""
    found = _ITEM_LABEL.match(line.strip()) if ITEM_LABELS else None
    if not found or found.group(1).lower() in _GENERIC_LABELS:
        return ""
    label = found.group(1).rstrip(".-")
    return label if re.search(r"[_.\-\d]", label) or label.islower() or label.isupper() else ""


# Stop 52: the line under a "See Also:" label lists other entries (toolz' napoleon field lists: "See Also:" /
# "compose pipe" right over the next entry's signature); it is no term line of the text below it. False: it was,
# and quoting read "compose pipe, class toolz.functoolz.curry(*args, **kwargs), Curry a callable function: …".
SEE_ALSO_CONTENT_NOT_TERMS = True
_SEE_ALSO = re.compile(r"[#*_\s]*see also[*_\s]*:?[*_\s]*", re.IGNORECASE)


def see_also_content(text: str, blocks: Sequence[Unit], at: int) -> bool:
    """Whether block `at` sits right under a "See also" label, so it lists other entries."""
    return SEE_ALSO_CONTENT_NOT_TERMS and at > 0 and bool(
        _SEE_ALSO.fullmatch(text[blocks[at - 1].start:blocks[at - 1].end]))


# Stop 53: a sentence that only says what an example below it shows ("Example of a session to an upstream, advertising
# only one prefix to it.", FRR's BGP page over its 16-line config) is no answer without the example: "code" skips it
# where code follows it in the passage, True wherever it stands, False quotes it (before stop 53). "For example, …"
# and a sentence with inline code say something themselves and are kept.
EXAMPLE_CAPTIONS: bool | str = "code"
_CAPTION = re.compile(r"^(?:(?:an?|the|this|another|here is an?|below is an?)\s+(?:[\w-]+\s+){0,2})?examples?\s+"
                      r"(?:of|including|showing|that shows|which shows|for|using|with|on how)\b", re.IGNORECASE)


def example_caption(sentence: str, after: Unit | None) -> bool:
    """`sentence` describes an example instead of saying something (EXAMPLE_CAPTIONS)."""
    if not EXAMPLE_CAPTIONS or "`" in sentence or not _CAPTION.match(sentence):
        return False
    return EXAMPLE_CAPTIONS is True or after is not None and after.kind == "code"


# Stop 53: a paragraph that ends on "the following <noun>" with no stop at all ("We call a function pure if it meets
# the following criteria" over a numbered list, toolz) introduces what comes next as a lead-in with a colon does, and
# carries it (False: quoted alone, as before stop 53).
FOLLOWING_WITHOUT_STOP = True
_FOLLOWING_END = re.compile(r"\bthe following(?:\s+[\w-]+){0,3}$", re.IGNORECASE)


def ends_following(raw: str) -> bool:
    """`raw` ends on "the following" and up to three words, with no punctuation after them (FOLLOWING_WITHOUT_STOP)."""
    return FOLLOWING_WITHOUT_STOP and bool(_FOLLOWING_END.search(raw.rstrip()))

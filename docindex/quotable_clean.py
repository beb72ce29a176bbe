"""A sentence as it is quoted: the Markdown scaffolding the chunk text keeps (links, list and heading
markers, emphasis, footnote marks, checkboxes, stray brackets) taken off, its final punctuation removed.
Split from quotable.py (which decides what is quoted) at stop 43; the rules are unchanged."""
from __future__ import annotations

import re

from .quotable_code import FENCE_RUN as _FENCE_RUN
from .quotable_code import MARKER_LIKE as _MARKER_LIKE
from .sentences import split_sentences

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")          # markdown link → its text
_CODE_SPAN = re.compile(r"`[^`\n]+`")
MARKERS = "footnotes"   # stop 40: "[1, 20]", "a[0]" are content, quoted as "(1, 20)", "a(0)"; "removed": as before
_FOOTNOTE = re.compile(r"(?<![\w\])])\[\s*\d+\s*\](?![\w\[(])")
_CHECKBOX = re.compile(r"(?:^|(?<=\s))(?:[-*+]\s+)?\[[ xX]\]\s+")  # a task list's "- [ ] ", also mid-line
# Markers a line starts with; not a table cell's "#" before its text ("# — Does not display extra zeros").
_LEAD = re.compile(r"^\s*(?:(?:#{1,6}|[-*+])\s+(?![\u2013\u2014]\s)|\d+[.)]\s+|>\s*|\|)+")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")
# Kept verbatim through the emphasis cleanup: code spans (`**kwargs`), dunder names (`object.__repr__`,
# `__init__.py`) and double underscores inside a word (`name__icontains`). Until stop 28 they lost
# their `**` and `__`: "object.__repr__(self)" was quoted as "object.repr(self)".
_VERBATIM = re.compile(r"`[^`\n]+`|(?<![\w*])__[A-Za-z0-9]\w*?__(?![\w*])|[A-Za-z0-9]+__\w+")
# Stop 49: a parameter's stars in a signature ("Cleaner(**kw)", "f(a, *args, **kwargs)"), after "(" or ", " and
# before ",", ")" or "=", are kept too: lxml's answers quoted "class lxml.html.clean.Cleaner(kw)".
PARAMETER_STARS = True
_PARAMETER_STARS = re.compile(r"(?:(?<=\()|(?<=,\s))\*{1,2}[A-Za-z_]\w*(?=\s*[,)=])")
# Stop 50: only brackets that would read as a citation ("In[4]", "clamps to [1, 20]") become parentheses;
# "obj[key]", "namedtuples([as_namedtuple=True])", "[a-z]" are quoted as written (until stop 50 every
# bracket was: IPython's answers quoted "obj(key)", a call for a subscript, and peewee's "namedtuples((…))").
# "all": as before.
BRACKETS = "citation-like"


def _unmarked(text: str) -> str:
    """`text` with no bracket pair a citation reader would take for a marker (module comment above)."""
    if BRACKETS == "all":
        return text.replace("[", "(").replace("]", ")")
    return _MARKER_LIKE.sub(lambda m: "(" + m.group()[1:-1] + ")", text)


_DANGLING_MARKER = re.compile(r"[;,]\s+\d{1,3}[.)]$")   # "…; 3.": the next item's marker, cut from its text
_QUOTED_LINE = re.compile(r"\n[ \t]*(?:>[ \t]?)+")          # a blockquote's wrapped line: "visible to\n> any user"


def _strip_emphasis(text: str) -> str:
    """`**bold**` / `__bold__` to their text, stray `**` / `__` off; code spans and identifiers kept as written."""
    kept: list[str] = []

    def keep(match: re.Match[str]) -> str:
        kept.append(match.group())
        return f"\x00{len(kept) - 1}\x00"

    # A text that holds NUL already is stripped as before: the placeholders would be ambiguous.
    protected = text if "\x00" in text else _VERBATIM.sub(keep, text)
    if PARAMETER_STARS and "\x00" not in text:
        protected = _PARAMETER_STARS.sub(keep, protected)
    text = _EMPHASIS.sub(r"\2", protected).replace("**", "").replace("__", "")
    return re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text) if kept else text


def clean_sentence(raw: str) -> str:
    """Markdown scaffolding off a sentence: links to their text, list/heading
    markers, emphasis, stray brackets; its final punctuation removed."""
    text = _LINK.sub(r"\1", _CHECKBOX.sub("", _QUOTED_LINE.sub("\n", raw)))
    text = _CODE_SPAN.sub(lambda m: _unmarked(m.group()), text)                 # `[1, 20]` is content
    text = (_MARKER_LIKE if MARKERS == "removed" else _FOOTNOTE).sub("", text)            # a footnote's [1] is not
    text = _LEAD.sub("", text)
    text = _strip_emphasis(text)
    text = _FENCE_RUN.sub(lambda m: "‹" * len(m.group()) if m.group()[0] == "<" else "›" * len(m.group()),
                          _unmarked(text))
    text = " ".join(text.replace("\u00b6", " ").split()).strip(" |")   # ¶: a heading's permalink sign
    text = _DANGLING_MARKER.sub("", text)
    return _balanced(text.rstrip(".!?:;, "))


def _balanced(text: str) -> str:
    """A parenthesized sentence loses the bracket its sentence split left unmatched:
    "(A password is only of use for roles having the LOGIN attribute, …" quotes without it."""
    if text.startswith("(") and text.count("(") > text.count(")"):
        text = text[1:].lstrip()
    if text.endswith(")") and text.count(")") > text.count("("):
        text = text[:-1].rstrip(".!?:;, ")
    return text


def first_sentence(text: str) -> str:
    """Only the first sentence, as the CitationChecker splits them: a marker
    closes one sentence, so a second one inside a candidate would be uncited."""
    first = split_sentences(text + ".")[0] if text else ""
    return first[:-1].rstrip(".!?:;, ") if first.endswith(".") else first.rstrip(".!?:;, ")

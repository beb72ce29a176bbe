"""Code comments quoted with the code they describe (docindex/quotable.py calls `commented_code`).

A whole-line comment of a few words over a few lines of code reads as a lead-in and its example:
"Be sure to enable row-level security on the table: `ALTER TABLE passwd ENABLE ROW LEVEL SECURITY;`".
"""
from __future__ import annotations

import itertools
import re

from .quotable_clean import clean_sentence, first_sentence
from .quotable_code import code_line as _code_line
from .quotable_code import quotable_code as _quotable_code
from .sentences import Unit, split_sentences

COMMENT_MIN_WORDS, COMMENTED_MAX_LINES = 4, 3
_COMMENT_LINE = re.compile(r"^\s*(?:#|//|--)\s+(.*)$")


def commented_code(text: str, unit: Unit) -> list[tuple[int, str]]:
    """In a code block, a whole-line comment of a few words with the code it describes (the
    lines after it, up to a blank line, the next comment or COMMENTED_MAX_LINES) as one sentence:
    "Be sure to enable row-level security on the table: `ALTER TABLE passwd ENABLE ROW LEVEL SECURITY;`"."""
    out: list[tuple[int, str]] = []
    lines = text[unit.start:unit.end].split("\n")
    offsets = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=unit.start))
    for i, line in enumerate(lines):
        comment = _COMMENT_LINE.match(line)
        first, said = i, comment.group(1) if comment else ""
        while WRAPPED_COMMENTS and comment and first > 0:      # "# Keep all backups …, 4 … archives," over
            above = _COMMENT_LINE.match(lines[first - 1])       # "# and an end of month archive …:" is one
            if not above or above.group(1).rstrip()[-1:] in (".", "!", "?", ":", ";"):
                break
            first, said = first - 1, f"{above.group(1).strip()} {said}"
        if not comment or len(said.split()) < COMMENT_MIN_WORDS or first < i and not _prose(said):
            continue            # joined lines that are no prose: "# define HAS_IPV6", "-- 1 | aaa | 1"
        code: list[str] = []
        continued = False           # the line before ended with "\\": this one is its argument, not a comment
        for following in lines[i + 1:]:
            if not following.strip() or (_COMMENT_LINE.match(following) and not continued) \
                    or following.startswith(("```", "~~~")) or len(code) == COMMENTED_MAX_LINES:
                break
            code.append(_code_line(following))
            continued = following.rstrip().endswith("\\")
        joined = " ".join(code)
        if continued or not _quotable_code(joined):
            continue                # a command cut before its end is not quoted
        said = clean_sentence(split_sentences(said)[-1] if first < i else said)   # the sentence over the code
        sentence = f"{said}: `{joined}`"
        if said and first_sentence(sentence) == sentence:
            out.append((offsets[first], sentence))
    return out


# Stop 44: a comment wrapped over several lines is one comment: the lines above the one over the code join it
# while each ends mid-sentence (borg's "# Keep all backups in the last 10 days, 4 additional end of week
# archives,\n# and an end of month archive for every month:" was quoted from "and an end of month …").
WRAPPED_COMMENTS = True
_PROSE_WORD = re.compile(r"^[a-z][a-z'\u2019-]*[,.:;]?$")


def _prose(text: str) -> bool:
    """Most of `text`'s words are lower-case words, as a sentence's are."""
    words = text.split()
    return sum(bool(_PROSE_WORD.match(w)) for w in words) >= 0.6 * len(words)

"""The sentences of a chunk worth quoting, the same at ingest and at answer time.

The extractive engine (deployments/engines/extractive.py) answers with sentences of the retrieved passages,
verbatim but cleaned of Markdown: prose, list items and table rows, never code, headings or a table's header
row on their own; a sentence that introduces a list carries its items, one that introduces a short code
example the code on one line; a definition's first sentence carries its term. `candidates` makes them.

Scoring a sentence needs its MiniLM vector, ~10-15 ms each on one core: most of an answer's time when it is
made per request. Ingest makes them once instead (`quotable_texts` of each chunk, embedded with the chunk;
table `quote_vectors`, docindex/store.py), keyed by `quote_key` of the text, and the index serves them with
the passages (MCP tool `quote_vectors`). A key is a hash of the exact text, so a vector is only ever used for
the sentence it was made from: a changed rule here makes old keys miss, never mislead.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import quotable_terms
from .quotable_clean import clean_sentence, first_sentence
from .quotable_code import inline_code as _inline_code
from .quotable_comments import commented_code as _commented_code
from .quotable_terms import VALUE_FIELD as _VALUE_FIELD
from .quotable_terms import VERSION_NOTE as _VERSION_NOTE
from .quotable_terms import code_term as _code_term
from .quotable_terms import ends_following, example_caption, item_label, metadata_field, named_later, see_also_content
from .quotable_terms import is_question as _is_question
from .quotable_terms import is_value as _is_value
from .quote_blobs import pack, quote_key
from .sentences import Unit, is_label, is_title, unit_sentence_spans, units
from .table_rows import row_text

_PLAIN_WORD = re.compile(r"[a-z]+(?=[\s,;:.!?]|$)")            # "and the …", not "fs_read", "filesystem-mcp"


@dataclass(frozen=True)
class Candidate:
    n: int              # passage number (1-based)
    start: int          # offset in the passage text: document order
    text: str           # cleaned, without its final punctuation


def candidates(texts: Sequence[str], min_words: int = 4, max_words: int = 80,
               max_items: int = 8, names: Sequence[str] = ()) -> list[Candidate]:
    """Sentences worth quoting: prose, list items and table rows (never headings; code only as a comment
    with the code it describes, `_commented_code`), of a readable length. A sentence that introduces a
    list ("… four tools:") carries the list's items with it, or the short code example that follows it
    (`_inline_code`). A passage's first sentence that starts in lower case is the tail of a sentence cut
    by chunking: skipped. `names`: the heading each text begins under (its heading path's last), which names
    a value field's text at the text's start (`_term`)."""
    found: list[Candidate] = []
    for n, text in enumerate(texts, start=1):
        blocks = units(text)
        name = names[n - 1] if n - 1 < len(names) else ""
        resumed: set[int] = set()       # units whose first sentence a lead-in above their code already quotes
        cut = CLIPPED_SKIPPED and text.endswith(CLIP_MARK) and bool(blocks) and blocks[-1].kind != "prose"
        blocks = blocks[:-1] if cut else blocks     # an item, row or code block cut by the clip: carried by nothing
        for b, unit in enumerate(blocks):
            after = blocks[b + 1] if b + 1 < len(blocks) else None     # the unit right after this one
            if unit.kind == "code" and COMMENTED_CODE:
                found += [Candidate(n, start, sentence) for start, sentence in _commented_code(text, unit)
                          if min_words <= len(sentence.split()) <= max_words]
            if unit.kind in ("code", "heading") or unit.kind == "prose" and is_title(text[unit.start:unit.end]):
                label = text[unit.start:unit.end].strip()       # a page's or a block's title is no sentence, but
                if LABELS_CARRY_CODE and after is not None and after.kind == "code" and is_label(label):
                    said = clean_sentence(label[2:-2])          # a bold label over its code reads as a lead-in:
                    sentence = _with_code(said, _inline_code(text, after))   # "Run tests by keyword expressions:
                    if sentence != said and min_words <= len(sentence.split()) <= max_words:   # `pytest -k …`"
                        found.append(Candidate(n, unit.start, sentence))
                continue
            value = _value_field(text, blocks, b) if unit.kind == "prose" else ""
            if value:
                found.append(Candidate(n, unit.start, value))   # "server.max-request-size: Default: 2097152 (2GB)"
                continue
            if TERMS_WITH_THEIR_TEXT_ONLY and after is not None and after.kind == "prose" \
                    and _term(text, blocks, b + 1, name) and _in_term(text, unit):
                continue                                        # quoted with the text it names, not alone
            if unit.kind == "row":
                spans = [(unit.start, unit.end)]
                if b == 0 or blocks[b - 1].kind != "row":       # a table also answers whole:
                    rows = _listed(text, blocks[b:], "row", max_items + 1)   # "kind — use: set — …; regex — …"
                    if len(rows) > 2:
                        table = clean_sentence(f"{rows[0]}: {'; '.join(rows[1:])}")
                        if min_words <= len(table.split()) <= max_words:
                            found.append(Candidate(n, unit.start, table))
                if after is not None and after.kind == "row" and not row_text(text[after.start:after.end]):
                    spans = []          # a header row ("command — what runs") leads its table, never alone
            else:
                spans = unit_sentence_spans(text, unit)
                if QUESTIONS_WHOLE and unit.kind == "prose" and 1 < len(spans) <= 2 \
                        and _is_question(text[spans[-1][0]:spans[-1][1]]):
                    continue            # a FAQ's question with its context: "I've made a mistake in the last
                    #                     commit. How do I change it?" answers nothing either
            term = _term(text, blocks, b, name) if unit.kind == "prose" else ""
            label = item_label(text[unit.start:unit.end]) if unit.kind == "item" else ""   # "- css_class: …"
            if SEE_ALSO_SKIPPED and (term.lower() == "see also" or see_also_content(text, blocks, b)):
                spans = []      # stop 48: Sphinx's seealso box; stop 52: a line under a "See Also:" label
            for start, end in spans:
                raw = text[start:end]
                if b in resumed and start == spans[0][0]:
                    continue            # "… to turn the pager off": quoted with the sentence the code interrupts
                if _PLAIN_WORD.match(raw) and (start == blocks[0].start or _continues(text, blocks, b, start, unit)):
                    continue            # the tail of a sentence cut by chunking, or cut off its line above
                if _is_question(raw):
                    continue                                    # a question answers nothing
                if CLIPPED_SKIPPED and raw.rstrip().endswith(CLIP_MARK) and end >= len(text.rstrip()):
                    continue            # cut by the prompt's clip: "… limit a user to a maximum of 60 requests per …"
                sentence = alone = clean_sentence(row_text(raw) if unit.kind == "row" else raw)
                points = ((raw.rstrip().endswith(".") and _DEICTIC.search(raw) or ends_following(raw)) and (  # + code
                    after.kind in ("code", "item", "row") if after is not None else cut and CUT_TARGETS_BARE))
                resumes = _resumes_after_code(text, blocks, b, raw) if end == unit.end else ""
                dangles = (DANGLING_LEAD_INS and after is not None and after.kind == "code"
                           and bool(_DANGLING.search(raw)) or bool(resumes))  # "… committed state with" + code
                runs_on = (LISTS_RUN_ON and unit.kind == "prose" and after is not None and after.kind == "item"
                           and bool(_DANGLING.search(raw)))
                if (raw.rstrip().endswith(":") or points or dangles or runs_on) and end == unit.end:
                    following = [u for u in blocks[b + 1:] if u.kind != "code"]
                    kind = following[0].kind if following else "item"
                    if CODE_FIRST and after is not None and after.kind == "code":
                        kind = "code"           # "… by the following:" right over code means the code, not a
                        #                         list further on (Debian Reference's iconv check)
                    items = _listed(text, following, kind, max_items) if kind in ("item", "row") and not dangles else []
                    items = items if kind != "row" or len(items) > 1 else []    # a header row alone is no table
                    if items:
                        listed = _AND_SEP.sub(r"\1 ", "; ".join(i for i in items if i))    # "b; and c", not "b; and; c"
                        sentence = f"{sentence}{'' if runs_on else ':'} {listed}"
                        resumed.update(range(b + 1, b + 1 + len(items)) if runs_on else ())    # fragments alone
                    elif after is not None and after.kind == "code":
                        carried = _with_code(sentence, _inline_code(text, after), "" if dangles else ":")
                        if carried == sentence and (dangles or LEAD_INS_WITHOUT_CODE_SKIPPED and (
                                LEAD_INS_WITHOUT_CODE_SKIPPED is True or _DEICTIC.search(sentence))):
                            continue    # "In that file add the following CSS:" and a 12-line stylesheet
                        sentence = f"{carried} {resumes}" if resumes else carried
                        if resumes:
                            resumed.add(b + 2)
                    elif BARE_LEAD_INS_SKIPPED:
                        continue        # "… provides the following credentials:" with nothing after it
                if sentence == alone and (POINTERS_SKIPPED and _POINTER.match(sentence) or example_caption(raw, after)):
                    continue            # "See Gunicorn's deployment documentation for additional tips"
                sentence = first_sentence(sentence)
                if EMPTY_FIELDS_SKIPPED and _EMPTY_FIELD.search(sentence):
                    continue            # "f (Callable[[...], Any]) –": a field whose description is empty
                if start != spans[0][0]:
                    sentence = named_later(sentence, label, term)   # "css_class: Set CSS class name for the …"
                words = len(sentence.split())
                if min_words <= words <= max_words:
                    if term and start == spans[0][0] and term.lower() not in sentence.lower():
                        sentence = f"{term}: {sentence}"        # "random.choice(seq): Return a random element …"
                    found.append(Candidate(n, start, sentence))
    return found


def _resumes_after_code(text: str, blocks: Sequence[Unit], b: int, raw: str) -> str:
    """The first sentence of the text a code block interrupts, when unit `b` ends mid-sentence (on a word, no
    stop) right over code and the prose after the code goes on in lower case (stop 44: Octave's "Another
    possible workaround is to use the command" `page_screen_output (false);` "to turn the pager off.", zsh's
    "For example, after putting" … "in your ~/.zshrc, typing ^F c will open…"); "" otherwise."""
    if not CODE_IN_SENTENCES or b + 2 >= len(blocks) or blocks[b + 1].kind != "code" \
            or blocks[b + 2].kind != "prose" or not raw.rstrip()[-1:].isalnum():
        return ""
    after = next((text[s:e] for s, e in unit_sentence_spans(text, blocks[b + 2])), "")
    if not re.match(r"[a-z]", after.lstrip()) or _term_line(text[blocks[b + 2].start:blocks[b + 2].end]):
        return ""           # a new entry's term ("isempty (a)" after Octave's example) goes on with nothing
    return clean_sentence(after)


# Stop 44 (False: each part quoted on its own, the lead-in only when it ends on a word of _DANGLING).
CODE_IN_SENTENCES = True
# Stop 44: a lead-in right over code carries the code, even when items follow it (False: the first items after
# the code, skipping it: "… with iconv(1) by the following: Tip; Use "--verbose" option …").
CODE_FIRST = True


# Stop 31's rules (evals/extractive_levers.py; False: the rule before). Not quoted: a sentence cut by the prompt's clip
# (CLIP_MARK); a lead-in with neither list nor code after it ("… provides the following credentials:"); a pointer ("See
# Gunicorn's docs", "To learn about X, refer to …"); a lead-in pointing at code too long to carry ("deictic": "… add the
# following CSS:"; True, any such lead-in, cost the Python dev half an evidence string: "… should be defined as:").
# Stop 53: "… run the following command." whose code the clip cut is a bare lead-in (CUT_TARGETS_BARE False: quoted).
CLIPPED_SKIPPED, BARE_LEAD_INS_SKIPPED, POINTERS_SKIPPED, SEE_ALSO_SKIPPED, CUT_TARGETS_BARE = (True,) * 5
# Stop 37: a bold label right over a short code block (pytest's "**Run tests by keyword expressions**" and `pytest -k
# …`) is quoted with it, as a lead-in ending in ":" is (False: never quoted); a Sphinx field list's entry with an empty
# description ("- f (Callable[[...], Any]) –", 140 in Flask's API reference) is neither quoted nor carried by its
# lead-in ("Parameters: …; f (…) –"; False: quoted as before).
LABELS_CARRY_CODE, EMPTY_FIELDS_SKIPPED = True, True
_EMPTY_FIELD = re.compile(r"\s[–—]$")
LEAD_INS_WITHOUT_CODE_SKIPPED: bool | str = "deictic"
_DEICTIC = re.compile(r"\b(?:following|below|as follows|like this|like so)\b", re.IGNORECASE)
CLIP_MARK = " …"
# Stop 39: a paragraph that stops mid-sentence on a word needing its object, right over code, is a lead-in without
# its colon (git's user manual: "… you can return the entire working tree to the last committed state with" and
# `$ git reset --hard HEAD`; quoted alone it ended on "with"). Carried with its code, or not quoted. False: as before.
DANGLING_LEAD_INS = True
# Stop 45: such a paragraph over a list goes on in its items ("… a test configuration by" / "1. copying the files …").
LISTS_RUN_ON = True
_AND_SEP = re.compile(r"\b(and|or); ")
_DANGLING = re.compile(r"\b(?:with|to|by|using|via|run|running|type|typing|use|as|like|from|into|enter|execute|invoke|"
                       r"call|called|named|is|are|the|a|an)\s*$", re.IGNORECASE)
_POINTER = re.compile(r"^(?:see(?![-\w])(?!\s+(?:that|whether|if|how)\b)|refer to\b(?!.*\b(?:as|by)\b)|(?:for (?:more|"
                      r"further|additional) (?:information|details|examples)|to (?:learn|find out|read) (?:more|about))"
                      r"[^,]*,\s*(?:see|refer to|consult|visit)\b)", re.I)


# A short paragraph that ends in a question is a question as a whole (a FAQ entry's title):
# none of its sentences is quoted. False: only the question sentence itself is left out.
QUESTIONS_WHOLE = True
TERM_MAX_WORDS, TERM_MAX_CHARS = 8, 100
# A term line is quoted only at the head of the text it names (`_term`), never alone: git's manual
# pages list examples as a command line over its explanation, and "git cherry-pick -n master~1 next"
# was quoted by itself, as an answer to "What does git cherry-pick do?". False: the rule before.
TERMS_WITH_THEIR_TEXT_ONLY = True
# A call or operator signature with its return type is a term too: `replace ( string text, from text, to text ) → text`,
# `jsonb ->> text → text` (PostgreSQL's function tables). No quotes or digits: an example (`repeat('Pg', 4) → PgPgPgPg`)
# has them. Measured on the dev halves (stop 28, evals/results/extractive-levers.json): PostgreSQL dev evidence in
# answer 27 -> 30 of 60, Python dev and the cMCP tune half unchanged. False: the rule before.
SIGNATURE_TERMS = True
SIGNATURE_MAX_WORDS = 16
_SIGNATURE = re.compile(r"^[^'\"\d\n→]+ → [^'\"\d\n→]+$")
# Stop 39: an SQL statement ended by ";" is an example, not a name its next paragraph defines: SQLite's examples
# put the caption above the statement ("Compute the current date." / "SELECT date();"), and each caption was
# quoted with the statement before it ("SELECT datetime(1092941466, 'unixepoch', 'localtime'): Compute the current
# unix timestamp"). A C prototype ("int sqlite3_close(sqlite3*);") is still a term. False: as before.
STATEMENTS_NOT_TERMS = True
_STATEMENT = re.compile(r"^(?:SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|WITH|PRAGMA|BEGIN|COMMIT|ROLLBACK|VACUUM|"
                        r"ATTACH|DETACH|EXPLAIN|REPLACE|VALUES|GRANT|REVOKE|SET)\b.*;\s*$", re.IGNORECASE | re.DOTALL)
_INNER_SENTENCE_END = re.compile(r"(?<=\S)[.!?][)\]\"'`*_]*\s+[A-Z`(\"'*_]")   # not a symbol first: "? (question mark)"
_SECTION_NUMBER = re.compile(r"^(?:\d+\.)+\d*\s")         # "13.2.3. Serializable Isolation Level": a title


def _term(text: str, blocks: Sequence[Unit], b: int, name: str = "") -> str:
    """The term a paragraph defines, when the line before it is one: a short one-line paragraph that is not a
    sentence itself (an API reference's `os.makedirs(name, mode=0o777, exist_ok=False)`, a glossary's word, a
    signature `replace ( string text, from text, to text ) → text`). Its first sentence is quoted with it: the
    description alone ("Recursive directory creation function") does not name what to use. Several term lines in a
    row name the same thing (an option's spellings `-S[<keyid>]`, `--gpg-sign[=<keyid>]`, `--no-gpg-sign`): all of
    them are the term, joined by commas; the last alone can say the opposite of the text. Value fields alone above
    the text ("Default: 25" over "SMTP port to use …") are named by the heading over them, or by `name` (the heading
    the text begins under) at the text's start; other fields alone ("Import name: jinja2.ext.loopcontrols") too, unless
    `metadata_field` takes them for metadata (quotable_terms.METADATA_FIELDS_NOT_TERMS, off)."""
    terms: list[str] = []
    named = False           # a field above the name ("Default: not set" over "server.max-request-size") is the
    values = True           # entry before's; values: every line taken or passed is a value field (or a version
    valued = _is_value(text, blocks[b])     # note), valued: one of them, or this line, is a value field
    at = b - 1
    while at >= 0 and blocks[at].kind == "prose" and len(terms) < (MAX_TERM_LINES if MULTI_LINE_TERMS else 1):
        line = text[blocks[at].start:blocks[at].end]
        if quotable_terms.is_description(line) and (terms or _term_line(text[blocks[b].start:blocks[b].end])):
            break               # the entry above's text, not this one's name (quotable_terms.DESCRIPTIONS_END_TERMS)
        note = HEADINGS_NAME_VALUES and bool(_VERSION_NOTE.match(line.strip()))
        term = "" if note else _term_line(line) or _code_term(text, blocks, at, b)
        field = FIELDS_PASSED and bool(_FIELD.match(line.strip()))
        if not term and not field and not note or field and named or term and see_also_content(text, blocks, at):
            break
        if term:
            terms.insert(0, term)
            named = named or not field
        value = _is_value(text, blocks[at])
        values, valued = values and (note or value), valued or value
        at -= 1
    terms = terms if named else [t for t in terms if not metadata_field(t)]    # fields alone: metadata (off)
    if HEADINGS_NAME_VALUES and valued and values and not named:
        heading = text[blocks[at].start:blocks[at].end].lstrip("#").strip() if at >= 0 else name
        above = _term_line(heading) if at < 0 or blocks[at].kind == "heading" else ""
        if above:
            terms.insert(0, above)
    return ", ".join(terms)


# Stop 44: value fields right under a heading ("### MAIL_PORT", "Default: 25", "SMTP port to use …": Scrapy's,
# Django's and Celery's settings) are quoted with the heading's name, "MAIL_PORT, Default: 25: SMTP port to use
# for sending emails"; before, "Default: 25: SMTP port …" named nothing (False: as before).
HEADINGS_NAME_VALUES = True


def _in_term(text: str, unit: Unit) -> bool:
    """Whether a line above a named text is part of its term (not quoted alone): a term line, or a line
    passed over that is neither a value field (one ending a sentence is quoted on its own, named by the
    heading: Celery's "Default: {'json'} (set, list, or tuple).") nor a version note."""
    line = text[unit.start:unit.end]
    return not HEADINGS_NAME_VALUES or bool(_term_line(line)) or not (
        _is_value(text, unit) or _VERSION_NOTE.match(line.strip()))


VALUE_FIELDS = True


def _value_field(text: str, blocks: Sequence[Unit], b: int) -> str:
    """A one-line "Default: 2097152 (2GB)" after the text of a term, quoted with that term (stop 43: lighttpd's
    options, each a term, its description, then its default; alone the line is too short to quote and says
    nothing of what it is the default of); "" when `b` is no such line."""
    line = text[blocks[b].start:blocks[b].end].strip()
    if not VALUE_FIELDS or b < 2 or "\n" in line or not _VALUE_FIELD.match(line) or blocks[b - 1].kind != "prose":
        return ""
    described = text[blocks[b - 1].start:blocks[b - 1].end].strip()
    if _term_line(described) or _FIELD.match(described):
        return ""           # Exim's "Use: main" / "Type: string†" / "Default: 50M" over the text: its term's fields
    term = _term(text, blocks, b - 1)
    sentence = clean_sentence(line)
    return f"{term}: {sentence}" if term and len(sentence.split()) <= TERM_MAX_WORDS else ""


# A field line between a term and its text ("Grammar: max-cache-size ( default | … );" in BIND's
# reference, too long to be a term) does not end the term: the name above it is still the term
# (stop 43: "Blocks: options, view, Tags: server: Sets the maximum amount of memory…" named no option).
FIELDS_PASSED = True
_FIELD = re.compile(r"^\**[A-Z][A-Za-z]*(?: [A-Za-z]+){0,2}\**::?\**\s+\S")


def _continues(text: str, blocks: Sequence[Unit], b: int, start: int, unit: Unit) -> bool:
    """A unit's first sentence goes on from the unit before, which ends mid-sentence: a wrapped
    line that chunking set apart ("…clamped `[1,64]`). Cooperative" / "cancellation: handlers
    poll …")."""
    if start != unit.start or b == 0 or blocks[b - 1].kind != "prose":
        return False
    if DESCRIBED_TERMS and _term(text, blocks, b):
        return False        # "server.max-request-size" over "maximum size in kbytes of the request …": a term
    before = text[blocks[b - 1].start:blocks[b - 1].end].rstrip(" *_`\"')]")
    return bool(before) and before[-1] not in ".!?:;"


# Stop 43: a description in lower case under its term (lighttpd's options, reST definition lists, man pages'
# "-v" / "be verbose") is quoted with the term; it was taken for the tail of a wrapped line and never quoted.
DESCRIBED_TERMS = True


def _term_line(line: str) -> str:
    """`line` as a term (`_term`), or "" when it is not one: never a line with a sentence's end
    inside it (the wrapped tail of a paragraph)."""
    raw = line.replace("\u00b6", "").strip()
    if _INNER_SENTENCE_END.search(raw) or is_label(raw) or (STATEMENTS_NOT_TERMS and _STATEMENT.match(raw)):
        return ""
    ends = raw.rstrip(")]\"'*_`")[-1:]
    if SIGNATURE_TERMS and _SIGNATURE.match(raw) and len(raw) <= TERM_MAX_CHARS \
            and len(raw.split()) <= SIGNATURE_MAX_WORDS and not (MENU_PATHS_NOT_TERMS and ends in (".", "!", "?")):
        return clean_sentence(raw)
    if "\n" in raw or "://" in raw or "\u2192" in raw or _SECTION_NUMBER.match(raw) or ends in (".", "!", "?", ":"):
        return ""                   # a sentence, a lead-in, a link, an example (→) or a numbered title
    term = clean_sentence(raw)
    if len(term.split()) > TERM_MAX_WORDS or len(term) > TERM_MAX_CHARS or not re.search(r"[^\W\d]", term):
        return ""
    return term


# Stop 44: a sentence with a menu path ("The Stock Split assistant is accessed by going to Actions → Stock Split… .",
# GnuCash's DocBook) is no signature term: it ends a sentence (False: taken for one, with the next paragraph).
MENU_PATHS_NOT_TERMS = True
# Up to this many term lines in a row make one term (`_term`). False: the line before only (before stop 30).
MULTI_LINE_TERMS = True
MAX_TERM_LINES = 4
# Measured (stop 28, evals/results/extractive-levers.json, "commented code"): the cMCP tune half's key facts 0.649 ->
# 0.676, dev halves unchanged (32 / 26 of 60); a plateau from 3 lines up, 3-6 words. False: code gives no candidate.
COMMENTED_CODE = True
def _with_code(sentence: str, code: str, colon: str = ":") -> str:
    """The lead-in with its code, when the two still read as one sentence."""
    if not code:
        return sentence
    joined = f"{sentence}{colon} `{code}`"
    return joined if first_sentence(joined) == joined else sentence


def _listed(text: str, blocks: Sequence[Unit], kind: str, limit: int) -> list[str]:
    """The first sentences of the run of `kind` units (items, or a table's rows)
    that `blocks` starts with: what a sentence ending in ':' introduces."""
    out: list[str] = []
    for u in blocks:
        if u.kind != kind or len(out) >= limit:
            break
        raw = text[u.start:u.end]
        line = first_sentence(clean_sentence(row_text(raw) if kind == "row" else raw))
        if line and not (EMPTY_FIELDS_SKIPPED and _EMPTY_FIELD.search(line)):
            out.append(line)
    return out


def quotable_texts(text: str, name: str = "") -> list[str]:
    """The distinct sentences of one chunk the extractive engine may quote (and so score); `name`:
    the heading the chunk begins under (`candidates`' names)."""
    return list(dict.fromkeys(c.text for c in candidates([text], names=[name])))


def chunk_blobs(chunks: Sequence[str], embed: Callable[[list[str]], np.ndarray],
                names: Sequence[str] = ()) -> list[bytes | None]:
    """Each chunk text's quote-vector blob (`pack`), None for one with nothing to quote;
    every chunk's sentences embedded in one `embed` call. `names`: as `candidates` takes them."""
    texts = [quotable_texts(text, names[i] if i < len(names) else "") for i, text in enumerate(chunks)]
    vectors = embed([t for chunk_texts in texts for t in chunk_texts])
    blobs: list[bytes | None] = []
    offset = 0
    for chunk_texts in texts:
        blobs.append(pack(chunk_texts, vectors[offset:offset + len(chunk_texts)]) if chunk_texts else None)
        offset += len(chunk_texts)
    return blobs


def lookup(tables: Sequence[Mapping[bytes, np.ndarray]], found: Sequence[Candidate]) -> list[np.ndarray | None]:
    """Each candidate's stored vector (from its own passage's table), or None."""
    return [tables[c.n - 1].get(quote_key(c.text)) if c.n - 1 < len(tables) else None for c in found]

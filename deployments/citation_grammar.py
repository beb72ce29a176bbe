"""The shape of a constrained answer, as a GBNF grammar built per request.

An answer is either exactly the refusal sentence, or 1..`MAX_SENTENCES`
sentences, each closed by one or more citation markers whose numbers name the
sources given to *this* request (1..k), at most three markers a sentence:

    cMCP needs only libcurl at run time [1]. It also builds on Windows [2, 3].

The grammar is the contract; every engine that can constrain decoding uses
the same text (llama.cpp's LlamaGrammar, vLLM's structured outputs through
xgrammar, llama-server's `grammar` field). Sentence text cannot contain
`[`, `]`, `<` or `>`: a marker can only appear where the grammar puts it, so
a model cannot forge a citation inside a sentence nor produce fence syntax.

`matches()` is the same language as a regular expression, for tests and for
engines whose output is checked instead of constrained.
"""
from __future__ import annotations

import re

from deployments.prompt import REFUSAL_SENTENCE

MAX_SENTENCES = 4
"""Enough for a brief answer; a bound turns a looping model into a short
answer instead of max_tokens of repetition."""

# Characters a sentence body may hold: anything printable but brackets, angle
# brackets, newlines and sentence ends (a sentence ends only before its markers).
_BODY_CHAR = r'[^\[\]<>\n.!?]'
_BODY_DOT = r'"." [^ \n\[\]<>.!?]'   # "e.g" / "1.5" / "llama.cpp": a dot not followed by a space


def _number_rule(k: int) -> str:
    return " | ".join(f'"{n}"' for n in range(k, 0, -1))   # longest first: "10" before "1"


def citation_gbnf(k: int) -> str:
    """GBNF for an answer over sources 1..k (k >= 1)."""
    if k < 1:
        raise ValueError("a constrained answer needs at least one source")
    refusal = REFUSAL_SENTENCE.replace('"', '\\"')
    more = ' (" " sentence)?' * (MAX_SENTENCES - 1)
    return "\n".join([
        f"root ::= refusal | sentence{more}",
        f'refusal ::= "{refusal}"',
        'sentence ::= start body " " marker marker? marker? end',   # at most 3: no "[4][4][4]…" loop
        'start ::= [A-Za-z0-9`"\'(*]',
        f'body ::= ({_BODY_CHAR} | {_BODY_DOT})+',
        'marker ::= "[" num (", " num)? (", " num)? "]"',
        f'num ::= {_number_rule(k)}',
        'end ::= "."',
    ]) + "\n"


def _num_regex(k: int) -> str:
    return "(?:" + "|".join(str(n) for n in range(k, 0, -1)) + ")"


def answer_regex(k: int) -> str:
    """The grammar's language as a Python regular expression (tests, checks)."""
    num = _num_regex(k)
    marker = rf"\[{num}(?:, {num}){{0,2}}\]"
    sentence = rf"[A-Za-z0-9`\"'(*](?:[^\[\]<>\n.!?]|\.[^ \n\[\]<>.!?])+ (?:{marker}){{1,3}}\."
    return rf"(?:{re.escape(REFUSAL_SENTENCE)}|{sentence}(?: {sentence}){{0,{MAX_SENTENCES - 1}}})"


def matches(answer: str, k: int) -> bool:
    """Whether `answer` is in the constrained language for sources 1..k."""
    return re.fullmatch(answer_regex(k), answer) is not None

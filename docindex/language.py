"""Passages in the question's language first, when a collection holds several languages.

A translated manual shares the original's commands, file names and technical words, and MiniLM and
BM25 both rank on those: with aptitude's manual in English, French and Spanish in one collection,
15 of an English question's top-10 pages (12 questions) were French or Spanish, 2 of 48 passages
(benchmarks/language_mix.py). Found while asking debmake-doc (HTML, PDF and text in six languages in
one folder), where 3 of 12 answers quoted German or Chinese; there it does not help: its partly
translated chapters mix languages inside a chunk (KNOWN_LIMITATIONS).

`language` names a text's language only when it is plain: by script for a text whose letters are
mostly Cyrillic, Greek, Arabic, Hebrew, Thai, Devanagari, Hangul, kana or Han; otherwise by the
function words of eight Latin-script languages, each list holding only words the others do not
use, when the best language has MIN_HITS of them (2 in a short question) and twice the next one.
Code, tables, names and short texts get None (code blocks, code spans and table rows are not read:
`CHECK ( logdate >= DATE … AND …)` read as Spanish), and a language moves nothing until OTHER_CHUNKS
candidates are in it. `same_language_first` moves the candidates whose
language is known and differs from the question's after the others, keeping every order within
each group; nothing is dropped, so a question in one language over documents in another still
gets them, and nothing moves unless some candidate is in the question's language (a question
misread as German over an English manual reorders nothing). Only the first 3k + 3 candidates are
read (WINDOW): ~0.7 ms a search at k = 4, ~1-1.8 ms at k = 10 (PostgreSQL index, this VM).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from . import duplicates
from .ranking import Ranked, Ranking
from .snapshot import Snapshot

_WORD = re.compile(r"[^\W\d_]+")
SCRIPTS = (("ja", re.compile(r"[\u3040-\u30ff]")), ("ko", re.compile(r"[\uac00-\ud7af]")),
           ("zh", re.compile(r"[\u4e00-\u9fff]")), ("ru", re.compile(r"[\u0400-\u04ff]")),
           ("el", re.compile(r"[\u0370-\u03ff]")), ("ar", re.compile(r"[\u0600-\u06ff]")),
           ("he", re.compile(r"[\u0590-\u05ff]")), ("th", re.compile(r"[\u0e00-\u0e7f]")),
           ("hi", re.compile(r"[\u0900-\u097f]")))
_NON_LATIN = re.compile(r"[\u0370-\u03ff\u0400-\u04ff\u0590-\u06ff\u0900-\u097f\u0e00-\u0e7f\u3040-\u30ff"
                        r"\u4e00-\u9fff\uac00-\ud7af]")
SCRIPT_SHARE = 0.3      # of a text's letters, for its script to name its language
KANA_SHARE = 0.05       # Japanese mixes Han with kana: a little kana makes Han text Japanese
FUNCTION_WORDS = {
    "en": "the and is are of to with this that which how what why does do can you your my i it when not "
          "from have has was were will would should there these those into by be been",
    "de": "der die das und ist nicht mit für von den dem des ein eine einen zu auf sie wird werden auch sich "
          "im als wenn oder wie wird kann können sind warum welche welcher wo ich",
    "fr": "le les et est des une du pour pas que qui dans sur avec ce il vous sont par au aux être cette "
          "comment pourquoi quel quelle où puis je ses",
    "es": "el los las y es que en una para con por se del al como más pero su lo esta este son "
          "cómo qué cuál dónde cuándo puedo",
    "it": "il gli è di che per non della delle sono nel nella anche questo questa come perché quale dove posso",
    "pt": "os é em um uma não do da no na mais pelo pela são também você",
    "nl": "het een en is van dat niet met voor op zijn er aan ook bij wordt worden deze",
    "sv": "och är att som för med på inte det den av till har",
}
_FUNCTION_SETS = {lang: set(words.split()) for lang, words in FUNCTION_WORDS.items()}
_SHARED = {w for a in _FUNCTION_SETS for w in _FUNCTION_SETS[a]
           if sum(w in words for words in _FUNCTION_SETS.values()) > 1}
DISTINCTIVE = {lang: {w for w in words - _SHARED if len(w) > 1 or lang == "en"}    # "y", "è": code's letters
               for lang, words in _FUNCTION_SETS.items()}
_LANGUAGE_OF = {word: lang for lang, words in DISTINCTIVE.items() for word in words}   # each word is one's
_NOT_PROSE = re.compile(r"```.*?(?:```|\Z)|`[^`\n]*`|^\|[^\n]*", re.DOTALL | re.MULTILINE)  # code, spans, table rows
WINDOW = 3              # candidates read: WINDOW × k + WINDOW (each read costs ~0.03 ms)
OTHER_CHUNKS = 2        # chunks of one other language in the window before any moves: one is a misreading
MIN_HITS = 4            # function words for a text's language (a question: 2)
READ_CHARS = 500        # of a chunk: enough to tell, bounded whatever the chunk


def language(text: str, *, short: bool = False) -> str | None:
    """The text's language code, or None when it is not plain (module docstring)."""
    text = _NOT_PROSE.sub(" ", text[:READ_CHARS])
    words = _WORD.findall(text.lower())
    letters = sum(map(len, words))
    if not letters:
        return None
    if not text.isascii() and _NON_LATIN.search(text):
        counts = {lang: len(pattern.findall(text)) for lang, pattern in SCRIPTS}
        if counts["ja"] >= KANA_SHARE * letters:
            return "ja"
        best = max(counts, key=lambda lang: counts[lang])
        if counts[best] >= SCRIPT_SHARE * letters:
            return best
    hits = Counter(lang for w in words if (lang := _LANGUAGE_OF.get(w)) is not None).most_common(2) + [("", 0)] * 2
    (lang, top), (_, second) = hits[0], hits[1]
    return lang if top >= (2 if short else MIN_HITS) and top >= 2 * second else None


def same_language_first(query: str, ranked: list[Ranked], k: int,
                        texts: Callable[[list[int]], dict[int, str]]) -> list[Ranked]:
    """`ranked` with the candidates in another language than the query's after the others."""
    asked = language(query, short=True)
    if asked is None or len(ranked) <= 1:
        return ranked
    window = ranked[:WINDOW * k + WINDOW]
    text_of = texts([item.chunk_id for item in window])
    said = {item.chunk_id: language(text_of.get(item.chunk_id, "")) for item in window}
    counts = Counter(lang for lang in said.values() if lang is not None and lang != asked)
    other = {chunk_id for chunk_id, lang in said.items() if lang is not None and counts[lang] >= OTHER_CHUNKS}
    if not other or asked not in said.values():
        return ranked           # one language, or none of the question's: a wrong guess moves nothing
    return ([item for item in window if item.chunk_id not in other]
            + [item for item in window if item.chunk_id in other] + ranked[len(window):])


def final_order(query: str, ranked: list[Ranked], k: int, doc_of: dict[int, int], snapshot: Snapshot,
                texts: Callable[[list[int]], dict[int, str]], ranking: Ranking,
                twin_of: duplicates.Twins | None = None) -> list[Ranked]:
    """A hybrid ranking's last steps: the question's language first, then each copied passage once (and a
    long document's copy of a page as that page, with `twin_of`: duplicates.py)."""
    if ranking.same_language:
        ranked = same_language_first(query, ranked, k, texts)
    if ranking.distinct:
        ranked = duplicates.distinct_ranked(ranked, k, doc_of, snapshot, texts, ranking.per_doc, twin_of)
    return ranked

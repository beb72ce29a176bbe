"""CitationChecker: which sources an answer cites, and whether it sticks to them.

Cheap and deterministic on purpose (no second model): a sentence is
"supported" when enough of its content words appear in the passages it
cites. This catches uncited claims, citations of the wrong source and
numbers that name no source; it does not judge paraphrase or negation.

What a citation is: `CITATION_PATTERN` (docindex/sentences.py), `[n]`, `[n, m]`, with optional
spaces inside the brackets (`[ 9 ]`). The web page uses the same pattern
(tests/web/test_citation_pattern.py), so what the page renders as a citation
is what the checker counts.

Support of an answer: the mean over its scorable sentences (those with
content words). An answer that is not the refusal but has no scorable
sentence (only markers, only stopwords, empty) gets 0.0: it says nothing the
sources back. A refusal claims nothing and gets 1.0; refusals are scored by
the refusal metrics, not by support.

Evidence: for each scored sentence, the sentence of its cited passages that
shares the most content words with it, as (passage number, character span in
the passage text); the page highlights it when a citation is opened.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from ray import serve

from deployments import tracing
from deployments.passage import Passage
from deployments.prompt import REFUSAL_SENTENCE
from docindex.sentences import CITATION_PATTERN, sentence_spans, split_sentences

SPAN = "citations.check"

_CITATION = re.compile(CITATION_PATTERN)
_WORD = re.compile(r"\w+", re.UNICODE)
# Words that carry no claim: ignored when measuring support.
_STOPWORDS = frozenset(
    "a an the and or but if then so of to in on at by for with from as is are was were be been "
    "it its this that these those there here which who whom what when where why how not no can "
    "could should would will may might must do does did has have had you your we our they their "
    "he she his her i me my also than such into about over under more most other some any each".split()
)

DEFAULT_MIN_SUPPORT = 0.5
"""A sentence counts as supported when at least this fraction of its content
words occurs in its cited passages (calibrated roughly: paraphrase keeps about
half the words, invented facts far fewer)."""


@dataclass(frozen=True)
class Evidence:
    """The passage span that best supports answer sentence `sentence` (0-based)."""

    sentence: int
    n: int              # passage number (1-based, as cited)
    start: int          # character offsets in that passage's text
    end: int
    overlap: float      # share of the sentence's content words found in the span


@dataclass(frozen=True)
class CheckResult:
    citations: list[int] = field(default_factory=list)
    invalid_citations: list[int] = field(default_factory=list)
    unsupported_sentences: list[int] = field(default_factory=list)
    support: float = 1.0
    refused: bool = False
    evidence: list[Evidence] = field(default_factory=list)


def _normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("\u2019", "'").replace("\u2018", "'")
    return " ".join(text.lower().split())


def is_refusal(answer: str) -> bool:
    """The model used the fixed refusal sentence (anywhere, case/quote-insensitive)."""
    return _normalize(REFUSAL_SENTENCE) in _normalize(answer)


def cited_numbers(text: str) -> list[int]:
    """All numbers in [n], [n, m] and [n][m] markers, in order of appearance."""
    return [int(n) for group in _CITATION.findall(text) for n in group.split(",")]


def content_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(_CITATION.sub(" ", text).lower()) if w not in _STOPWORDS and len(w) > 1}


SentenceWords = list[tuple[int, int, set[str]]]


def passage_sentences(text: str) -> SentenceWords:
    """A passage's sentence spans, each with its content words."""
    return [(start, end, content_words(text[start:end])) for start, end in sentence_spans(text)]


def best_evidence(index: int, words: set[str], cited: Sequence[int],
                  sentences: Sequence[SentenceWords]) -> Evidence | None:
    """The cited passage sentence sharing the most content words with `words`
    (`sentences[n - 1]` is passage n's, from `passage_sentences`)."""
    best: Evidence | None = None
    for n in cited:
        for start, end, sentence_words in sentences[n - 1]:
            overlap = len(words & sentence_words) / len(words)
            if overlap > 0 and (best is None or overlap > best.overlap):
                best = Evidence(index, n, start, end, round(overlap, 4))
    return best


def check(answer: str, passages: Sequence[Passage], *, min_support: float = DEFAULT_MIN_SUPPORT) -> CheckResult:
    """Citations, invalid citations, per-sentence support and model refusal."""
    valid_range = range(1, len(passages) + 1)
    numbers = cited_numbers(answer)
    citations = sorted({n for n in numbers if n in valid_range})
    invalid = sorted({n for n in numbers if n not in valid_range})
    refused = is_refusal(answer)

    passage_words = [content_words(p.text + " " + p.title) for p in passages]
    sentences: dict[int, SentenceWords] = {}   # per cited passage, split once per answer
    unsupported: list[int] = []
    scores: list[float] = []
    evidence: list[Evidence] = []
    for i, sentence in enumerate(split_sentences(answer)):
        if is_refusal(sentence):
            continue                      # the refusal claims nothing
        words = content_words(sentence)
        if not words:
            continue                      # "[1]" alone, or only stopwords
        cited = sorted({n for n in cited_numbers(sentence) if n in valid_range})
        cited_words: set[str] = set().union(*(passage_words[n - 1] for n in cited)) if cited else set()
        score = len(words & cited_words) / len(words)
        scores.append(score)
        if score < min_support:
            unsupported.append(i)
        for n in cited:
            if n not in sentences:
                sentences[n] = passage_sentences(passages[n - 1].text)
        span = best_evidence(i, words, cited, [sentences.get(n, []) for n in valid_range])
        if span is not None:
            evidence.append(span)
    if scores:
        support = sum(scores) / len(scores)
    else:
        support = 1.0 if refused else 0.0     # see the module docstring
    return CheckResult(citations, invalid, unsupported, round(support, 4), refused, evidence)


@serve.deployment
class CitationChecker:
    """Thin deployment around `check` (CPU-only, stateless: scales out freely)."""

    def __init__(self, min_support: float = DEFAULT_MIN_SUPPORT, otel_endpoint: str | None = None) -> None:
        tracing.setup_tracing("askdocs-citations", otel_endpoint)
        self.min_support = min_support

    async def check(self, answer: str, passages: list[Passage],
                    trace: dict[str, str] | None = None) -> CheckResult:
        with tracing.replica_span(SPAN, trace):
            return check(answer, passages, min_support=self.min_support)

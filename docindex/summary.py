"""A document's summary and tags, from its own text (no model).

`summarize(title, sections, texts)`:
- summary: extractive. The document's sentences (prose only: headings, code
  blocks, lists, tables and quotes are skipped, and so are fragments a chunk
  cut at its start) scored by how much of the
  document's vocabulary they carry (the mean frequency of their content
  words, so a long sentence does not win by length), with a small bonus for
  coming early; the best `max_sentences` are returned in document order,
  word for word, within `max_chars`.
- tags: the document's section headings (lowercased, in order), then its
  most frequent content words not already in a tag; at most `max_tags`.

Deterministic: ties go to the earlier sentence or word.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .textsearch import STOPWORDS

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_WORD = re.compile(r"[^\W_][\w'-]*", re.UNICODE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_NOT_PROSE = re.compile(r"^\s*(#|\||[-*+]\s|\d+[.)]\s|>|<!--|!\[|\[\^)")
_MIN_WORDS = 4


@dataclass(frozen=True)
class Summary:
    summary: str
    tags: tuple[str, ...]


def content_words(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text))
            if len(w) > 2 and w not in STOPWORDS and not w.isdigit()]


def prose_sentences(texts: Iterable[str]) -> list[str]:
    """The sentences of running text, in order; markup lines and code blocks left out."""
    sentences: list[str] = []
    for text in texts:
        paragraph: list[str] = []
        in_code = in_block = False          # in a fence; in a list item, table or quote (until a blank line)
        for line in text.splitlines() + [""]:
            if _FENCE.match(line):
                in_code = not in_code
                continue
            if not line.strip():
                in_block = False
            elif _NOT_PROSE.match(line):
                in_block = True
            if in_code or in_block or not line.strip():
                if paragraph:
                    sentences += _SENTENCE_END.split(" ".join(paragraph))
                    paragraph = []
                continue
            paragraph.append(line.strip())
    seen: set[str] = set()
    unique = []
    for sentence in (s.strip() for s in sentences):
        # Chunks overlap: a sentence repeated at a chunk border counts once.
        # A chunk may start mid-sentence: a lowercase start is a fragment, not a sentence.
        if len(sentence.split()) >= _MIN_WORDS and not sentence[0].islower() and sentence not in seen:
            seen.add(sentence)
            unique.append(sentence)
    return unique


def summarize(title: str, headings: Sequence[str], texts: Sequence[str], *, max_sentences: int = 3,
              max_chars: int = 600, max_tags: int = 8) -> Summary:
    sentences = prose_sentences(texts)
    frequency = Counter(w for s in sentences for w in content_words(s))

    def score(index: int) -> float:
        words = content_words(sentences[index])
        if not words:
            return 0.0
        return sum(frequency[w] for w in words) / len(words) * (1.0 + 0.5 / (1 + index))

    ranked = sorted(range(len(sentences)), key=lambda i: (-score(i), i))
    chosen: list[int] = []
    length = 0
    for i in ranked:
        if len(chosen) == max_sentences:
            break
        if length + len(sentences[i]) + 1 > max_chars and chosen:
            continue
        chosen.append(i)
        length += len(sentences[i]) + 1
    summary = " ".join(sentences[i] for i in sorted(chosen))
    if len(summary) > max_chars:            # one very long sentence
        summary = summary[:max_chars - 1].rsplit(" ", 1)[0] + "…"
    return Summary(summary=summary, tags=_tags(title, headings, frequency, max_tags))


def _tags(title: str, headings: Sequence[str], frequency: Counter[str], max_tags: int) -> tuple[str, ...]:
    tags: list[str] = []
    for heading in headings:
        tag = " ".join(heading.split()).lower()
        if tag and tag != title.strip().lower() and tag not in tags and len(tag) <= 60:
            tags.append(tag)
    headings_tags = tags[:max_tags // 2 or 1]
    covered = {w for tag in headings_tags for w in content_words(tag)} | set(content_words(title))
    terms = [w for w, _ in sorted(frequency.items(), key=lambda kv: -kv[1]) if w not in covered]
    return tuple((headings_tags + terms)[:max_tags])

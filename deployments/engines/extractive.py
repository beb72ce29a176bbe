"""An engine with no weights: answer with the passages' own best sentences.

For each request it splits the given passages into sentences, scores each
against the question, and answers with the best few, verbatim, each closed
by the marker of the passage it came from:

    cMCP's only runtime dependency is libcurl [1].

or the refusal sentence when no sentence clears `min_score`. It cannot
invent a fact or a citation number, it answers in milliseconds, and it is
the baseline a generative engine must beat to earn its cost (evals/).

Score of a sentence (all in [0, 1]):
    cosine_weight * cosine(question, sentence)       (the index's MiniLM, or its
                                                      static token vectors)
  + (1 - cosine_weight) * overlap(question, sentence)  (share of the question's
                                                      content words, prefix-
                                                      matched, in the sentence,
                                                      each weighted by its IDF
                                                      over the candidates)
  + rank_bonus * (1 - (n-1)/k)                        (retrieval's own order)
  - echo * (share of the sentence's content words the question has)
                                                     (stop 52: a sentence repeating the
                                                      question adds nothing; order only,
                                                      the refusal floor ignores it)
Selection: the best sentence; then, one at a time, the candidate with the
highest score minus `diversity` × its word overlap with the sentences already
chosen (maximal marginal relevance: a second sentence restating the first
adds nothing), among those scoring at least `keep_ratio` of the best, not
near-duplicates, while they fit `max_sentences` and max_tokens. The best
sentence leads, the others follow in document order. A paragraph's first
sentence is quoted with the term it defines when the line before it is one
(`_term`): "os.makedirs(name, mode=0o777, exist_ok=False): Recursive directory
creation function [1]." names what to use; the description alone does not.

Embedders (`embedder`): `minilm` (default) embeds the EMBED_TOP best
candidates by term overlap with MiniLM (~15 ms each on one core: ~200-400 ms
an answer when none is cached, ~2 ms when all are); `static` ranks every
candidate with MiniLM's static token vectors (docindex/static_vectors.py: ~1 ms
for all of them), then scores the best sentence again with MiniLM itself for
the refusal floor, so `min_score` keeps its calibrated meaning at the cost of
one short MiniLM run: ~10x faster when nothing is cached, slightly less
faithful out of sample (evals/README.md); `none` is term overlap alone.
"""
from __future__ import annotations

import asyncio
import math
import re
import threading
from collections import OrderedDict
from collections.abc import AsyncGenerator, Sequence
from typing import Any

import numpy as np

from deployments.citations import content_words
from deployments.engines.base import Delta, Engine, GenParams, Prompt, Usage
from deployments.errors import ConfigError, EngineUnavailable
from deployments.passage import Passage
from deployments.prompt import REFUSAL_SENTENCE
from docindex import quotable, quote_blobs
from docindex.chunking import PATH_SEPARATOR
from docindex.quotable import Candidate
from docindex.quotable_clean import clean_sentence

__all__ = ["Candidate", "ExtractiveEngine", "candidates", "clean_sentence"]

_WORD = re.compile(r"\w+")

VECTOR_CACHE = 8192
"""Sentence vectors kept across requests (384 float32 each: ~12 MB)."""
EMBED_TOP = 12
"""Candidates embedded per answer (the best by term overlap): bounds the time
after retrieval whatever the passages' length."""


def candidates(passages: Sequence[Passage]) -> list[Candidate]:
    """The passages' quotable sentences (docindex/quotable.py), numbered as cited; each passage's
    title (its heading path) names value fields at its start ("MAIL_PORT, Default: 25: …")."""
    return quotable.candidates([p.text for p in passages], names=[p.title.rsplit(PATH_SEPARATOR, 1)[-1]
                                                                 for p in passages])


def echoes(question: str, found: Sequence[Candidate]) -> np.ndarray:
    """Each candidate's share of content words (stemmed) that the question has: 1.0 for a sentence that only
    repeats it ("You might want to use astropy on a telescope control machine behind a strict firewall")."""
    asked = _stems(content_words(question))
    said = [_stems(content_words(c.text)) for c in found]
    return np.array([len(words & asked) / len(words) if words else 0.0 for words in said])


def _stems(words: set[str]) -> set[str]:
    return {w[:5] for w in words}


def overlap(question_words: set[str], sentence: str, weights: dict[str, float] | None = None) -> float:
    """Weighted share of the question's content words (5-letter prefixes) the
    sentence has; `weights` (per prefix, default 1) favour the rare ones."""
    stems = _stems(question_words)
    if not stems:
        return 0.0
    w = weights or {}
    total = sum(w.get(t, 1.0) for t in stems)
    return sum(w.get(t, 1.0) for t in stems & _stems(content_words(sentence))) / total


def rarity(question_words: set[str], sentences: Sequence[str]) -> dict[str, float]:
    """IDF of each question prefix over the candidate sentences: a word every
    sentence has (the product's name) tells them apart less than a rare one."""
    bags = [_stems(content_words(s)) for s in sentences]
    n = len(bags)
    return {t: math.log(1 + n / (1 + sum(t in b for b in bags))) for t in _stems(question_words)}


NEAR_DUPLICATE = 0.9
"""Word overlap (`redundancy`) at which a further sentence is not said at all. 0.6 until stop 28:
it dropped an API reference's sibling entries, which share most words but name different things
("base64.b32encode(s): Encode the bytes-like object s…" / "base64.urlsafe_b64encode(s): Encode
bytes-like object s…"). With signature terms, dev halves' evidence in answer: 0.6 → 30 / 23 of 60,
0.9 → 32 / 24 (PostgreSQL / Python; a plateau from 0.9 to off), cMCP tune half unchanged
(evals/results/extractive-levers.json). Below 1.0 the same sentence from two overlapping
passages is still said once."""


def _cost(c: Candidate) -> int:
    """Tokens a quoted sentence costs, roughly (words × 1.4, plus its marker)."""
    return int(len(c.text.split()) * 1.4) + 4


def redundancy(a: str, b: str) -> float:
    """Share of the shorter sentence's words the other one has (0-1)."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / min(len(wa), len(wb)) if wa and wb else 0.0


class ExtractiveEngine(Engine):
    name = "extractive"

    def __init__(self, *, model: str = "", slots: int = 1, min_score: float = 0.35, cosine_weight: float = 0.6,
                 rank_bonus: float = 0.15, keep_ratio: float = 0.5, max_sentences: int = 3,
                 diversity: float = 0.3, echo: float = 0.05, embedder: str = "minilm", **unknown: Any) -> None:
        if unknown:
            raise ConfigError(f"unknown extractive engine option(s): {', '.join(sorted(unknown))}; allowed: "
                              "min_score, cosine_weight, rank_bonus, keep_ratio, max_sentences, diversity, echo, "
                              "embedder")
        if embedder not in ("static", "minilm", "none"):
            raise ConfigError(f"extractive embedder must be 'static', 'minilm' or 'none', got {embedder!r}")
        if not 1 <= max_sentences <= 10:
            raise ConfigError(f"extractive max_sentences must be 1..10, got {max_sentences}")
        super().__init__(model=model or f"extractive-{embedder}", slots=slots)
        self.min_score, self.cosine_weight, self.rank_bonus = min_score, cosine_weight, rank_bonus
        self.keep_ratio, self.max_sentences, self.diversity, self.echo = keep_ratio, max_sentences, diversity, echo
        self._embedder_name = embedder
        self._embedder: Any = None          # MiniLM: the floor (static) or every cosine (minilm)
        self._static: Any = None            # the token-vector embedder (static)
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._started = False

    async def start(self) -> None:
        if self._embedder_name in ("static", "minilm"):
            from docindex.minilm import default_embedder

            self._embedder = await asyncio.to_thread(default_embedder)
        if self._embedder_name == "static":
            from docindex.static_vectors import static_embedder

            self._static = await asyncio.to_thread(static_embedder)
        if self._embedder_name == "none":
            self.cosine_weight = 0.0
        self._started = True

    def _embed(self, texts: list[str]) -> np.ndarray:
        """The embedder through a bounded LRU: popular passages' sentences recur
        across questions, and each costs a MiniLM run (the engine's main cost)."""
        with self._lock:        # what is cached now (another slot may evict it before we are done)
            known = {t: self._vectors[t] for t in texts if t in self._vectors}
        missing = [t for t in dict.fromkeys(texts) if t not in known]
        known.update(zip(missing, self._embedder.embed(missing)) if missing else ())
        out = np.stack([known[t] for t in texts])
        with self._lock:
            for text in texts:
                self._vectors[text] = known[text]
                self._vectors.move_to_end(text)
            while len(self._vectors) > VECTOR_CACHE:
                self._vectors.popitem(last=False)
        return out

    def parts(self, question: str, found: Sequence[Candidate], k: int,
              headings: Sequence[str] = ()) -> tuple[np.ndarray, np.ndarray]:
        """Each candidate's term overlap and retrieval-rank share. A word of the
        question found only in the candidate's heading path counts half: a
        sentence under "Run on a GPU" answers a GPU question without repeating the word."""
        words = content_words(question)
        weights = rarity(words, [c.text for c in found])
        lexical = np.array([
            0.5 * overlap(words, c.text, weights)
            + 0.5 * overlap(words, c.text + " " + (headings[c.n - 1] if headings else ""), weights)
            for c in found], dtype=np.float32)
        rank = np.array([1 - (c.n - 1) / max(k, 1) for c in found], dtype=np.float32)
        return lexical, rank

    def cosines(self, question: str, found: Sequence[Candidate], cheap: np.ndarray,
                stored: Sequence[np.ndarray | None] = ()) -> np.ndarray:
        """Each candidate's cosine to the question: static vectors for all, or
        MiniLM for the EMBED_TOP best by `cheap` (its cost bounds the time).
        `stored`: each candidate's MiniLM vector as ingest stored it, or None;
        only the question and the sentences without one are embedded here."""
        cosine = np.zeros(len(found), dtype=np.float32)
        if self.cosine_weight <= 0:
            return cosine
        if self._static is not None:
            vectors = self._static.embed([question, *(c.text for c in found)])
            static: np.ndarray = np.clip(vectors[1:] @ vectors[0], 0.0, 1.0).astype(np.float32)   # numpy's @ is Any
            return static
        if self._embedder is not None:
            top = [int(i) for i in np.argsort(-cheap, kind="stable")[:EMBED_TOP]]
            known: dict[int, np.ndarray] = {}
            for i in top:
                vector = stored[i] if i < len(stored) else None
                if vector is not None:
                    known[i] = vector
            missing = [i for i in top if i not in known]
            vectors = self._embed([question, *(found[i].text for i in missing)])
            known.update(zip(missing, vectors[1:]))
            cosine[top] = np.clip(np.stack([known[i] for i in top]) @ vectors[0], 0.0, 1.0)
        return cosine

    def combine(self, cosine: np.ndarray | float, lexical: np.ndarray | float, rank: np.ndarray | float) -> Any:
        return self.cosine_weight * cosine + (1 - self.cosine_weight) * lexical + self.rank_bonus * rank

    def scores(self, question: str, found: Sequence[Candidate], k: int,
               headings: Sequence[str] = ()) -> np.ndarray:
        """Each candidate's score (module docstring)."""
        return self._scored(question, found, k, headings, ())[0]

    def _scored(self, question: str, found: Sequence[Candidate], k: int, headings: Sequence[str],
                stored: Sequence[np.ndarray | None]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The scores, with the term-overlap and rank parts they were made of."""
        lexical, rank = self.parts(question, found, k, headings)
        cosine = self.cosines(question, found, lexical + self.rank_bonus * rank, stored)
        return self.combine(cosine, lexical, rank), lexical, rank

    def stored_vectors(self, passages: Sequence[Passage], found: Sequence[Candidate]) -> list[np.ndarray | None]:
        """Each candidate's vector as ingest stored it (Passage.quote_vectors), or None."""
        if self._embedder is None or not any(p.quote_vectors for p in passages):
            return [None] * len(found)
        dim = int(self._embedder.dim)
        tables = [quote_blobs.unpack(p.quote_vectors, dim) if p.quote_vectors else {} for p in passages]
        return quotable.lookup(tables, found)

    def floor_score(self, question: str, best: Candidate, lexical: float, rank: float, score: float,
                    stored: np.ndarray | None = None) -> float:
        """The best sentence's score on MiniLM's scale, the one `min_score` was
        calibrated on: with static vectors, that one sentence is embedded again
        (its term-overlap and rank parts are those it was ranked with), unless
        ingest stored its vector."""
        if self._static is None or self._embedder is None or self.cosine_weight <= 0:
            return score
        vectors = self._embed([question] if stored is not None else [question, best.text])
        sentence = stored if stored is not None else vectors[1]
        cosine = float(np.clip(sentence @ vectors[0], 0.0, 1.0))
        return float(self.combine(cosine, lexical, rank))

    def choose(self, question: str, passages: Sequence[Passage], max_tokens: int) -> list[Candidate]:
        ranked = self.ranked(question, passages)
        return self.select(question, *ranked, max_tokens) if ranked else []

    def ranked(self, question: str,
               passages: Sequence[Passage]) -> tuple[list[Candidate], np.ndarray, np.ndarray] | None:
        """The candidates, their scores and their order (best first); None when there is none
        or the best scores below `min_score` (the answer is the refusal)."""
        found = candidates(passages)
        if not found:
            return None
        headings = [" ".join([p.title, p.anchor.replace("-", " ")]) for p in passages]
        stored = self.stored_vectors(passages, found)
        scores, lexical, rank = self._scored(question, found, len(passages), headings, stored)
        order = np.argsort(-scores, kind="stable")
        top = int(order[0])
        if self.floor_score(question, found[top], float(lexical[top]), float(rank[top]), float(scores[top]),
                            stored[top]) < self.min_score:
            return None
        if self.echo:                       # the order only: whether to refuse was decided above
            scores = scores - self.echo * echoes(question, found)
            order = np.argsort(-scores, kind="stable")
        return found, scores, order

    def select(self, question: str, found: list[Candidate], scores: np.ndarray, order: np.ndarray,
               max_tokens: int) -> list[Candidate]:
        """The best sentence, then by maximal marginal relevance (module docstring)."""
        top = int(order[0])
        best = float(scores[top])
        first = found[top]
        chosen = [first]                                    # the best leads, whatever its length
        budget = max_tokens - _cost(first)
        eligible = [int(i) for i in order[1:] if float(scores[i]) >= self.keep_ratio * best]
        while len(chosen) < self.max_sentences:
            pick, value = None, -math.inf
            for i in eligible:
                c = found[i]
                if c in chosen or _cost(c) > budget:
                    continue
                overlap_with_chosen = max(redundancy(c.text, o.text) for o in chosen)
                if overlap_with_chosen >= NEAR_DUPLICATE:
                    continue
                marginal = float(scores[i]) - self.diversity * overlap_with_chosen
                if marginal > value:
                    pick, value = c, marginal
            if pick is None:
                break
            chosen.append(pick)
            budget -= _cost(pick)
        # The best sentence leads; the others follow in document order.
        return chosen[:1] + sorted(chosen[1:], key=lambda c: (c.n, c.start))

    @staticmethod
    def render(chosen: Sequence[Candidate]) -> list[str]:
        return [f"{c.text} [{c.n}]." for c in chosen] or [REFUSAL_SENTENCE]

    async def stream(self, prompt: Prompt, params: GenParams) -> AsyncGenerator[Delta, None]:
        if not self._started:
            raise EngineUnavailable("the extractive engine is not started")
        chosen = await asyncio.to_thread(self.choose, prompt.question, prompt.passages, params.max_tokens)
        sentences = self.render(chosen)
        emitted = 0
        for i, sentence in enumerate(sentences):
            text = sentence if i == 0 else " " + sentence
            emitted += len(text.split())
            yield Delta(text=text)
        yield Delta(finish_reason="stop", usage=Usage(prompt_tokens=0, completion_tokens=emitted))

    async def abort(self, request_id: str) -> None:
        """Nothing runs for a request outside its own stream: the answer is chosen
        in one bounded call before the first sentence is sent, and a consumer that
        leaves closes the stream (the base contract's abort is a no-op here)."""

    async def check_health(self) -> None:
        if not self._started:
            raise EngineUnavailable("the extractive engine is not started")

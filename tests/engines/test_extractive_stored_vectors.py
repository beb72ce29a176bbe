"""The extractive engine reads the sentence vectors ingest stored (Passage.quote_vectors):
it then embeds only the question, and answers exactly as when it embeds every sentence."""
from __future__ import annotations

import dataclasses

import numpy as np

from deployments.engines.base import GenParams
from deployments.engines.extractive import ExtractiveEngine, candidates
from deployments.prompt import PromptLimits, build_prompt
from docindex import quotable, quote_blobs

from .test_extractive import PASSAGES

QUESTION = "What is the only runtime dependency of cMCP?"


class CountingEmbedder:
    """The engine's MiniLM, counting the texts it is asked to embed."""

    def __init__(self, inner) -> None:
        self.inner, self.dim, self.texts = inner, inner.dim, []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.inner.embed(texts)


async def _started(embedder: str = "minilm") -> ExtractiveEngine:
    engine = ExtractiveEngine(embedder=embedder)
    await engine.start()
    engine._embedder = CountingEmbedder(engine._embedder)
    return engine


async def _answer(engine: ExtractiveEngine, passages) -> str:
    prompt = build_prompt(QUESTION, passages, PromptLimits(4, 900))
    return "".join([d.text async for d in engine.stream(prompt, GenParams(request_id="x", max_tokens=256))])


def _with_stored(passages, embed) -> list:
    out = []
    for p in passages:
        texts = quotable.quotable_texts(p.text)
        blob = quote_blobs.pack(texts, embed(texts)) if texts else None
        out.append(dataclasses.replace(p, quote_vectors=blob))
    return out


async def test_stored_vectors_leave_only_the_question_to_embed_and_change_no_answer() -> None:
    plain = await _started()
    expected = await _answer(plain, PASSAGES)
    assert len(plain._embedder.texts) > 1                       # the question and the sentences

    engine = await _started()
    stored = _with_stored(PASSAGES, engine._embedder.inner.embed)
    assert await _answer(engine, stored) == expected
    assert engine._embedder.texts == [QUESTION]


async def test_a_sentence_without_a_stored_vector_is_embedded_here() -> None:
    engine = await _started()
    stored = _with_stored(PASSAGES[:1], engine._embedder.inner.embed) + PASSAGES[1:]   # one passage has none
    await _answer(engine, stored)
    missing = {c.text for c in candidates(PASSAGES) if c.n > 1}
    assert engine._embedder.texts[0] == QUESTION and set(engine._embedder.texts[1:]) <= missing
    assert engine._embedder.texts[1:]


async def test_vectors_of_another_size_are_ignored_not_misread() -> None:
    engine = await _started()
    expected = await _answer(await _started(), PASSAGES)
    wrong = _with_stored(PASSAGES, lambda texts: np.ones((len(texts), 16), dtype=np.float32))
    assert await _answer(engine, wrong) == expected


async def test_static_takes_the_floor_sentences_stored_vector() -> None:
    engine = await _started("static")
    stored = _with_stored(PASSAGES, engine._embedder.inner.embed)
    await _answer(engine, stored)
    assert engine._embedder.texts == [QUESTION]

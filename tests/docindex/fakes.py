"""A fast, deterministic stand-in for the MiniLM embedder (hashed bag of words).

Good enough that a query sharing words with a chunk scores a higher cosine,
and fast enough for the many tiny indexes the ingest tests build.
"""
from __future__ import annotations

import re
import time
import zlib

import numpy as np

_WORDS = re.compile(r"\w+")


class HashEmbedder:
    dim = 64

    def __init__(self, name: str = "test-hash", delay_s: float = 0.0) -> None:
        self.name = name
        self.delay_s = delay_s      # per embed() call: lets a test catch an ingest mid-run
        self.calls = 0
        self.texts = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        if self.delay_s:
            time.sleep(self.delay_s)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORDS.findall(text.lower()):
                out[row, zlib.crc32(word.encode()) % self.dim] += 1.0
            out[row, 0] += 1e-3     # never the zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def count_tokens(self, text: str) -> int:
        return len(_WORDS.findall(text)) + 2

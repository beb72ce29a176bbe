"""A chunk's quote vectors as one blob: per quotable sentence a key (a hash of its exact text) and its
vector, float16. Ingest stores one blob a chunk (quotable.chunk_blobs); the extractive engine looks
its candidates up in them (quotable.lookup). The sentences are quotable.py's; this is only the format."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

KEY_BYTES = 8
VECTOR_DTYPE = np.float16       # 384 × 2 bytes a sentence: cosines agree with float32 to ~1e-3


def quote_key(text: str) -> bytes:
    """The key a quotable sentence's vector is stored under: a hash of its exact text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=KEY_BYTES).digest()


def pack(texts: Sequence[str], vectors: np.ndarray) -> bytes:
    """One chunk's quote vectors as one blob: per sentence its key, then its vector (float16)."""
    if len(texts) != len(vectors):
        raise ValueError(f"{len(texts)} texts but {len(vectors)} vectors")
    dim = vectors.shape[1] if len(vectors) else 0
    out = np.zeros(len(texts), dtype=[("key", f"V{KEY_BYTES}"), ("vector", VECTOR_DTYPE, (dim,))])
    out["key"] = [quote_key(t) for t in texts]
    out["vector"] = vectors
    return out.tobytes()


def _records(blob: bytes, dim: int) -> np.ndarray | None:
    """`pack`'s blob as (key, vector) records; None for a blob that is not one of `dim`-sized vectors."""
    record = np.dtype([("key", f"V{KEY_BYTES}"), ("vector", VECTOR_DTYPE, (dim,))])
    if dim <= 0 or len(blob) % record.itemsize:
        return None
    return np.frombuffer(blob, dtype=record)


def unpack(blob: bytes, dim: int) -> dict[bytes, np.ndarray]:
    """key → float32 vector from `pack`'s blob; {} for a blob that is not one of `dim`-sized vectors."""
    rows = _records(blob, dim)
    if rows is None:
        return {}
    vectors = rows["vector"].astype(np.float32)
    return {bytes(k): v for k, v in zip(rows["key"], vectors)}


def best_cosine(blob: bytes, vector: np.ndarray) -> float | None:
    """The highest cosine of the unit `vector` with a sentence of `pack`'s blob (vectors of its size); None: no
    sentence in it."""
    rows = _records(blob, len(vector))
    return float(np.max(rows["vector"].astype(np.float32) @ vector)) if rows is not None and len(rows) else None

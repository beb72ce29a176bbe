"""The default embedder: all-MiniLM-L6-v2, re-quantized per channel when that
passes the fidelity check (docindex.quantize), else the shipped int8 file.

It sits above both `embedder` (the ONNX Runtime encoder and the model files)
and `quantize` (which runs that encoder to check a re-quantized copy), so
neither of those imports the other's caller.
"""
from __future__ import annotations

import functools
import threading

from .embedder import (
    BATCH_SIZE_FP32,
    BATCH_SIZE_QUANTIZED,
    Embedder,
    OnnxEmbedder,
    shipped_model_path,
    tokenizer_path,
)
from .quantize import best_model_path

_lock = threading.Lock()
_loaded: dict[str, str] = {}


def loaded_file() -> str | None:
    """The basename of the model file this process's default embedder runs ("model.onnx", the shipped one, or
    a re-quantized variant, docindex.quantize.VARIANTS), None before one is loaded: the CPU decides which, and
    answers differ with it, so /healthz reports it (docs/api.md)."""
    return _loaded.get("file")


@functools.cache
def _cached_default(threads: int, workers: int) -> OnnxEmbedder:
    model = best_model_path()
    _loaded["file"] = model.name
    batch = BATCH_SIZE_FP32 if model == shipped_model_path() else BATCH_SIZE_QUANTIZED
    return OnnxEmbedder(model, tokenizer_path(), threads=threads, workers=workers, batch_size=batch)


def default_embedder(threads: int = 1, workers: int = 1) -> Embedder:
    """The MiniLM embedder, one per (intra-op threads, parallel batches) per process.

    Uses the per-channel re-quantized model when it has been (or can be) built
    and passed the fidelity check, else the shipped file; both are the same
    model (cosine >= 0.99), so they share one name in the index.
    """
    with _lock:
        return _cached_default(threads, workers)

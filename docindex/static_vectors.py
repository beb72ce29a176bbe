"""Static token vectors distilled from MiniLM: a sentence vector in microseconds.

Every vocabulary token is run through the shipped MiniLM once, alone
(`[CLS] token [SEP]`), and the mean of the three outputs is kept: the
"model2vec" recipe, without its PCA and weighting. The table's common
direction (its first principal component) is then removed, as SIF does for
word vectors, since it says "this is English" and little else. A text's
vector is the mean of its tokens' rows, L2-normalised: no network run per
text, so scoring fifty sentences costs about a millisecond where MiniLM needs
~15 ms per sentence on one core.

It ranks sentences nearly as well as MiniLM itself (evals/README.md,
"Extractive engine: embedders"); its cosines are on another scale, so the
extractive engine still checks its refusal floor with MiniLM.

The table (30,522 × 384, float16, 23 MB) is built once per model file into
`cache_dir()` (~30 s idle, ~3 min at load 11 on 2 cores: at the first start
of an engine that uses it, or ahead with `python -m docindex.static_vectors`),
keyed by the model's SHA-256 and written atomically: concurrent builders
overwrite each other with the same bytes.
"""
from __future__ import annotations

import functools
import logging
import os
import tempfile
import threading
from pathlib import Path

import numpy as np

from .embedder import MODEL_DIM, shipped_model_path, tokenizer_path
from .hashing import sha256_file
from .quantize import cache_dir

log = logging.getLogger(__name__)

MAX_TOKENS = 256
_BATCH = 1024
_lock = threading.Lock()


def table_path(model: Path | None = None) -> Path:
    model = model or shipped_model_path()
    return cache_dir() / f"minilm-{sha256_file(model)[:16]}-static-tokens.npy"


def build_table(model: Path, threads: int = 2) -> np.ndarray:
    """(vocabulary, 384) float32: each token's MiniLM output, alone, minus the common direction."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    size = tokenizer.get_vocab_size()
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    table = np.zeros((size, MODEL_DIM), dtype=np.float32)
    for start in range(0, size, _BATCH):
        ids = np.arange(start, min(size, start + _BATCH))
        batch = np.stack([np.full(len(ids), cls), ids, np.full(len(ids), sep)], axis=1).astype(np.int64)
        feeds = {"input_ids": batch, "attention_mask": np.ones_like(batch)}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(batch)
        table[ids] = session.run(None, feeds)[0].mean(axis=1)
    common = np.linalg.svd(table - table.mean(axis=0), full_matrices=False)[2][0]
    flattened: np.ndarray = table - np.outer(table @ common, common)
    return flattened


def load_table(model: Path | None = None) -> np.ndarray:
    """The cached table, built and cached first when it is missing or unreadable."""
    model = model or shipped_model_path()
    path = table_path(model)
    with _lock:
        try:
            cached: np.ndarray = np.load(path).astype(np.float32)
            return cached
        except (OSError, ValueError):
            pass
        log.info("building MiniLM's static token vectors into %s (once per model file)", path)
        stored = build_table(model).astype(np.float16)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp.npy")
        os.close(fd)
        try:
            np.save(tmp, stored)
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
        # What every later load returns: the first run ranks as the later ones do.
        return stored.astype(np.float32)


class StaticEmbedder:
    """The Embedder interface over the token table (not for the index: its
    vectors are not MiniLM's, so `name` differs and an index refuses it)."""

    name = "all-MiniLM-L6-v2-static-tokens"
    dim = MODEL_DIM

    def __init__(self, table: np.ndarray) -> None:
        from tokenizers import Tokenizer

        self._table = table
        self._tokenizer = Tokenizer.from_file(str(tokenizer_path()))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts), add_special_tokens=False)):
            ids = encoding.ids[:MAX_TOKENS]
            if ids:
                vector = self._table[ids].mean(axis=0)
                out[row] = vector / max(float(np.linalg.norm(vector)), 1e-12)
        return out

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text).ids)


@functools.cache
def static_embedder() -> StaticEmbedder:
    """One per process: the table is 47 MB in float32."""
    return StaticEmbedder(load_table())


if __name__ == "__main__":      # `python -m docindex.static_vectors`: build the cache now
    logging.basicConfig(level=logging.INFO)
    print(f"{table_path()}: {load_table().shape}")

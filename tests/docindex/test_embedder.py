"""The ONNX MiniLM embedder and its cached per-channel int8 re-quantization."""
from __future__ import annotations

import json

import numpy as np
import pytest

from docindex import quantize
from docindex.embedder import MAX_TOKENS, OnnxEmbedder, shipped_model_path, tokenizer_path
from docindex.hashing import sha256_file
from docindex.minilm import default_embedder


@pytest.fixture(scope="module")
def embedder():
    return default_embedder()


def test_vectors_are_unit_length_and_independent_of_batching(embedder):
    texts = ["short", "a somewhat longer sentence about TLS termination at a proxy", "染发前需要做哪些准备？"]
    together = embedder.embed(texts)
    alone = np.vstack([embedder.embed([t]) for t in texts])
    assert together.shape == (3, 384) and together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(together, alone, atol=1e-4)         # dynamic padding + masked mean pooling


def test_parallel_workers_give_the_same_vectors_in_the_same_order(embedder):
    """Ingest embeds on several threads at once; queries on one. Both must agree."""
    texts = [f"chunk {i}: " + "proxy TLS termination " * (i % 7 + 1) for i in range(24)] + ["染发前需要做哪些准备？"]
    parallel = default_embedder(threads=1, workers=2).embed(texts)
    assert np.allclose(parallel, embedder.embed(texts), atol=1e-6)


def test_truncation_is_256_tokens_not_the_128_baked_into_the_file(embedder):
    words = " ".join(f"word{i}" for i in range(400))
    assert embedder.count_tokens(words) > MAX_TOKENS       # counting does not truncate
    head = embedder.embed([words])[0]
    cut_150 = " ".join(words.split()[:60])                 # ~150 tokens: a 128 window would ignore the rest
    assert float(head @ embedder.embed([cut_150])[0]) < 0.999


def test_related_texts_score_higher_than_unrelated_ones(embedder):
    q, related, unrelated = embedder.embed(["How do I enable TLS?", "Terminate TLS with nginx in front of the server",
                                            "Hair colouring needs a skin allergy test"])
    assert q @ related > q @ unrelated + 0.2


def test_the_requantized_model_keeps_cosine_fidelity(embedder):
    if embedder.model_path == shipped_model_path():
        pytest.skip("re-quantization unavailable here (onnx missing or disabled)")
    fidelity = quantize.measure_fidelity(shipped_model_path(), embedder.model_path)
    assert fidelity.mean_cosine >= 0.99 and fidelity.worst_cosine >= 0.98


def test_a_rejected_requantization_falls_back_to_the_shipped_file(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCINDEX_CACHE_DIR", str(tmp_path))
    for suffix, _ in quantize.VARIANTS:
        stem = f"minilm-{sha256_file(shipped_model_path())[:16]}-{suffix}"
        (tmp_path / f"{stem}.json").write_text(json.dumps({"accepted": False}))
    assert quantize.best_model_path() == shipped_model_path()


def test_a_rejected_signed_build_gives_way_to_the_unsigned_one_only_when_asked(tmp_path, monkeypatch):
    """An AVX2-only CPU rejects the signed int8 build (stop 48): the shipped file serves, unless
    DOCINDEX_REQUANTIZE=unsigned asks for the unsigned build, which then serves if it passed."""
    monkeypatch.setenv("DOCINDEX_CACHE_DIR", str(tmp_path))
    digest = sha256_file(shipped_model_path())[:16]
    (first, _), (second, _) = quantize.VARIANTS
    (tmp_path / f"minilm-{digest}-{first}.json").write_text(json.dumps({"accepted": False}))
    (tmp_path / f"minilm-{digest}-{second}.json").write_text(json.dumps({"accepted": True}))
    (tmp_path / f"minilm-{digest}-{second}.onnx").write_bytes(b"built earlier")
    assert quantize.best_model_path() == shipped_model_path()
    monkeypatch.setenv("DOCINDEX_REQUANTIZE", "unsigned")
    assert quantize.best_model_path() == tmp_path / f"minilm-{digest}-{second}.onnx"
    (tmp_path / f"minilm-{digest}-{first}.json").write_text(json.dumps({"accepted": True}))
    (tmp_path / f"minilm-{digest}-{first}.onnx").write_bytes(b"built earlier")
    assert quantize.best_model_path() == tmp_path / f"minilm-{digest}-{first}.onnx"   # the first accepted wins
    monkeypatch.setenv("DOCINDEX_REQUANTIZE", "0")
    assert quantize.best_model_path() == shipped_model_path()


@pytest.mark.slow
def test_requantization_is_built_once_and_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCINDEX_CACHE_DIR", str(tmp_path))
    pytest.importorskip("onnx")
    first = quantize.best_model_path()
    verdict = json.loads(first.with_suffix(".json").read_text())      # the variant that serves (VARIANTS order)
    assert verdict["accepted"] and first.parent == tmp_path
    built = first.stat().st_mtime_ns
    assert quantize.best_model_path() == first and first.stat().st_mtime_ns == built
    OnnxEmbedder(first, tokenizer_path()).embed(["loads and runs"])

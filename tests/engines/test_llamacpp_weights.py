"""The llamacpp engine's `weights` option: the shipped Q4_1 GGUF re-typed for fast prefill."""
import hashlib

import pytest

pytest.importorskip("llama_cpp")

from deployments.engines import gguf_convert  # noqa: E402
from deployments.engines.base import GenParams, Message, Prompt  # noqa: E402
from deployments.engines.gguf_convert import (  # noqa: E402
    DEFAULT_WEIGHTS,
    ORIGINAL,
    convert_gguf,
    converted_gguf,
    resolve_weights,
)
from deployments.engines.llamacpp import LlamaCppEngine  # noqa: E402
from deployments.engines.models import default_gguf  # noqa: E402
from deployments.errors import ConfigError  # noqa: E402

pytestmark = pytest.mark.model

QUESTION = Prompt((
    Message("system", "You answer questions about the text in the sources. Be brief."),
    Message("user", "Sources:\n[1] The capital of France is Paris.\n\nQuestion: What is the capital of France?"),
))


def file_type_and_params(path):
    """(general.file_type, number of parameters) as llama.cpp's own loader reads the file."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(path), n_ctx=64, verbose=False)
    try:
        return llm.metadata.get("general.file_type"), llm._model.n_params()
    finally:
        llm.close()


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_auto_weights_retype_only_the_shipped_default_model(monkeypatch):
    monkeypatch.setattr(gguf_convert, "native_bf16", lambda: False)
    assert resolve_weights("auto", default_model=True) == DEFAULT_WEIGHTS == "f16"
    assert resolve_weights("auto", default_model=False) == ORIGINAL
    assert resolve_weights(" F16 ", default_model=False) == "f16"
    monkeypatch.setattr(gguf_convert, "native_bf16", lambda: True)     # llama.cpp and the CPU have AVX512_BF16
    assert resolve_weights("auto", default_model=True) == "bf16"
    assert resolve_weights("auto", default_model=False) == ORIGINAL
    assert resolve_weights("f16", default_model=True) == "f16"


def test_auto_keeps_the_shipped_q4_1_where_amx_runs_it_and_asks_only_then(monkeypatch):
    monkeypatch.setattr(gguf_convert, "native_bf16", lambda: True)
    assert resolve_weights("auto", default_model=True, amx=lambda: True) == ORIGINAL
    assert resolve_weights("auto", default_model=True, amx=lambda: False) == "bf16"

    def never() -> bool:
        raise AssertionError("the AMX probe runs only for auto on the default model")

    assert resolve_weights("auto", default_model=False, amx=never) == ORIGINAL
    assert resolve_weights("q8_0", default_model=True, amx=never) == "q8_0"


def test_native_bf16_needs_both_the_build_and_the_cpu():
    built, without = "CPU : AVX2 = 1 | AVX512_BF16 = 1 | OPENMP = 1 |", "CPU : AVX2 = 1 | OPENMP = 1 |"
    cpu = "processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16 avx512_vnni\n"
    old_cpu = "processor\t: 0\nflags\t\t: fpu sse avx2 fma f16c\n"
    assert gguf_convert.bf16_in(built, cpu)
    assert not gguf_convert.bf16_in(without, cpu)          # a wheel built on an AVX2 machine
    assert not gguf_convert.bf16_in(built, old_cpu)
    assert not gguf_convert.bf16_in("", "")


def test_unknown_weights_is_a_config_error_listing_the_choices():
    with pytest.raises(ConfigError, match="allowed: auto, original, f16"):
        LlamaCppEngine(model="", weights="fp8")


def test_conversion_writes_a_new_cached_file_and_leaves_the_source_untouched(tmp_path):
    src = default_gguf()
    before = (src.stat().st_mtime_ns, sha256(src))
    out = convert_gguf(src, "f16", cache_dir=tmp_path)
    assert out == converted_gguf(src, "f16", tmp_path) and out.parent == tmp_path
    assert out.is_file() and out != src
    assert (src.stat().st_mtime_ns, sha256(src)) == before
    assert [p.name for p in tmp_path.iterdir()] == [out.name]  # no temporary file left behind
    written = out.stat().st_mtime_ns
    assert convert_gguf(src, "f16", cache_dir=tmp_path) == out  # cached: not written again
    assert out.stat().st_mtime_ns == written
    # llama.cpp loads it as an F16 model (llama_ftype 1) with the same parameters as the source.
    assert file_type_and_params(out) == ("1", file_type_and_params(src)[1])


def test_original_weights_load_the_file_as_it_is(tmp_path):
    assert convert_gguf(default_gguf(), ORIGINAL, cache_dir=tmp_path) == default_gguf()
    assert not any(tmp_path.iterdir())


def test_a_file_llama_cpp_cannot_read_is_a_readable_config_error(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ConfigError, match="could not convert broken.gguf to f16 weights"):
        convert_gguf(bad, "f16", cache_dir=tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())


async def test_engine_with_f16_weights_loads_the_converted_file_and_answers():
    engine = LlamaCppEngine(model="", slots=1, n_threads=2, weights="f16")
    await engine.start()
    try:
        assert engine._contexts[0].model_path == str(converted_gguf(default_gguf(), "f16"))
        deltas = [d async for d in engine.stream(QUESTION, GenParams(request_id="w1", max_tokens=16))]
    finally:
        await engine.close()
    *text, last = deltas
    assert last.finish_reason in ("stop", "length")
    assert 1 <= last.usage.completion_tokens <= 16
    assert "".join(d.text for d in text).strip()

"""Re-type a GGUF's weights for llama.cpp's fast CPU kernels; cached under var/models.

Why: llama.cpp's prompt processing (prefill) multiplies matrices. On x86 its
fast paths are llamafile's tinyBLAS (F32, F16, BF16, Q8_0, Q4_0, ...) and the
"repack" kernels (Q4_0, Q4_K, IQ4_NL); a Q4_1 tensor has neither, so every
prefill of the shipped SmolLM2 Q4_1 GGUF runs the generic row-by-row dot
product. The same weights written as F16 (lossless: each Q4_1 value d*q+m is
converted to the nearest half float) or Q8_0 (8 bits per weight, near lossless)
take the fast paths. benchmarks/llamacpp_prefill.py measures the difference.

The conversion uses llama.cpp's own quantizer (`llama_model_quantize`,
re-quantization allowed), so no extra package is needed. It runs on first use
(the engine's start), never at import, writes a new file next to the other
converted models, and never touches the source file (which may live in a
package's site-packages). Concurrent converters each write their own
temporary file and rename it into place, so a reader never sees half a file.
"""
from __future__ import annotations

import ctypes
import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from deployments.engines.models import DEFAULT_CONVERT_CACHE, gguf_cache_key
from deployments.errors import ConfigError

log = logging.getLogger(__name__)

AUTO = "auto"  # DEFAULT_WEIGHTS for the shipped default model, the file as it is otherwise
ORIGINAL = "original"  # load the file as it is
# llama_ftype values (llama.h): what each weight type asks llama_model_quantize for.
WEIGHT_FTYPES = {"f16": 1, "bf16": 32, "q8_0": 7, "q4_0": 2}
WEIGHT_CHOICES = (AUTO, ORIGINAL, *WEIGHT_FTYPES)
# What "auto" gives the shipped SmolLM2 Q4_1 (benchmarks/results/llamacpp_prefill.md): the file as
# it is where llama.cpp's AMX int8 kernels run here (they take Q4_1: prefill 580 vs 245 tok/s without
# them on the Intel VM, llamacpp_prefill_xeon_amx.md); else F16, or BF16 where both this llama.cpp
# build and this CPU have AVX512_BF16 (native BF16 dot products: prefill 990 vs 739 tok/s there, same
# fidelity to the Q4_1 original: top-1 0.960 both, KL 0.0033 vs 0.0031). Without native BF16 a BF16
# GGUF has no fast kernel.
DEFAULT_WEIGHTS = "f16"
NATIVE_BF16_WEIGHTS = "bf16"

_lock = threading.Lock()  # one conversion at a time in a process


def check_weights(weights: str) -> str:
    """The normalized weights choice, or a ConfigError naming the allowed ones."""
    value = (weights or "").strip().lower()
    if value not in WEIGHT_CHOICES:
        raise ConfigError(f"unknown llamacpp weights {weights!r}; allowed: {', '.join(WEIGHT_CHOICES)}")
    return value


def resolve_weights(weights: str, *, default_model: bool, amx: Callable[[], bool] = lambda: False) -> str:
    """The weight type to load: "auto" is, for the shipped default model (measured on it),
    the file as it is where `amx()` says llama.cpp's AMX int8 kernels run here
    (llamacpp_load.amx_quantized, asked only then), else NATIVE_BF16_WEIGHTS where
    `native_bf16()`, else DEFAULT_WEIGHTS; and the file as it is for any other GGUF (a
    user's model may be large, and its type may already have fast kernels)."""
    value = check_weights(weights)
    if value == AUTO:
        if not default_model or amx():
            return ORIGINAL
        return NATIVE_BF16_WEIGHTS if native_bf16() else DEFAULT_WEIGHTS
    return value


@functools.cache
def system_info() -> tuple[str, str]:
    """(the loaded llama.cpp's system info, /proc/cpuinfo); empty strings where either cannot be read."""
    try:
        import llama_cpp

        return (llama_cpp.llama_print_system_info().decode(errors="replace"),
                Path("/proc/cpuinfo").read_text(errors="replace"))
    except (ImportError, OSError, AttributeError):
        return "", ""


def native_bf16() -> bool:
    """True when the loaded llama.cpp was built with AVX512_BF16 and this CPU has it: a
    wheel built on another machine (.wheels/ is reused) may lack the kernels."""
    return bf16_in(*system_info())


def kernels_in(system_info: str, cpuinfo: str, built: str, flag: str) -> bool:
    """llama.cpp's system info says `built` = 1 and a /proc/cpuinfo flags line has `flag`."""
    flags = {flag for line in cpuinfo.splitlines() if line.startswith("flags")
             for flag in line.split(":", 1)[-1].split()}
    return f"{built} = 1" in system_info and flag in flags


def bf16_in(system_info: str, cpuinfo: str) -> bool:
    """llama.cpp's system info says AVX512_BF16 = 1 and a /proc/cpuinfo flags line has avx512_bf16."""
    return kernels_in(system_info, cpuinfo, "AVX512_BF16", "avx512_bf16")


def converted_gguf(src: Path, weights: str, cache_dir: Path = DEFAULT_CONVERT_CACHE) -> Path:
    """Where `convert_gguf` puts (or already put) `src` re-typed as `weights`.

    Keyed like the vLLM conversion (`gguf_cache_key`), so a replaced source
    with the same name converts again.
    """
    return cache_dir / f"{gguf_cache_key(src)}.{weights}.gguf"


def convert_gguf(src: Path, weights: str, cache_dir: Path = DEFAULT_CONVERT_CACHE, nthread: int = 0) -> Path:
    """The path of `src` with its weights re-typed as `weights`, converting once (cached).

    `weights` "original" returns `src` itself. SmolLM2-135M to F16: ~1-3 s,
    270 MB written.
    """
    weights = check_weights(weights)
    if weights == AUTO:
        raise ValueError("resolve_weights() first: 'auto' depends on which model this is")
    if weights == ORIGINAL:
        return src
    if not src.is_file():
        raise ConfigError(f"model file not found: {src}")
    out = converted_gguf(src, weights, cache_dir)
    if out.is_file():
        return out
    with _lock:
        if out.is_file():  # another thread converted it meanwhile
            return out
        try:
            import llama_cpp
        except ImportError as e:
            raise ConfigError("llama-cpp-python is not installed; run `make install`") from e
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f"{out.name}.{os.getpid()}.{threading.get_ident()}.partial")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = WEIGHT_FTYPES[weights]
        params.allow_requantize = True  # the source is already quantized (Q4_1)
        params.nthread = nthread
        from llama_cpp._logger import set_verbose

        set_verbose(False)  # llama.cpp logs a line per tensor otherwise; Llama() sets it again
        llama_cpp.llama_backend_init()
        started = time.perf_counter()
        try:
            failed = llama_cpp.llama_model_quantize(
                str(src).encode(), str(tmp).encode(), ctypes.byref(params)
            )
            if failed or not tmp.is_file():
                raise ConfigError(
                    f"llama.cpp could not convert {src.name} to {weights} weights "
                    f"(use weights: {ORIGINAL} to load it as it is)"
                )
            os.replace(tmp, out)
            log.info("converted %s to %s weights in %.1f s: %s", src.name, weights,
                     time.perf_counter() - started, out)
        finally:
            tmp.unlink(missing_ok=True)
    return out

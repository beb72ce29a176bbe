"""Load a GGUF into llama-cpp-python without running CPU code the machine cannot run.

llama.cpp built for the CPU it is built on (`make install` compiles it there) repacks a
quantized model's weights (Q4_0, Q4_1, Q8_0, the K-quants) for Intel AMX tiles when the CPU
reports AMX. Built by GCC < 14 from llama.cpp's own source, that path dies: GCC's
`_tile_loadconfig` declares 8 bytes read of the 64-byte tile configuration, so the stores of
the tiles' shapes are dropped as dead, no tile is configured, and the first `tilezero` is an
illegal instruction (SIGILL, no Python error). Found on the project's own 2-core VM (Intel
Xeon, Debian 12's GCC 12.2; the disassembly shows only `palette_id` written before
`ldtilecfg`). scripts/install_llamacpp.sh therefore builds llama.cpp with
scripts/patches/llama-cpp-amx-tilecfg.patch, and the AMX path runs (Q4_1 prefill 580 vs 245
tok/s without it there, benchmarks/results/llamacpp_prefill_xeon_amx.md; the same fidelity).

A wheel built elsewhere, or by another compiler, may still carry the bug, so before the first
quantized load on an AMX machine `amx_runs()` asks once, in a child process, whether
llama.cpp's AMX path runs here (it loads the shipped Q4_1 model and prefills 8 tokens). Where
it does not, models load with llama.cpp's extra weight buffers off
(`llama_model_params.use_extra_bufts`, which llama-cpp-python does not expose): the
weights stay in plain CPU buffers and run on the AVX-512/AVX2 kernels. Where the CPU or the
build has no AMX, nothing is asked and nothing changes.
"""
from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from deployments.engines.gguf_convert import kernels_in, system_info

log = logging.getLogger(__name__)

PROBE_TIMEOUT_S = 120.0
_PARAMS_LOCK = threading.Lock()
# The child: load the shipped Q4_1 model (its weights take the AMX buffers where the build has
# them) and prefill a few tokens. Exit 0 if that ran; a signal (SIGILL) if the AMX path died.
_PROBE = (
    "import sys, llama_cpp\n"
    "llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=64, n_batch=32, n_threads=1, verbose=False)\n"
    "llm.eval(llm.tokenize(b'The quick brown fox jumps over the lazy dog.')[:8])\n"
)


def amx_in(built: str, cpu: str) -> bool:
    """True when llama.cpp's system info says it has AMX kernels and the CPU flags list AMX."""
    return kernels_in(built, cpu, "AMX_INT8", "amx_int8")


@functools.cache
def amx_runs() -> bool:
    """False only where llama.cpp would run AMX tiles and a child process that does so dies."""
    if not amx_in(*system_info()):
        return True
    from deployments.engines.models import default_gguf

    try:
        done = subprocess.run([sys.executable, "-c", _PROBE, str(default_gguf())], capture_output=True,
                              timeout=PROBE_TIMEOUT_S, env={**os.environ, "OMP_NUM_THREADS": "1"})
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("llama.cpp AMX probe did not finish (%s): loading without AMX weight buffers", exc)
        return False
    if done.returncode != 0:
        log.warning("this CPU reports AMX but llama.cpp's AMX path died here (exit %s): quantized models "
                    "load without AMX weight buffers", done.returncode)
    return done.returncode == 0


def amx_quantized() -> bool:
    """True where llama.cpp runs quantized weights on AMX tiles here: the build and the CPU have
    AMX int8 and `amx_runs()` (a build without scripts/patches/llama-cpp-amx-tilecfg.patch dies)."""
    return amx_in(*system_info()) and amx_runs()


@contextmanager
def _model_params(**fields: Any) -> Iterator[None]:
    """llama-cpp-python's Llama() with these llama_model_params fields (it exposes no argument for them):
    its default-params function is swapped while one Llama is built, under a lock."""
    import llama_cpp.llama_cpp as bindings  # the ctypes module llama.py calls it through

    low: Any = bindings
    original = low.llama_model_default_params

    def params() -> Any:
        value = original()
        for name, field_value in fields.items():
            setattr(value, name, field_value)
        return value

    with _PARAMS_LOCK:
        low.llama_model_default_params = params
        try:
            yield
        finally:
            low.llama_model_default_params = original


def load_llama(model_path: str, **kwargs: Any) -> Any:
    """llama_cpp.Llama(model_path, **kwargs), with AMX weight buffers off where `amx_runs()` is False."""
    from llama_cpp import Llama

    if amx_runs():
        return Llama(model_path=model_path, **kwargs)
    with _model_params(use_extra_bufts=False):
        return Llama(model_path=model_path, **kwargs)

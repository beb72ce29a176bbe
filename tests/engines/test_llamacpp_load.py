"""Loading a quantized GGUF never runs llama.cpp code that dies on the machine (deployments/engines/llamacpp_load.py).

Found on this project's own VM: the CPU reports AMX, llama.cpp (built there) repacks a Q4_1 or
Q8_0 model for AMX tiles, and the first prefill died with SIGILL. The end-to-end test runs in a
child process, so a regression kills the child, not the test session.
"""
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

from deployments.engines import llamacpp_load  # noqa: E402
from deployments.engines.llamacpp_load import amx_in  # noqa: E402

pytestmark = pytest.mark.model

BUILT_AMX = "CPU : AVX2 = 1 | AVX512 = 1 | AVX512_BF16 = 1 | AMX_INT8 = 1 | OPENMP = 1 |"
BUILT_PLAIN = "CPU : AVX2 = 1 | AVX512 = 1 | AVX512_BF16 = 1 | OPENMP = 1 |"
CPU_AMX = "flags\t\t: fpu avx2 avx512f avx512_bf16 amx_bf16 avx512_fp16 amx_tile amx_int8\n"
CPU_PLAIN = "flags\t\t: fpu avx2 avx512f avx512_bf16\n"


@pytest.mark.parametrize("built, cpu, expected", [
    (BUILT_AMX, CPU_AMX, True),
    (BUILT_AMX, CPU_PLAIN, False),       # a wheel built on an AMX machine, run on another CPU
    (BUILT_PLAIN, CPU_AMX, False),       # a build without AMX kernels never takes the AMX path
    (BUILT_PLAIN, CPU_PLAIN, False),
])
def test_the_amx_path_is_only_taken_with_amx_kernels_on_an_amx_cpu(built, cpu, expected):
    assert amx_in(built, cpu) is expected


def test_where_this_machine_has_amx_the_installed_build_runs_it():
    """scripts/install_llamacpp.sh builds llama.cpp with scripts/patches/llama-cpp-amx-tilecfg.patch:
    without it GCC < 14 drops the tile configuration and the AMX path dies (SIGILL) on AMX CPUs."""
    from deployments.engines.gguf_convert import system_info

    if not amx_in(*system_info()):
        pytest.skip("this CPU or this llama.cpp build has no AMX int8")
    assert llamacpp_load.amx_runs() is True
    assert llamacpp_load.amx_quantized() is True


def test_model_params_are_set_while_one_model_loads_and_restored_after():
    import llama_cpp.llama_cpp as bindings

    assert bindings.llama_model_default_params().use_extra_bufts is True    # llama.cpp's default
    with llamacpp_load._model_params(use_extra_bufts=False):
        assert bindings.llama_model_default_params().use_extra_bufts is False
    assert bindings.llama_model_default_params().use_extra_bufts is True


def test_the_shipped_q4_1_model_prefills_on_this_machine(tmp_path):
    """The original Q4_1 file (`weights: original`, and what a user's own Q4 GGUF is like), loaded as the
    engine loads it, prefills and decodes: before load_llama it was an illegal instruction on AMX VMs."""
    child = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "from deployments.engines.llamacpp_load import amx_runs, load_llama\n"
        "from deployments.engines.models import default_gguf\n"
        "llm = load_llama(str(default_gguf()), n_ctx=256, n_batch=64, n_threads=1, verbose=False)\n"
        "out = llm('The capital of France is', max_tokens=4, temperature=0.0)\n"
        "print('amx_runs', amx_runs(), 'text', repr(out['choices'][0]['text']))\n"
    )
    root = str(Path(__file__).resolve().parents[2])
    done = subprocess.run([sys.executable, "-c", child, root], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert "amx_runs" in done.stdout

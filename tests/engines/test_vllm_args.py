"""vLLM engine options are checked by name against vLLM's own EngineArgs."""
import dataclasses

import pytest

from deployments.engines import vllm_engine
from deployments.engines.vllm_engine import ENGINE_ARGS_FILE, check_engine_args, engine_arg_names
from deployments.errors import ConfigError


def committed_names() -> set[str]:
    lines = ENGINE_ARGS_FILE.read_text().splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def test_committed_list_has_the_args_our_configs_use():
    assert {"max_model_len", "gpu_memory_utilization", "enforce_eager", "dtype",
            "enable_prefix_caching", "max_num_seqs", "tensor_parallel_size"} <= committed_names()


def test_misspelled_engine_arg_is_a_config_error():
    with pytest.raises(ConfigError, match="max_model_length"):
        check_engine_args({"max_model_length": 4096})


def test_model_and_max_num_seqs_come_from_the_generator_not_options():
    with pytest.raises(ConfigError, match="max_num_seqs"):
        check_engine_args({"max_num_seqs": 8})


def test_engine_rejects_unknown_args_before_importing_vllm():
    with pytest.raises(ConfigError, match="enable_prefix_cache"):
        vllm_engine.VllmEngine(model="Qwen/Qwen2.5-7B-Instruct", slots=8, enable_prefix_cache=True)


@pytest.mark.model_heavy  # runs in .venv-vllm with `make test-vllm`
def test_committed_list_matches_the_installed_vllm():
    pytest.importorskip("vllm")
    from vllm.engine.arg_utils import EngineArgs

    installed = {f.name for f in dataclasses.fields(EngineArgs)}
    assert committed_names() == installed, (
        "vLLM's EngineArgs changed: regenerate deployments/engines/vllm_engine_args.txt "
        "(see its header) for the vLLM version you pin"
    )
    assert engine_arg_names() == frozenset(installed)

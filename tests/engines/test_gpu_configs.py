"""The GPU Serve configs cannot run here: check them offline, strictly.

Serve's schema (strict keys, askdocs policy, slot matching) via
serve_app.config_check, plus every vLLM engine option against vLLM's own
EngineArgs field names (the committed list when vLLM is not installed).
"""
from pathlib import Path

import pytest
import yaml

from deployments.engines.vllm_engine import check_engine_args
from serve_app.config_check import problems

ROOT = Path(__file__).resolve().parents[2]
GPU_CONFIGS = ["serve_config.gpu.yaml", "serve_config.rocm.yaml"]


def load(name: str) -> dict:
    return yaml.safe_load((ROOT / name).read_text())


def app_of(config: dict) -> dict:
    (app,) = config["applications"]
    return app


def deployment(config: dict, name: str) -> dict:
    return next(d for d in app_of(config)["deployments"] if d["name"] == name)


@pytest.mark.parametrize("name", GPU_CONFIGS)
def test_config_passes_the_strict_serve_check(name):
    assert problems(load(name)) == []


@pytest.mark.parametrize("name", GPU_CONFIGS)
def test_engine_options_are_vllm_engine_args(name):
    args = app_of(load(name))["args"]
    assert args["engine"] == "vllm"
    check_engine_args(args["engine_options"])  # raises ConfigError naming any unknown arg


@pytest.mark.parametrize("name", GPU_CONFIGS)
def test_generator_has_one_gpu_per_replica_autoscales_and_is_slot_matched(name):
    config = load(name)
    gen = deployment(config, "Generator")
    assert gen["ray_actor_options"]["num_gpus"] == 1
    assert gen["autoscaling_config"]["max_replicas"] > gen["autoscaling_config"]["min_replicas"] >= 1
    assert gen["max_ongoing_requests"] == app_of(config)["args"]["engine_slots"]
    assert 0 < gen["autoscaling_config"]["target_ongoing_requests"] <= gen["max_ongoing_requests"]


@pytest.mark.parametrize("name", GPU_CONFIGS)
def test_gpu_prompt_uses_the_full_k(name):
    args = app_of(load(name))["args"]
    assert args["prompt_max_sources"] >= args["default_k"] >= 8


def test_a_misspelled_engine_option_in_a_gpu_config_is_caught():
    args = app_of(load("serve_config.gpu.yaml"))["args"]
    bad = dict(args["engine_options"], gpu_mem_utilization=0.9)
    with pytest.raises(Exception, match="gpu_mem_utilization"):
        check_engine_args(bad)


def test_rocm_variant_differs_from_the_nvidia_one_only_in_sizing():
    gpu, rocm = load("serve_config.gpu.yaml"), load("serve_config.rocm.yaml")
    sizing = {"model", "engine_slots", "max_concurrent"}
    strip = lambda args: {k: v for k, v in args.items() if k not in sizing | {"engine_options"}}  # noqa: E731
    assert strip(app_of(gpu)["args"]) == strip(app_of(rocm)["args"])
    assert set(app_of(gpu)["args"]["engine_options"]) == set(app_of(rocm)["args"]["engine_options"])
    assert [d["name"] for d in app_of(gpu)["deployments"]] == [d["name"] for d in app_of(rocm)["deployments"]]

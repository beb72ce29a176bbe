"""Engine name → class, imported lazily so a missing optional engine (vLLM)
costs nothing unless it is chosen."""
from __future__ import annotations

import importlib

from deployments.engines.base import Engine
from deployments.errors import ConfigError

ENGINES: dict[str, str] = {
    "fake": "deployments.engines.fake:FakeEngine",
    "openai": "deployments.engines.openai_compat:OpenAIEngine",
    "llamacpp": "deployments.engines.llamacpp:LlamaCppEngine",
    "vllm": "deployments.engines.vllm_engine:VllmEngine",
    "extractive": "deployments.engines.extractive:ExtractiveEngine",
}


def engine_class(name: str) -> type[Engine]:
    try:
        target = ENGINES[name]
    except KeyError:
        raise ConfigError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}") from None
    module, _, attr = target.partition(":")
    try:
        cls: type[Engine] = getattr(importlib.import_module(module), attr)
        return cls
    except ImportError as e:
        raise ConfigError(f"engine {name!r} is not installed here ({e.name} missing); see docs/engines.md") from e

"""Each engine's options as a typed model, checked offline and at start.

`engine_options` (YAML args or ASKDOCS_ENGINE_OPTIONS) used to be a free dict
that each engine checked its own way at replica start; a typo surfaced as a
raw TypeError minutes into a deploy. Here every engine declares its options
(`extra="forbid"`, each field described), so `askdocs check-config` and the
Generator validate them the same way, without importing the engine (vLLM or
llama.cpp need not be installed to check a config).
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deployments.errors import ConfigError

EngineName = Literal["fake", "openai", "llamacpp", "vllm", "extractive"]


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class LlamaCppOptions(_Options):
    n_threads: int | None = Field(None, ge=1, description="Threads per context (default: the replica's CPUs).")
    n_ctx: int = Field(4096, ge=256, description="Context length: a RAG prompt (~1-2k tokens) plus the answer.")
    n_batch: int = Field(512, ge=8, description="Prefill micro-batch, also the granularity of a prefill abort.")
    seed: int = Field(0, description="Sampling seed (greedy decoding ignores it).")
    repeat_penalty: float = Field(1.0, ge=1.0, le=2.0, description="llama.cpp repeat penalty; 1.0 = off.")
    flash_attn: bool = Field(True, description="llama.cpp flash attention: faster prefill on CPU "
                                               "(benchmarks/results/llamacpp_threads_ab.json).")
    weights: Literal["auto", "original", "f16", "bf16", "q8_0", "q4_0"] = Field(
        "auto", description="Re-type the GGUF's weights once into var/models/ (auto: f16 for the shipped Q4_1 "
                            "default, which has no fast x86 kernel, or bf16 where llama.cpp and the CPU have "
                            "AVX512_BF16; a user's GGUF as is).")


class ExtractiveOptions(_Options):
    min_score: float = Field(0.35, ge=0.0, le=1.5, description="Refuse when no sentence scores this much.")
    cosine_weight: float = Field(0.6, ge=0.0, le=1.0, description="Cosine vs term overlap in a sentence's score.")
    rank_bonus: float = Field(0.15, ge=0.0, le=1.0, description="Bonus for the passage's retrieval rank.")
    keep_ratio: float = Field(0.5, ge=0.0, le=1.0, description="A further sentence must score this share of the best.")
    max_sentences: int = Field(3, ge=1, le=10, description="Sentences per answer at most.")
    diversity: float = Field(0.3, ge=0.0, le=2.0, description="After the best sentence, each further one scores "
                             "minus this times its word overlap with those chosen (0 = by score alone).")
    embedder: Literal["minilm", "static", "none"] = Field(
        "minilm", description="minilm: MiniLM embeds the 12 best sentences by term overlap (~15 ms each when not "
                              "cached); static: MiniLM's static token vectors rank every sentence (~1 ms) and MiniLM "
                              "checks only the refusal floor (~10x faster cold, slightly less faithful out of "
                              "sample); none: term overlap only.")


class OpenAIOptions(_Options):
    base_url: str = Field("http://127.0.0.1:8080/v1", description="The server's OpenAI-compatible /v1 URL.")
    api_key_env: str = Field("OPENAI_API_KEY", description="Environment variable holding the key (never YAML).")
    chunk_timeout_s: float = Field(30.0, gt=0, description="A stalled stream fails after this long between chunks.")
    connect_timeout_s: float = Field(5.0, gt=0, description="TCP connect timeout.")
    grammar_field: Literal["none", "llama-server", "vllm"] = Field(
        "none", description="Where the server takes the citation grammar (docs/engines.md).")


class FakeOptions(_Options):
    first_token_s: float = Field(0.0, ge=0.0, description="Delay before the first token.")
    token_s: float = Field(0.0, ge=0.0, description="Delay between tokens.")
    abort_log: str | None = Field(None, description="File that records aborted request ids (tests).")
    answer: str | None = Field(None, description="A fixed answer instead of the sources' first sentences.")


OPTION_MODELS: dict[str, type[_Options] | None] = {
    "llamacpp": LlamaCppOptions, "extractive": ExtractiveOptions, "openai": OpenAIOptions, "fake": FakeOptions,
    "vllm": None,        # any vLLM EngineArgs field: checked against vLLM's own list (vllm_engine.check_engine_args)
}


def validate_engine_options(engine: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options as the engine will get them; ConfigError with every problem otherwise."""
    if engine not in OPTION_MODELS:
        raise ConfigError(f"unknown engine {engine!r}; choose one of {', '.join(OPTION_MODELS)}")
    model = OPTION_MODELS[engine]
    if model is None:
        from deployments.engines.vllm_engine import check_engine_args

        check_engine_args(options)
        return dict(options)
    try:
        return model.model_validate(options).model_dump(exclude_unset=True)
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc'])) or 'options'}: {err['msg']}"
                             for err in e.errors(include_url=False))
        allowed = ", ".join(model.model_fields)
        raise ConfigError(f"{engine} engine options: {problems} (allowed: {allowed})") from None

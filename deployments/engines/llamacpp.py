"""llama.cpp in-process (llama-cpp-python): the embedded CPU default.

One `Llama` per slot. llama.cpp runs one sequence per context, so concurrent
requests on one context would serialize anyway; the default is one slot (the
Generator's `max_ongoing_requests` must match, so overload queues in Serve).

Each request runs in a worker thread (llama.cpp releases the GIL while it
computes) that feeds an asyncio queue. Abort (client gone, or `abort(id)`):
- while decoding, a stopping criterion llama.cpp calls after every sampled
  token ends the request after at most the token in flight;
- while prefilling a long prompt (seconds on a CPU), llama.cpp's abort
  callback is installed on the context for that moment only, so the prefill
  stops at its next micro-batch (`n_batch` tokens) instead of running to the
  end. It is not installed permanently: llama.cpp would call into Python
  (and take the GIL) after every graph node of every token.

Citations: with `params.constrain_citations` (the default), decoding follows
the per-request GBNF grammar of deployments/citation_grammar.py (LlamaGrammar,
one per number of sources, cached): the answer is the refusal sentence or
sentences closed by markers [1..k]; an invalid citation number cannot occur.

Threads: `n_threads` is the engine's budget, shared by the slots at work: a request
running alone uses all of it, two at once half each (llama_set_n_threads before each
decode step; a prefill keeps the count it started with). Several slots on few cores
then share them instead of oversubscribing them (before: 2 slots x 2 threads, 4 threads
on 2 cores).

Prompt: the GGUF's own chat template is rendered here and tokenized once, so
`usage.prompt_tokens` is exact; `completion_tokens` counts sampled tokens
(the end-of-sequence token included, as vLLM counts it). llama.cpp reuses the
longest common token prefix with the previous request on the same context, so
the stable system prompt is not recomputed.
"""
from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import AsyncGenerator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deployments.citation_grammar import citation_gbnf
from deployments.engines.base import Delta, Engine, FinishReason, GenParams, Prompt, Usage
from deployments.engines.base import finish_reason as reported_finish
from deployments.engines.gguf_convert import AUTO as AUTO_WEIGHTS
from deployments.engines.gguf_convert import convert_gguf, resolve_weights
from deployments.engines.llamacpp_load import amx_quantized, load_llama
from deployments.engines.models import DEFAULT_ALIASES, ModelKind, resolve_model
from deployments.errors import ConfigError, EngineError, EngineUnavailable

log = logging.getLogger(__name__)

DEFAULT_N_CTX = 4096  # a RAG prompt (~1-2k tokens) + answer; SmolLM2 was trained on 8k
# Prefill batch and micro-batch (n_ubatch follows it), also the granularity of a prefill abort. Stop 52, AMX Xeon,
# idle: 512 prefilled fastest (1,128 tok/s, 2,048: 975); larger only won beside a busy process, and a cancel then
# waits out the whole prompt (benchmarks/results/llamacpp_prefill_xeon_batch_busy*.md, KNOWN_LIMITATIONS.md).
DEFAULT_N_BATCH = 512
# Flash attention: prefill of the ~1.4k-token prompt 1.25-5.4x faster with 2 threads in all 4
# interleaved pairs on this box (benchmarks/results/llamacpp_threads_ab.json, load 4-60).
DEFAULT_FLASH_ATTN = True


def default_threads() -> int:
    """Cores Ray reserved for this replica; all cores this process may use when
    it reserved less than one (the light local config gives `num_cpus: 0`)."""
    try:
        import ray

        if ray.is_initialized():
            # Ray leaves get_assigned_resources unannotated.
            cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 0.0)  # type: ignore[no-untyped-call]
            if cpus >= 1:
                return int(cpus)
    except Exception:  # not inside Ray, or an older runtime context API
        pass
    return max(1, len(os.sched_getaffinity(0)))


@dataclass
class _Job:
    """One request's state shared between the event loop and its worker thread."""

    request_id: str
    queue: asyncio.Queue[tuple[str, Any]]   # ("text", str) | ("end", (finish_reason, tokens)) | ("error", exc)
    llm: Any
    abort: threading.Event = field(default_factory=threading.Event)
    sampled_tokens: int = 0
    running: bool = True  # the worker still uses `llm`; guarded by `lock`
    lock: threading.Lock = field(default_factory=threading.Lock)


def _set_abort_callback(llm: Any, callback: Any) -> None:
    import llama_cpp

    llama_cpp.llama_set_abort_callback(llm._ctx.ctx, callback, None)


class LlamaCppEngine(Engine):
    name = "llamacpp"

    def __init__(
        self,
        *,
        model: str = "",
        slots: int = 1,
        n_threads: int | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        n_batch: int = DEFAULT_N_BATCH,
        seed: int = 0,
        repeat_penalty: float = 1.0,
        weights: str = AUTO_WEIGHTS,
        flash_attn: bool = DEFAULT_FLASH_ATTN,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise ConfigError(
                f"unknown llamacpp engine option(s): {', '.join(sorted(unknown))}; "
                "allowed: model, slots, n_threads, n_ctx, n_batch, seed, repeat_penalty, weights, flash_attn"
            )
        if slots < 1:
            raise ConfigError(f"llamacpp slots must be >= 1, got {slots}")
        ref = resolve_model(model)
        if ref.kind is not ModelKind.GGUF:
            raise ConfigError(
                f"the llamacpp engine loads GGUF files; {model!r} is a {ref.kind.value.replace('_', ' ')} "
                "(use the vllm or openai engine for it)"
            )
        super().__init__(model=ref.location, slots=slots)
        self.n_threads = n_threads or default_threads()
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.seed = seed
        self.repeat_penalty = repeat_penalty
        self.flash_attn = flash_attn
        # The weight type loaded (deployments/engines/gguf_convert.py): "auto" keeps the shipped Q4_1 where
        # llama.cpp's AMX kernels run it, else re-types it for the fast prefill kernels (once, on start).
        self.weights = resolve_weights(weights, default_model=(model or "").strip() in DEFAULT_ALIASES,
                                       amx=amx_quantized)
        self._grammars: dict[int, Any] = {}
        self.sampled_tokens_total = 0  # every token llama.cpp sampled, for tests and stats
        self._idle: asyncio.Queue[Any] | None = None  # loaded Llama contexts not in use
        self._contexts: list[Any] = []
        self._formatter: Any = None
        self._executor: ThreadPoolExecutor | None = None
        self._jobs: dict[str, _Job] = {}
        self._count_lock = threading.Lock()
        self._working = 0            # requests in llama.cpp now (guarded by _count_lock): they share n_threads
        self._abort_now: Any = None  # ggml_abort_callback that always answers "abort"
        self._no_abort: Any = None   # the NULL callback

    async def start(self) -> None:
        try:
            from llama_cpp import Llama  # noqa: F401  (fail early with a clear message)
        except ImportError as e:
            raise ConfigError("llama-cpp-python is not installed; run `make install`") from e
        import llama_cpp

        # ctypes callbacks must outlive every context that may point at them.
        self._abort_now = llama_cpp.ggml_abort_callback(lambda _data: True)
        self._no_abort = llama_cpp.ggml_abort_callback()
        started = time.perf_counter()
        self._contexts = [await asyncio.to_thread(self._load) for _ in range(self.slots)]
        self._formatter = self._chat_formatter(self._contexts[0])
        self._idle = asyncio.Queue()
        for ctx in self._contexts:
            self._idle.put_nowait(ctx)
        self._executor = ThreadPoolExecutor(max_workers=self.slots, thread_name_prefix="llamacpp")
        log.info(
            "llamacpp loaded %s (%d slot(s), %d thread(s)) in %.1f s",
            os.path.basename(self.model), self.slots, self.n_threads, time.perf_counter() - started,
        )

    def _load(self) -> Any:
        return load_llama(
            str(convert_gguf(Path(self.model), self.weights)),  # cached after the first slot
            n_ctx=self.n_ctx,
            n_batch=self.n_batch,
            n_ubatch=self.n_batch,  # one knob: llama.cpp's own micro-batch default (512) would cap n_batch
            n_threads=self.n_threads,
            n_threads_batch=self.n_threads,
            flash_attn=self.flash_attn,
            seed=self.seed,
            verbose=False,
        )

    @staticmethod
    def _chat_formatter(llm: Any) -> Any:
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        template = llm.metadata.get("tokenizer.chat_template")
        if not template:
            raise ConfigError(
                f"{os.path.basename(llm.model_path)} has no chat template: it is probably a base "
                "model, which cannot follow the answer rules; use an instruct model's GGUF"
            )

        def token_text(token_id: int) -> str:
            return llm._model.token_get_text(token_id) if token_id >= 0 else ""

        return Jinja2ChatFormatter(
            template=template,
            eos_token=token_text(llm.token_eos()),
            bos_token=token_text(llm.token_bos()),
        )

    async def stream(self, prompt: Prompt, params: GenParams) -> AsyncGenerator[Delta, None]:
        if self._idle is None or self._executor is None:
            raise EngineUnavailable("the llamacpp engine is not started")
        loop = asyncio.get_running_loop()
        llm = await self._idle.get()  # Serve's max_ongoing_requests == slots, so this rarely waits
        job = _Job(params.request_id, asyncio.Queue(), llm)
        self._jobs[params.request_id] = job
        try:
            rendered = self._formatter(messages=prompt.as_dicts())
            tokens = llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=False, special=True)
        except Exception:
            self._jobs.pop(params.request_id, None)
            self._idle.put_nowait(llm)
            raise
        if len(tokens) >= self.n_ctx:
            self._jobs.pop(params.request_id, None)
            self._idle.put_nowait(llm)
            raise EngineError(f"the prompt ({len(tokens)} tokens) does not fit the model context ({self.n_ctx} tokens)")
        stop = [*rendered.stop, *params.stop]
        max_tokens = min(params.max_tokens, self.n_ctx - len(tokens))
        grammar = self._grammar(len(prompt.passages)) if params.constrain_citations and prompt.passages else None

        def release() -> None:
            assert self._idle is not None   # close() clears it only after the executor ran every work() to its end
            self._idle.put_nowait(llm)

        def emit(item: tuple[str, Any]) -> None:
            loop.call_soon_threadsafe(job.queue.put_nowait, item)

        working = [True]

        def done_working() -> None:
            with self._count_lock:
                if working[0]:
                    working[0] = False
                    self._working -= 1

        def emit_last(item: tuple[str, Any]) -> None:
            if item[0] != "text":    # compute is over before the consumer hears of it: its threads are free
                done_working()
            emit(item)

        def work() -> None:
            with self._count_lock:
                self._working += 1
            try:
                self._share_threads(llm)
                self._generate(llm, job, tokens, stop, max_tokens, params.temperature, emit_last, grammar,
                               params.ignore_eos)
            finally:
                done_working()
                with job.lock:
                    job.running = False
                    _set_abort_callback(llm, self._no_abort)
                loop.call_soon_threadsafe(release)

        loop.run_in_executor(self._executor, work)
        try:
            while True:
                kind, payload = await job.queue.get()
                if kind == "text":
                    yield Delta(text=payload)
                elif kind == "end":
                    finish_reason, completion_tokens = payload
                    usage = Usage(prompt_tokens=len(tokens), completion_tokens=completion_tokens)
                    yield Delta(finish_reason=finish_reason, usage=usage)
                    return
                else:  # "error"
                    raise payload
        finally:
            # Also reached on CancelledError / GeneratorExit (client gone).
            self._stop(job)
            self._jobs.pop(params.request_id, None)

    def _stop(self, job: _Job) -> None:
        """Make the worker stop computing for `job` (idempotent)."""
        job.abort.set()  # seen by the stopping criterion after the token in flight
        with job.lock:
            if job.running:  # maybe inside a long prefill: interrupt llama_decode too
                _set_abort_callback(job.llm, self._abort_now)

    def threads_each(self) -> int:
        """Threads for one request now: the budget split among the requests at work."""
        with self._count_lock:
            return max(1, self.n_threads // max(1, self._working))

    def _share_threads(self, llm: Any) -> None:
        """Set `llm`'s threads to its share (before its next llama_decode); no call when unchanged."""
        share = self.threads_each()
        if getattr(llm, "_askdocs_threads", None) != share:
            import llama_cpp

            llama_cpp.llama_set_n_threads(llm._ctx.ctx, share, share)
            llm._askdocs_threads = share

    def _grammar(self, k: int) -> Any:
        """llama.cpp's grammar for answers citing 1..k (one per k, built once)."""
        if k not in self._grammars:
            from llama_cpp.llama_grammar import LlamaGrammar

            self._grammars[k] = LlamaGrammar.from_string(citation_gbnf(k), verbose=False)
        return self._grammars[k]

    def _generate(self, llm: Any, job: _Job, tokens: list[int], stop: list[str],
                  max_tokens: int, temperature: float, emit: Any, grammar: Any = None,
                  ignore_eos: bool = False) -> None:
        """Worker thread: run llama.cpp, push ("text", s) … then ("end", …) or ("error", e)."""

        seen_length = 0

        def stop_when_aborted(input_ids: Any, _logits: Any) -> bool:
            # Called after each sampled token with the evaluated tokens so far,
            # one longer each time; llama-cpp-python calls it once more after
            # the loop with the same length (no new token): count only growth.
            nonlocal seen_length
            if len(input_ids) > seen_length:
                seen_length = len(input_ids)
                job.sampled_tokens += 1
                with self._count_lock:
                    self.sampled_tokens_total += 1
                self._share_threads(llm)       # another request started or ended: rebalance
            return job.abort.is_set()

        from llama_cpp import StoppingCriteriaList

        finish_reason: FinishReason = "stop"
        try:
            chunks = llm.create_completion(
                prompt=tokens,
                max_tokens=max_tokens,
                temperature=temperature,
                stop=stop,
                stream=True,
                seed=self.seed,
                grammar=grammar,
                repeat_penalty=self.repeat_penalty,
                stopping_criteria=StoppingCriteriaList([stop_when_aborted]),
                logit_bias={llm.token_eos(): -1e9} if ignore_eos else None,
            )
            try:
                for chunk in chunks:
                    if job.abort.is_set():
                        break
                    choice = chunk["choices"][0]
                    if choice["text"]:
                        emit(("text", choice["text"]))
                    if choice.get("finish_reason"):
                        finish_reason = reported_finish(choice["finish_reason"])
            finally:
                chunks.close()  # stops llama.cpp's generator if we left early
        except RuntimeError as e:
            if not job.abort.is_set():  # llama_decode failed on its own
                log.exception("llamacpp generation failed for %s", job.request_id)
                emit(("error", EngineError(_safe_message(e, len(tokens), self.n_ctx))))
                return
            # llama_decode was interrupted by the abort callback: an abort, not a failure
        except Exception as e:  # llama.cpp raises ValueError (e.g. prompt too long)
            log.exception("llamacpp generation failed for %s", job.request_id)
            emit(("error", EngineError(_safe_message(e, len(tokens), self.n_ctx))))
            return
        if job.abort.is_set():
            finish_reason = "abort"
        emit(("end", (finish_reason, job.sampled_tokens)))

    async def abort(self, request_id: str) -> None:
        job = self._jobs.get(request_id)
        if job is not None:
            self._stop(job)

    async def check_health(self) -> None:
        if self._idle is None:
            raise EngineUnavailable("the llamacpp engine is not started")

    async def close(self) -> None:
        for job in list(self._jobs.values()):
            self._stop(job)
        if self._executor is not None:
            await asyncio.to_thread(self._executor.shutdown, wait=True)
            self._executor = None
        for ctx in self._contexts:
            ctx.close()
        self._contexts = []
        self._idle = None


def _safe_message(error: Exception, prompt_tokens: int, n_ctx: int) -> str:
    """A client-safe message (no paths); the full error goes to the log."""
    if "exceed" in str(error).lower() and "context" in str(error).lower():
        return f"the prompt ({prompt_tokens} tokens) does not fit the model context ({n_ctx} tokens)"
    return "the llamacpp engine failed to generate"

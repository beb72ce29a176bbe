"""The Generator's policy (`generate`) and the fake and OpenAI-compatible engines."""
from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from deployments.engines.base import EngineSpec, GenParams, Prompt, finish_reason
from deployments.engines.fake import FakeEngine
from deployments.engines.openai_compat import OpenAIEngine
from deployments.errors import ConfigError, EngineError, EngineTimeout, EngineUnavailable, IncompleteStream
from deployments.generator import RetryPolicy, check_slots, generate, make_engine
from deployments.passage import Passage
from deployments.prompt import PromptLimits, build_prompt

FAST = RetryPolicy(retries=2, backoff_s=0.001)
PASSAGES = [Passage("a.md", "Alpha is the first letter. It has no dots.", 0.9),
            Passage("b.md", "Beta comes second.", 0.8)]


def prompt(question: str = "Which letter is first?") -> Prompt:
    return build_prompt(question, PASSAGES, PromptLimits(4, 500))


async def collect(engine, p: Prompt, request_id: str = "r1", max_tokens: int = 64) -> tuple[str, list]:
    deltas = [d async for d in generate(engine, p, GenParams(request_id, max_tokens=max_tokens), FAST)]
    return "".join(d.text for d in deltas), deltas


# ---------------------------------------------------------------- generate() with the fake engine

async def test_fake_engine_answers_from_the_fenced_sources_with_citations() -> None:
    text, deltas = await collect(FakeEngine(), prompt())
    assert text == "Alpha is the first letter [1]. Beta comes second [2]."
    assert deltas[-1].finish_reason == "stop" and deltas[-1].usage.completion_tokens == 10
    assert [d.finish_reason for d in deltas[:-1]] == [None] * 10


async def test_max_tokens_ends_with_finish_reason_length() -> None:
    _, deltas = await collect(FakeEngine(), prompt(), max_tokens=4)
    assert len(deltas) == 5 and deltas[-1].finish_reason == "length"


async def test_failures_before_the_first_token_are_retried() -> None:
    engine = FakeEngine()
    text, _ = await collect(engine, prompt("q [[fake:flaky=2]]"))
    assert text and engine.streams == 3


async def test_retries_are_bounded() -> None:
    engine = FakeEngine()
    with pytest.raises(EngineUnavailable):
        await collect(engine, prompt("q [[fake:flaky=5]]"))
    assert engine.streams == 3


async def test_no_retry_after_the_first_token_and_partial_is_kept() -> None:
    engine = FakeEngine()
    with pytest.raises(EngineError) as caught:
        await collect(engine, prompt("q [[fake:midfail]]"))
    assert caught.value.partial == "Alpha " and engine.streams == 1


async def test_stream_without_finish_reason_is_incomplete() -> None:
    engine = FakeEngine()
    with pytest.raises(IncompleteStream) as caught:
        await collect(engine, prompt("q [[fake:nofinish]]"))
    assert caught.value.partial.startswith("Alpha is the first letter")
    assert engine.aborted == ["r1"]


async def test_cancelling_the_consumer_aborts_the_request(tmp_path) -> None:
    engine = FakeEngine(token_s=0.05, abort_log=str(tmp_path / "aborts"))

    async def consume() -> None:
        async for _ in generate(engine, prompt(), GenParams("gone-1"), FAST):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.12)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert engine.aborted == ["gone-1"] and (tmp_path / "aborts").read_text() == "gone-1\n"


async def test_echo_answers_with_the_prompt() -> None:
    text, _ = await collect(FakeEngine(), prompt("q [[fake:echo]]"), max_tokens=10_000)
    assert text.startswith("You answer questions using only the numbered sources")


def test_every_engine_reports_one_of_three_finish_reasons() -> None:
    """llama.cpp, vLLM and OpenAI-compatible servers name their finish reason; a Delta carries one of three."""
    assert [finish_reason(r) for r in ("stop", "length", "abort")] == ["stop", "length", "abort"]
    assert [finish_reason(r) for r in ("content_filter", "tool_calls", "eos", "", None)] == ["stop"] * 5


def test_slot_mismatch_fails_with_a_clear_message() -> None:
    check_slots(2, 2)
    with pytest.raises(ConfigError, match="max_ongoing_requests is 4 but the engine runs 1"):
        check_slots(1, 4)


def test_unknown_engine_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown engine"):
        make_engine(EngineSpec(name="nope"))


# ---------------------------------------------------------------- the OpenAI-compatible engine

def sse_chunks(*chunks: dict, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + (["data: [DONE]\n\n"] if done else [])
    return "".join(lines).encode()


def content(text: str, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]}


async def openai_engine(handler) -> OpenAIEngine:
    engine = OpenAIEngine(model="m", slots=2, base_url="http://model/v1", transport=httpx.MockTransport(handler))
    await engine.start()
    return engine


async def test_openai_engine_streams_text_finish_reason_and_usage() -> None:
    seen = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen.update(json.loads(request.content))
        body = sse_chunks(content("Hello "), content("world", "length"),
                          {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 2}})
        return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})

    engine = await openai_engine(handler)
    text, deltas = await collect(engine, prompt())
    assert text == "Hello world" and deltas[-1].finish_reason == "length"
    assert deltas[-1].usage.prompt_tokens == 11 and deltas[-1].usage.completion_tokens == 2
    assert seen["stream"] is True and seen["messages"][0]["role"] == "system" and seen["model"] == "m"
    await engine.close()


async def test_openai_engine_server_errors_are_retried_then_reported() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        if len(calls) == 1:
            return httpx.Response(503)
        return httpx.Response(200, content=sse_chunks(content("ok", "stop")))

    engine = await openai_engine(handler)
    text, _ = await collect(engine, prompt())
    assert text == "ok" and len(calls) == 2


async def test_openai_engine_stream_without_finish_is_incomplete() -> None:
    engine = await openai_engine(lambda r: httpx.Response(200, content=sse_chunks(content("half"), done=False)))
    with pytest.raises(IncompleteStream) as caught:
        await collect(engine, prompt())
    assert caught.value.partial == "half"


async def test_openai_engine_read_timeout_is_engine_timeout() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("stalled", request=request)

    engine = await openai_engine(handler)
    with pytest.raises(EngineTimeout):
        await collect(engine, prompt())


# ---------------------------------------------------------------- batching for the Serve hop

class _Stepped:
    """A delta source the test drives: `release(n)` lets n more deltas out (then
    the end, once all are out). Order, not timing, decides what is ready when."""

    def __init__(self, texts: list[str]) -> None:
        from deployments.engines.base import Delta

        self.deltas = [Delta(text=t) for t in texts[:-1]] + [Delta(text=texts[-1], finish_reason="stop")]
        self._allowed = 0
        self._changed = asyncio.Event()
        self.sent = 0

    def release(self, n: int = 1) -> None:
        self._allowed += n
        self._changed.set()

    async def __aiter__(self):
        for delta in self.deltas:
            while self.sent >= self._allowed:
                self._changed.clear()
                await self._changed.wait()
            self.sent += 1
            yield delta


async def test_coalesce_batches_ready_deltas_and_keeps_order() -> None:
    from deployments.generator import coalesce

    batches = [b async for b in coalesce(generate(FakeEngine(), prompt(), GenParams("c1"), FAST))]
    flat = [d for b in batches for d in b]
    assert len(batches) == 1 and "".join(d.text for d in flat) == "Alpha is the first letter [1]. Beta comes second [2]."
    # Deltas that are not ready together are not held back to wait for each other.
    source = _Stepped(["a", "b", "c", "d"])
    stream = coalesce(source.__aiter__())
    seen = []
    for _ in range(4):
        source.release(1)
        seen.append([d.text for d in await asyncio.wait_for(stream.__anext__(), 60)])
    assert seen == [["a"], ["b"], ["c"], ["d"]]
    await stream.aclose()


async def test_coalesce_with_an_interval_sends_the_first_token_alone_and_never_holds_the_end() -> None:
    from deployments.generator import coalesce

    source = _Stepped(["first", " a", " b", " c", " end"])
    stream = coalesce(source.__aiter__(), interval_s=3600.0)     # an interval no test could wait out
    source.release(1)
    first = await asyncio.wait_for(stream.__anext__(), 60)
    assert [d.text for d in first] == ["first"] and source.sent == 1          # sent before the second exists
    source.release(4)                       # the rest, then the end, arrive within the interval
    rest = [b async for b in stream]
    assert [[d.text for d in b] for b in rest] == [[" a", " b", " c", " end"]]  # gathered, the end not held
    assert rest[-1][-1].finish_reason == "stop"


async def test_coalesce_with_an_interval_sends_at_most_one_item_per_interval() -> None:
    from deployments.generator import coalesce

    engine = FakeEngine(token_s=0.01)                   # tokens keep arriving faster than the interval
    loop = asyncio.get_running_loop()
    interval_s = 0.1
    started = loop.time()
    arrivals, batches = [], []
    async for batch in coalesce(generate(engine, prompt(), GenParams("c5"), FAST), interval_s=interval_s):
        arrivals.append(loop.time())
        batches.append(batch)
    took = loop.time() - started
    assert "".join(d.text for b in batches for d in b) == "Alpha is the first letter [1]. Beta comes second [2]."
    assert len(batches[0]) == 1 and batches[-1][-1].finish_reason
    # Lower bounds only (a loaded machine makes gaps longer, never shorter): between two
    # batches at least the interval, except before the last one (the end is never held).
    assert all(b - a >= interval_s * 0.99 for a, b in zip(arrivals[1:-1], arrivals[2:-1]))
    # ... so the count follows from how long this stream took here: first + one per interval + the end.
    assert 2 <= len(batches) <= 2 + took / interval_s, (len(batches), took)


async def test_coalesce_passes_errors_and_cancellation_through() -> None:
    from deployments.generator import coalesce

    engine = FakeEngine()
    with pytest.raises(IncompleteStream):
        async for _ in coalesce(generate(engine, prompt("q [[fake:nofinish]]"), GenParams("c3"), FAST)):
            pass
    engine = FakeEngine(token_s=0.05)
    stream = coalesce(generate(engine, prompt(), GenParams("c4"), FAST))
    await stream.__anext__()
    await stream.aclose()
    assert engine.aborted == ["c4"]

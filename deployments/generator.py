"""Generator: one engine behind one streaming method, slot-matched to Serve.

`generate()` is the engine-independent policy (plain function, tested without
Serve): retries with exponential backoff only before the first token (after
it, a retry would duplicate text already sent to the client); a stream that
ends without a finish reason becomes `IncompleteStream` carrying the partial
text; a cancelled consumer (client disconnect) aborts the request in the
engine so no tokens are computed for nobody.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any

from ray import serve

from deployments import tracing
from deployments.engines.base import Delta, Engine, EngineSpec, GenParams, Prompt
from deployments.engines.options import validate_engine_options
from deployments.engines.registry import engine_class
from deployments.errors import ConfigError, EngineError, EngineTimeout, EngineUnavailable, IncompleteStream
from deployments.logs import use_serve_logging

log = logging.getLogger("askdocs.generator")


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2            # extra attempts before the first token
    backoff_s: float = 0.2      # first wait; doubles per attempt


def make_engine(spec: EngineSpec) -> Engine:
    options = validate_engine_options(spec.name, spec.options)
    return engine_class(spec.name)(model=spec.model, slots=spec.slots, **options)


def check_slots(engine_slots: int, max_ongoing_requests: int) -> None:
    """Serve may send the replica exactly as many requests as the engine runs at once."""
    if engine_slots != max_ongoing_requests:
        raise ConfigError(
            f"Generator max_ongoing_requests is {max_ongoing_requests} but the engine runs "
            f"{engine_slots} sequences at once (engine_slots). Set both to the same number in "
            "serve_config.yaml, so overload queues in Serve (then 503) instead of inside the engine."
        )


async def generate(engine: Engine, prompt: Prompt, params: GenParams,
                   retry: RetryPolicy = RetryPolicy()) -> AsyncGenerator[Delta, None]:
    """Engine deltas with the Generator's guarantees (see module docstring)."""
    parts: list[str] = []
    finished = False
    attempt = 0
    try:
        while True:
            stream = engine.stream(prompt, params)
            try:
                async for delta in stream:
                    if delta.text:
                        parts.append(delta.text)
                    if delta.finish_reason is not None:
                        finished = True
                    yield delta
                    if finished:
                        return
            except (EngineUnavailable, EngineTimeout) as e:
                if parts or attempt >= retry.retries:
                    raise type(e)(str(e), partial="".join(parts)) from e
                attempt += 1
                log.warning("engine attempt %d failed before the first token (%s); retrying", attempt, e)
                await asyncio.sleep(retry.backoff_s * 2 ** (attempt - 1))
                continue
            except EngineError as e:
                raise type(e)(str(e), partial="".join(parts)) from e
            finally:
                await stream.aclose()
            raise IncompleteStream("the model stream ended without a finish reason", partial="".join(parts))
    finally:
        if not finished:
            # Cancelled (client gone) or failed: make sure the engine stops this sequence.
            await engine.abort(params.request_id)


ACCEPTED = Delta()
"""The first item of a Generator's stream: no text, no finish. It tells the
ingress the request was accepted (it holds a slot, before prefill), so the
client gets its sources now and a full queue can no longer happen."""


async def accepted_first(deltas: AsyncGenerator[Delta, None]) -> AsyncGenerator[Delta, None]:
    """`ACCEPTED`, then `deltas` (closed when this generator is)."""
    async with contextlib.aclosing(deltas):
        yield ACCEPTED
        async for delta in deltas:
            yield delta


SPAN = "generator.stream"


async def traced_generate(engine: Engine, prompt: Prompt, params: GenParams, retry: RetryPolicy,
                          trace: dict[str, str] | None) -> AsyncGenerator[Delta, None]:
    """`generate()` inside the span `generator.stream` under the caller's carrier.

    The span covers the engine's whole stream, so queueing in the engine and
    retries show as its gap before the ingress's `first_token` event.
    """
    # aclosing: leaving early (cancelled, client gone) must close generate() now,
    # whose finally aborts the engine request, not whenever it is collected.
    with tracing.replica_span(SPAN, trace):
        async with contextlib.aclosing(generate(engine, prompt, params, retry)) as deltas:
            async for delta in deltas:
                yield delta


_END = object()


async def coalesce(deltas: AsyncIterator[Delta], interval_s: float = 0.0) -> AsyncIterator[list[Delta]]:
    """Group the deltas that are ready at once; errors and cancellation pass through.

    With `interval_s` > 0, a batch after the first also waits until
    `interval_s` has passed since the previous one, gathering what arrives
    meanwhile: at most 1/interval_s items per second per stream, whatever the
    engine's speed. The first token and the end of the stream are never held.
    """
    queue: asyncio.Queue[object] = asyncio.Queue()    # Delta, then _END or the exception
    loop = asyncio.get_running_loop()
    next_at = 0.0

    async def produce() -> None:
        try:
            async for delta in deltas:
                queue.put_nowait(delta)
            queue.put_nowait(_END)
        except Exception as e:  # re-raised by the consumer, in order
            queue.put_nowait(e)

    producer = asyncio.create_task(produce())
    try:
        while True:
            items = [await queue.get()]
            while isinstance(items[-1], Delta) and (wait := next_at - loop.time()) > 0:
                try:
                    items.append(await asyncio.wait_for(queue.get(), wait))
                except TimeoutError:
                    break
            while not queue.empty():
                items.append(queue.get_nowait())
            batch = [i for i in items if isinstance(i, Delta)]
            if batch:
                yield batch
                next_at = loop.time() + interval_s
            tail = items[-1]
            if tail is _END:
                return
            if isinstance(tail, Exception):
                raise tail
    finally:
        if not producer.done():
            producer.cancel()           # consumer gone: generate() aborts the engine request
        await asyncio.gather(producer, return_exceptions=True)


@serve.deployment
class Generator:
    """Owns one engine; `max_ongoing_requests` must equal the engine's slots."""

    # Ray Serve awaits an async __init__; mypy wants __init__ to return None.
    async def __init__(self, spec: EngineSpec, retry: RetryPolicy,  # type: ignore[misc]
                       otel_endpoint: str | None = None, stream_interval_s: float = 0.0) -> None:
        use_serve_logging()
        tracing.setup_tracing("askdocs-generator", otel_endpoint)
        ongoing = serve.get_replica_context()._deployment_config.max_ongoing_requests
        check_slots(spec.slots, ongoing)
        self.engine = make_engine(spec)
        self.retry = retry
        self.stream_interval_s = stream_interval_s
        await self.engine.start()

    async def stream(self, prompt: Prompt, params: GenParams,
                     trace: dict[str, str] | None = None) -> AsyncIterator[list[Delta]]:
        """Batches of deltas: whatever the engine produced since the last item
        was sent, at most one item per `stream_interval_s`. Every streamed item
        costs a Serve round (CPU in this replica, the Ingress and the object
        store), so tokens travel together instead of one by one. The first
        item is `[ACCEPTED]`, sent as soon as this replica runs the request."""
        yield [ACCEPTED]
        async for batch in coalesce(traced_generate(self.engine, prompt, params, self.retry, trace),
                                    self.stream_interval_s):
            yield batch

    async def info(self) -> dict[str, Any]:
        return {"engine": self.engine.name, "model": self.engine.model, "slots": self.engine.slots}

    async def check_health(self) -> None:
        await self.engine.check_health()

    async def __del__(self) -> None:
        await self.engine.close()

"""The one server-sent-events reader: askdocs' own answers (the `askdocs ask`
client, the load test) and an OpenAI-compatible model server's stream.

The subset of the SSE spec these streams use: `event:` names the event,
`data:` lines are joined with newlines, one space after the colon is dropped,
`:` lines are comments (keep-alives), a blank line dispatches. A last event
without its blank line is not dispatched: the stream was cut mid-event.

Kept free of heavy imports (no Ray): the load test's Locust user imports it.
"""
from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: str


class SseDecoder:
    """Feed it lines one at a time; it returns each event as its blank line arrives."""

    def __init__(self) -> None:
        self._name = ""
        self._data: list[str] = []

    def feed(self, raw: str | bytes) -> SseEvent | None:
        line = (raw.decode("utf-8") if isinstance(raw, bytes) else raw).rstrip("\r\n")
        if not line:
            event = SseEvent(self._name or "message", "\n".join(self._data)) if self._data or self._name else None
            self._name, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None


def iter_events(lines: Iterable[str | bytes]) -> Iterator[SseEvent]:
    """Events from a line stream (e.g. `httpx.Response.iter_lines()`)."""
    decoder = SseDecoder()
    for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event


async def aiter_events(lines: AsyncIterable[str | bytes]) -> AsyncIterator[SseEvent]:
    """Events from an async line stream (e.g. `httpx.Response.aiter_lines()`)."""
    decoder = SseDecoder()
    async for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event

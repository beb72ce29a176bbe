"""One SSE reader (deployments/sse.py) behind the `askdocs ask` client, the
load test and the openai engine."""
from __future__ import annotations

import asyncio
from pathlib import Path

from deployments.sse import SseEvent, aiter_events, iter_events
from serve_app.cli import iter_sse

REPO = Path(__file__).resolve().parents[2]
USERS = ["serve_app/cli.py", "loadtest/sse_client.py", "deployments/engines/openai_compat.py"]

STREAM = [
    ": keep-alive",
    "event: sources",
    'data: {"sources": []}',
    "",
    "event: token",
    "data:no space",
    "data:  two spaces",
    "",
    b"event: done\r\n",
    b'data: {"refused": false}\r\n',
    b"\r\n",
    "",                     # a blank line with nothing pending dispatches nothing
    "event: error",         # cut mid-event: never dispatched
    'data: {"stage": "generation"}',
]

EXPECTED = [
    SseEvent("sources", '{"sources": []}'),
    SseEvent("token", "no space\n two spaces"),
    SseEvent("done", '{"refused": false}'),
]


def test_the_reader_follows_the_spec_subset_the_streams_use() -> None:
    assert list(iter_events(STREAM)) == EXPECTED


def test_the_async_reader_gives_the_same_events() -> None:
    async def lines():
        for line in STREAM:
            yield line

    async def read() -> list[SseEvent]:
        return [event async for event in aiter_events(lines())]

    assert asyncio.run(read()) == EXPECTED


def test_an_unnamed_event_is_a_message() -> None:
    assert list(iter_events(["data: [DONE]", ""])) == [SseEvent("message", "[DONE]")]


def test_the_cli_reads_json_payloads_through_it() -> None:
    lines = ["event: token", 'data: {"text": "Hi"}', "", "event: done", 'data: {"answer": "Hi"}', ""]
    assert list(iter_sse(iter(lines))) == [("token", {"text": "Hi"}), ("done", {"answer": "Hi"})]


def test_no_other_module_parses_sse_fields_itself() -> None:
    for path in USERS:
        source = (REPO / path).read_text(encoding="utf-8")
        assert "deployments.sse import" in source, path
        assert '"data:"' not in source and '"event:"' not in source, path

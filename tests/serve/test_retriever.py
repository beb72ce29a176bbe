"""The Retriever's MCP pool against the stub index servers (real stdio subprocesses):
docindex-like (tests/serve/stub_mcp_server.py) and crag-mcp-like (tests/stubs/crag_mcp_server.py)."""
from __future__ import annotations

import os
import signal
import sys
import uuid

import pytest
from mcp import MCPError

from deployments.errors import (
    InvalidQuestion,
    InvalidRequest,
    McpTimeout,
    McpUnavailable,
    RetrievalError,
    UnknownCollection,
)
from deployments.mcp_pool import _invalid_params
from deployments.mcp_results import argument_error, parse_crag_text
from deployments.retriever import McpPool, index_info, search
from tests.serve.conftest import pids_with, stub_command
from tests.stubs import crag_command

on_session_loop = pytest.mark.asyncio(loop_scope="session")   # shares the stub_pool fixture
QUESTION = "What does the proxy answer when the queue is full?"


def test_crag_text_format_is_parsed() -> None:
    passages = parse_crag_text(["[cos 0.612  bm25 3.10  fusion 0.032] docs/a.md\nFirst line.\nSecond line.",
                                "(no matching chunks)"])
    assert len(passages) == 1
    p = passages[0]
    assert (p.source, p.text, p.cosine, p.bm25, p.fusion) == ("docs/a.md", "First line.\nSecond line.", 0.612, 3.1, 0.032)


def test_a_structured_passage_keeps_its_coverage_and_its_collections_noise_floor() -> None:
    from deployments.mcp_results import _passage_from_dict
    sent = {"source": "a.md", "text": "t", "cosine": 0.5, "coverage": 0.25, "noise_floor": 0.31}
    assert (_passage_from_dict(sent).coverage, _passage_from_dict(sent).noise_floor) == (0.25, 0.31)
    older = _passage_from_dict({"source": "a.md", "text": "t", "cosine": 0.5})     # a server without them
    assert (older.coverage, older.noise_floor, older.sentence_cosine, older.sentence_floor) == (None,) * 4
    sentenced = _passage_from_dict({**sent, "sentence_cosine": 0.52, "sentence_floor": 0.35})
    assert (sentenced.sentence_cosine, sentenced.sentence_floor) == (0.52, 0.35)
    odd = _passage_from_dict({**sent, "sentence_cosine": True, "sentence_floor": "0.35"})    # not numbers: not sent
    assert (odd.sentence_cosine, odd.sentence_floor) == (None, None)
    assert older.unknown_terms is None and _passage_from_dict({**sent, "unknown_terms": ["sonos", 3]}).unknown_terms \
        == ("sonos",)       # the question's words the collection never uses (the Gate's name clause)


@on_session_loop
async def test_structured_passages_are_ranked_with_scores(stub_pool: McpPool) -> None:
    passages = await search(stub_pool, QUESTION, 2, None)
    assert [p.anchor for p in passages] == ["backpressure", "pasta"]
    assert passages[0].cosine > passages[1].cosine and passages[0].title == "Serve › Backpressure"


@on_session_loop
async def test_collection_goes_to_the_search_tool(stub_pool: McpPool) -> None:
    assert {p.source for p in await search(stub_pool, "pasta water", 5, "recipes")} == {"cooking.md"}
    with pytest.raises(UnknownCollection):
        await search(stub_pool, "pasta", 5, "nope")
    assert await index_info(stub_pool) == {"collections": ["docs", "recipes"], "chunks": 3, "version": 3,
                                            "embedder": None}      # the stub does not say


@on_session_loop
async def test_text_only_servers_are_parsed_too() -> None:
    pool = McpPool(stub_command() + ["--text-only"], size=1)
    await pool.start()
    try:
        passages = await search(pool, QUESTION, 1, None)
    finally:
        await pool.close()
    assert passages[0].source == "serve.md" and passages[0].text.startswith("When the queue")


@on_session_loop
async def test_slow_call_times_out_and_the_session_stays_usable() -> None:
    pool = McpPool(stub_command(), size=1, call_timeout_s=0.5)
    await pool.start()
    try:
        with pytest.raises(McpTimeout):
            await search(pool, "[[mcp:sleep=1.5]] x", 1, None)
        pool.call_timeout_s = 5.0
        assert await search(pool, QUESTION, 1, None)
        assert pool.restarts == 0
    finally:
        await pool.close()


@on_session_loop
async def test_killed_server_is_restarted_and_the_call_retried() -> None:
    tag = f"kill-{uuid.uuid4().hex[:8]}"
    pool = McpPool(stub_command(tag), size=2, call_timeout_s=30.0)
    await pool.start()
    try:
        victims = pids_with(tag)
        assert len(victims) == 2
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        passages = await search(pool, QUESTION, 1, None)
        assert passages[0].anchor == "backpressure" and pool.restarts >= 1
        assert not set(pids_with(tag)) & set(victims)
    finally:
        await pool.close()
    assert pids_with(tag) == []


@on_session_loop
async def test_server_that_dies_on_every_call_is_unavailable() -> None:
    pool = McpPool(stub_command(), size=1, call_timeout_s=30.0)
    await pool.start()
    try:
        with pytest.raises(McpUnavailable):
            await search(pool, "[[mcp:die]] x", 1, None)
    finally:
        await pool.close()


@on_session_loop
async def test_a_command_that_cannot_start_fails_at_start() -> None:
    pool = McpPool([sys.executable, "-c", "import sys; sys.exit(3)"], size=1, start_timeout_s=20)
    with pytest.raises(McpUnavailable, match="did not start"):
        await pool.start()


class _FlakyServer:
    """A pool of one session over the stub server, whose next N starts fail
    (the gate file holds N; seen in Ray replicas right after a server was
    SIGKILLed) or hang (the gate file holds "hang"). Counted, not timed, so a
    loaded machine changes how long a test takes, never what it sees."""

    def __init__(self, tmp_path, **pool_options) -> None:
        self.tag, self.gate = f"flaky-{uuid.uuid4().hex[:8]}", tmp_path / "failing-starts"
        code = ("import os, sys, time; g = sys.argv[1]; "
                "n = open(g).read() if os.path.exists(g) else '0'; "
                "time.sleep(600) if n == 'hang' else None; "
                "open(g, 'w').write(str(int(n) - 1)) if int(n) > 0 else None; "
                "sys.exit(1) if int(n) > 0 else os.execv(sys.executable, [sys.executable] + sys.argv[2:])")
        command = [sys.executable, "-c", code, str(self.gate)] + stub_command(self.tag)[1:]
        self.pool = McpPool(command, size=1, **pool_options)

    def crash(self, failing_starts: int | str) -> None:
        """Kill the running server; the next `failing_starts` starts fail ("hang": every start hangs)."""
        self.gate.write_text(str(failing_starts))
        for pid in pids_with(self.tag):
            os.kill(pid, signal.SIGKILL)

    def failing_starts_left(self) -> int:
        return int(self.gate.read_text())

    def recover(self) -> None:
        self.gate.write_text("0")

    async def __aenter__(self) -> _FlakyServer:
        await self.pool.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.pool.close()


@on_session_loop
async def test_a_waiting_call_outlasts_restarts_that_fail_for_a_while(tmp_path) -> None:
    async with _FlakyServer(tmp_path, call_timeout_s=60.0) as server:
        server.crash(failing_starts=3)              # 3 failed starts at 0.25, 0.5, 1 s backoff
        passages = await search(server.pool, QUESTION, 1, None)
        assert passages[0].anchor == "backpressure"
        assert server.failing_starts_left() == 0 and server.pool.restarts == 4     # the death + 3 failed starts


@on_session_loop
async def test_restarts_that_keep_failing_end_in_unavailable_before_the_deadline(tmp_path) -> None:
    async with _FlakyServer(tmp_path, call_timeout_s=4.0) as server:
        server.crash(failing_starts=10**6)
        with pytest.raises(McpUnavailable, match=r"could not be restarted.*last start: MCPError"):
            await search(server.pool, QUESTION, 1, None)
        assert server.pool.restarts >= 2            # the death + at least one failed start


@on_session_loop
async def test_a_restart_that_hangs_past_the_deadline_is_unavailable_not_a_timeout(tmp_path) -> None:
    async with _FlakyServer(tmp_path, call_timeout_s=2.0) as server:
        server.crash(failing_starts="hang")
        with pytest.raises(McpUnavailable, match="could not be restarted within 2 s"):
            await search(server.pool, QUESTION, 1, None)
        with pytest.raises(McpUnavailable):         # queued while no session serves: down, not slow
            await search(server.pool, QUESTION, 1, None)


@on_session_loop
async def test_after_a_long_outage_the_next_call_restarts_at_once(tmp_path) -> None:
    """No session serves and the idle backoff has grown: a new call must not
    wait it out, it starts the next attempt itself. The backoff (600 s) is
    longer than the call's timeout (60 s): the call succeeds only if it does not wait."""
    server = _FlakyServer(tmp_path, call_timeout_s=60.0)
    server.pool.RESTART_BACKOFF_S = server.pool.IDLE_BACKOFF_MAX_S = 600.0     # before its worker reads them
    async with server:
        server.crash(failing_starts=10**6)
        with pytest.raises(McpUnavailable):         # the outage: the first failed start outlasts this call
            await search(server.pool, QUESTION, 1, None)
        server.recover()                            # the index server can start again
        passages = await search(server.pool, QUESTION, 1, None)
        assert passages[0].anchor == "backpressure"


# ---------------------------------------------------------------- a crag_search-only server (crag-mcp)

@on_session_loop
async def test_a_crag_mcp_server_serves_passages_health_and_no_collections() -> None:
    pool = McpPool(crag_command(), size=1)
    await pool.start()
    try:
        assert pool.tools == {"crag_search", "crag_stats"}
        passages = await search(pool, QUESTION, 3, None)
        assert [p.source for p in passages] == ["serve/backpressure.md"] and passages[0].cosine == 0.625
        assert await search(pool, "Which river flows through Mongolia?", 3, None) == []   # its no-chunk text
        assert await index_info(pool) == {"collections": [], "chunks": 4, "version": None, "embedder": None}
        with pytest.raises(UnknownCollection, match="this index has no collections"):
            await search(pool, QUESTION, 3, "docs")
    finally:
        await pool.close()


@on_session_loop
async def test_a_server_with_only_crag_search_is_probed_for_health() -> None:
    pool = McpPool(crag_command("--search-only"), size=1)
    await pool.start()
    try:
        assert pool.tools == {"crag_search"}
        assert await index_info(pool) == {"collections": [], "chunks": None, "version": None, "embedder": None}
    finally:
        await pool.close()


@on_session_loop
async def test_arguments_the_index_refuses_are_the_requests_fault() -> None:
    pool = McpPool(crag_command(), size=1)
    await pool.start()
    try:
        with pytest.raises(InvalidQuestion, match=r"^the index cannot search this question: string too short \(min 1\)$"):
            await search(pool, "", 3, None)
        with pytest.raises(InvalidQuestion, match="^the index cannot search this k: value above maximum$"):
            await search(pool, QUESTION, 21, None)
    finally:
        await pool.close()


def test_argument_errors_are_classified_by_wording_and_code() -> None:
    stopwords = argument_error("Invalid arguments for tool 'crag_search': the query has only stopwords or "
                               "punctuation: ask with content words (path: /query)")
    assert isinstance(stopwords, InvalidRequest) and str(stopwords) == (
        "the index cannot search this question: the query has only stopwords or punctuation: ask with content words")
    assert argument_error("the index is on fire") is None
    # crag-mcp's older protocol-channel shape, and an unknown tool (not the request's fault)
    refused = _invalid_params("crag_search", MCPError(-32602, "arguments failed schema validation",
                                                      {"path": "/k", "keyword": "maximum", "message": "value above maximum"}))
    assert isinstance(refused, InvalidQuestion) and str(refused) == "the index cannot search this k: value above maximum"
    unknown = _invalid_params("list_collections", MCPError(-32602, "Unknown tool: list_collections",
                                                           {"name": "list_collections"}))
    assert type(unknown) is RetrievalError

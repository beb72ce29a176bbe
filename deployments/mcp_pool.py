"""McpPool: N long-lived MCP stdio sessions to the document index behind one `call`.

Each session is a subprocess of the configured command (default
`python -m docindex.cli serve-mcp --db DB`). The server's tool names are read
once per session from `tools/list` (`McpPool.tools`). Every session is owned by one
worker task that enters its `Client`, serves jobs from a shared queue and
exits the client in the same task (the MCP SDK's anyio cancel scopes must be
entered and left in one task). Whichever worker is idle takes the next job,
which spreads load over idle sessions. What the Retriever asks through the
pool (search, health, collections) is in deployments/retriever.py.

Failure policy:
- a call slower than `call_timeout_s` (queue wait included) → `McpTimeout`;
  the session stays usable;
- a dead session (the server exited) is restarted and the call retried on
  it. A start that fails is retried (0.25 s backoff, doubling to 1 s) while
  the waiting call has time left for the backoff plus twice the slowest
  failed start so far; then → `McpUnavailable` naming the last start error,
  before the call's own timeout. A call that times out while it waits on a
  restart, or while no session serves (a start slower than estimated), is
  `McpUnavailable` too, never `McpTimeout`: the index is down, not slow. The
  worker keeps trying to restart in the background so the pool heals; when no
  session serves, the next call starts the next attempt at once. (Inside
  a Ray replica, the first spawns after a SIGKILLed server can die before
  exec for up to ~2 s — measured in tests/serve/test_cluster.py; a fixed
  number of restarts lost answers there.) A server that dies again on the
  retried call → `McpUnavailable` at once: that query kills it;
- each session makes a warm-up call when it starts, so the embedder is
  loaded before the first question;
- arguments the server rejects (an `isError` "Invalid arguments for tool
  ..." result, or a JSON-RPC -32602 naming a path) are the request's fault:
  `InvalidRequest` (HTTP 422) with the server's reason, never a 502.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CONNECTION_CLOSED, INVALID_PARAMS, REQUEST_TIMEOUT

from deployments.errors import McpTimeout, McpUnavailable, RetrievalError
from deployments.mcp_results import rejected_arguments
from deployments.server_stderr import StderrTail, start_failure

log = logging.getLogger("askdocs.retriever")     # one logger name for the Retriever and its pool

WARMUP_QUERY = {"query": "warm up", "k": 1}


@dataclass
class _Job:
    tool: str
    arguments: dict[str, Any]
    future: asyncio.Future[Any] = field(repr=False)
    deadline: float = 0.0           # loop time after which the caller has given up
    restarting: bool = False        # its session died: it waits on a restart


class _SessionDied(Exception):
    """The MCP server process behind a session is gone."""


def _describe(e: BaseException) -> str:
    """One line for a log: the leaves of an exception group, not just its summary."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_describe(sub) for sub in e.exceptions)
    return f"{type(e).__name__}: {e}"


def _is_dead(e: BaseException) -> bool:
    if isinstance(e, MCPError):
        return e.code == CONNECTION_CLOSED
    return isinstance(e, (OSError, EOFError)) or type(e).__name__ in {
        "ClosedResourceError", "BrokenResourceError", "EndOfStream"}


class McpPool:
    """N MCP stdio sessions behind one `call(tool, arguments)`."""

    RESTART_BACKOFF_S = 0.25        # first wait after a failed start
    RESTART_BACKOFF_MAX_S = 1.0     # cap while a call waits
    IDLE_BACKOFF_MAX_S = 10.0       # cap while none does (a new call cuts the wait short)
    CLOSE_TIMEOUT_S = 10.0          # the SDK's own shutdown is bounded (~2 s grace, then a kill)

    def __init__(self, command: Sequence[str], *, size: int = 2, call_timeout_s: float = 10.0,
                 start_timeout_s: float = 120.0, env: dict[str, str] | None = None) -> None:
        if not command:
            raise ValueError("empty MCP command")
        self.params = StdioServerParameters(command=command[0], args=list(command[1:]), env=env)
        self.size = size
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self.restarts = 0
        self._jobs: asyncio.Queue[_Job] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._scopes: list[anyio.CancelScope] = []     # one per worker: how close() stops it
        self._closing = False
        self._live = 0                  # sessions started and serving
        self.last_start_error: str | None = None    # why the last failed (re)start failed
        self.tools: frozenset[str] | None = None    # the server's tool names (None: it did not say)

    def offers(self, tool: str) -> bool:
        """Whether the server has `tool` (assumed when its tools/list failed)."""
        return self.tools is None or tool in self.tools

    async def start(self) -> None:
        """Start the sessions one after another (each warms up before the next starts)."""
        for i in range(self.size):
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._workers.append(asyncio.create_task(self._worker(i, ready), name=f"mcp-session-{i}"))
            try:
                await asyncio.wait_for(ready, self.start_timeout_s)
            except Exception as e:
                await self.close()
                if isinstance(e, McpUnavailable):       # one readable line, no chained group
                    raise McpUnavailable(str(e)) from None
                raise McpUnavailable(f"the index server did not start: {e!r}") from None

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        loop = asyncio.get_running_loop()
        job = _Job(tool, arguments, loop.create_future(), loop.time() + self.call_timeout_s)
        await self._jobs.put(job)
        try:
            return await asyncio.wait_for(job.future, self.call_timeout_s)
        except TimeoutError:
            if job.restarting or self._live == 0:
                # A start outlasted the estimate: the index is down, not slow.
                raise McpUnavailable(self._down(f"within {self.call_timeout_s:g} s")) from None
            raise McpTimeout(f"the index did not answer within {self.call_timeout_s:g} s") from None

    def _down(self, when: str = "") -> str:
        why = f" (last start: {self.last_start_error})" if self.last_start_error else ""
        return f"the index server is down and could not be restarted{' ' + when if when else ''}{why}"

    async def close(self) -> None:
        """Stop every session and its server process.

        Each worker runs inside an anyio cancel scope, and close cancels that
        scope: anyio's cancellation waits while the MCP SDK's shielded
        transport shutdown (close stdin, wait, kill, close the pipes) runs, where
        a plain `task.cancel()` would cut it short and leave a running process
        and an unclosed transport behind (ResourceWarnings at GC).
        """
        self._closing = True
        for scope in self._scopes:
            scope.cancel()
        pending = set(self._workers)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=self.CLOSE_TIMEOUT_S)
        # Last resort for a worker that did not leave its scope: cancel the task,
        # repeatedly (a cancel that lands while the SDK's task group exits can be swallowed).
        for _ in range(20):
            if not pending:
                break
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.5)
        if pending:
            log.warning("%d MCP session(s) did not stop", len(pending))
        self._workers.clear()
        self._scopes.clear()

    async def _worker(self, index: int, ready: asyncio.Future[None]) -> None:
        with anyio.CancelScope() as scope:
            self._scopes.append(scope)
            await self._serve(index, ready)
        if not ready.done():        # closed while it was starting
            ready.set_exception(McpUnavailable("the pool was closed while the index server started"))

    async def _serve(self, index: int, ready: asyncio.Future[None]) -> None:
        retry_job: _Job | None = None       # the job whose call found the session dead
        backoff = self.RESTART_BACKOFF_S
        slowest_start = 0.0                 # the longest failed start of this outage
        loop = asyncio.get_running_loop()
        while not self._closing:
            entered = False
            attempt_started = loop.time()
            stderr = StderrTail()       # the server's stderr, passed on; its last line says why a start failed
            try:
                async with Client(stdio_client(self.params, errlog=stderr.file),
                                  read_timeout_seconds=self.start_timeout_s) as client:
                    await self._learn_tools(client)
                    await client.call_tool("crag_search", WARMUP_QUERY)
                    entered = True
                    if not ready.done():
                        ready.set_result(None)
                    backoff = self.RESTART_BACKOFF_S
                    slowest_start = 0.0
                    self.last_start_error = None
                    self._live += 1
                    try:
                        if retry_job is not None:
                            job, retry_job = retry_job, None
                            job.restarting = False
                            if await self._run(client, job, retried=True):
                                raise _SessionDied
                        while True:
                            job = await self._jobs.get()
                            if job.future.done():           # the caller timed out or left
                                continue
                            if await self._run(client, job, retried=False):
                                retry_job = job
                                job.restarting = True
                                raise _SessionDied
                    finally:
                        self._live -= 1
            except asyncio.CancelledError:
                stderr.close(wait=False)
                raise
            except Exception as e:  # noqa: BLE001 - a dead session, or a (re)start that failed
                stderr.close(wait=False)
                if not ready.done():
                    await asyncio.to_thread(stderr.close)       # read what the server said before it exited
                    ready.set_exception(McpUnavailable(start_failure(e, stderr.last_line())))
                    return
                self.restarts += 1
                if entered:
                    log.warning("MCP session %d died; restarting it", index)
                    continue
                # The waiting call keeps its place while its deadline allows another
                # start: the backoff plus twice the slowest failed start so far (a
                # loaded machine makes starts slower, not faster).
                now = loop.time()
                slowest_start = max(slowest_start, now - attempt_started)
                self.last_start_error = _describe(e)
                if retry_job is not None and (
                        retry_job.future.done()
                        or now + backoff + 2 * slowest_start >= retry_job.deadline):
                    if not retry_job.future.done():
                        retry_job.future.set_exception(McpUnavailable(self._down()))
                    retry_job = None
                log.warning("MCP session %d could not start (%s); retrying in %.2f s", index, _describe(e), backoff)
                log.debug("MCP session %d start failure", index, exc_info=e)
                if retry_job is None and self._live == 0:
                    # No session is serving: a new call starts the next attempt at once
                    # instead of queueing behind a backoff that has grown to seconds.
                    try:
                        job = await asyncio.wait_for(self._jobs.get(), backoff)
                    except TimeoutError:
                        job = None
                    if job is not None:
                        retry_job = None if job.future.done() else job
                        if retry_job is not None:
                            retry_job.restarting = True
                        backoff = self.RESTART_BACKOFF_S
                        continue
                else:
                    await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.RESTART_BACKOFF_MAX_S if retry_job else self.IDLE_BACKOFF_MAX_S)

    async def _learn_tools(self, client: Client) -> None:
        try:
            listed = await client.list_tools()
        except MCPError as e:
            log.warning("the index server did not list its tools (%s); assuming docindex's", e)
            return
        self.tools = frozenset(tool.name for tool in listed.tools)

    async def _run(self, client: Client, job: _Job, *, retried: bool) -> bool:
        """Run one job; True when the session turned out to be dead."""
        try:
            result = await client.call_tool(job.tool, job.arguments, read_timeout_seconds=self.call_timeout_s)
        except Exception as e:  # noqa: BLE001 - classified below
            if _is_dead(e):
                if retried and not job.future.done():
                    job.future.set_exception(McpUnavailable("the index server died twice in a row"))
                return True
            if isinstance(e, MCPError) and e.code == REQUEST_TIMEOUT:
                error: Exception = McpTimeout(f"the index did not answer within {self.call_timeout_s:g} s")
            elif isinstance(e, MCPError) and e.code == INVALID_PARAMS:
                error = _invalid_params(job.tool, e)
            else:
                log.warning("MCP call %s failed: %r", job.tool, e)
                error = RetrievalError("the index server failed to answer")
            if not job.future.done():
                job.future.set_exception(error)
            return False
        if not job.future.done():
            job.future.set_result(result)
        return False


def _invalid_params(tool: str, e: MCPError) -> Exception:
    """A JSON-RPC -32602: arguments refused on the protocol channel (older crag-mcp), or an unknown tool."""
    data = e.data if isinstance(e.data, dict) else {}
    if "name" in data and "path" not in data:
        log.warning("the index server has no tool %r", tool)
        return RetrievalError(f"the index server has no tool {tool!r}")
    log.info("the index refused the arguments of %s: %s", tool, e.message)
    return rejected_arguments(str(data.get("message") or e.message), data.get("path"))

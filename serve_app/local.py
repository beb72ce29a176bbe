"""The graph's logic in one process, without Ray: the same functions the
deployments call, behind the `Pipeline` interface.

Used by the fast tests, by the in-process side of
`benchmarks/serve_overhead.py`, and to run the ingress under plain uvicorn:

    pipeline = await build_local_pipeline(Settings(engine="fake", db="var/askdocs.db"))
    app = create_app(pipeline, settings)      # serve_app.ingress
    ...
    await pipeline.close()

`serve_app.local:app_factory` does exactly that for `uvicorn --factory`
(settings from ASKDOCS_* / .env), starting and closing the pipeline in the
app's lifespan. `python -m serve_app.local [--host H] [--port P]` runs it
with the edge's server-side bounds (head size, head and idle timeouts:
serve_app.uvicorn_server); plain `uvicorn --factory` runs without them.
"""
from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from starlette.applications import Starlette

from deployments import citations, gate, retriever, tracing
from deployments.citations import CheckResult
from deployments.doc_archive import DocArchive, doc_archive
from deployments.engines.base import Delta, Engine, GenParams, Prompt
from deployments.gate import GateDecision
from deployments.generator import RetryPolicy, accepted_first, make_engine, traced_generate
from deployments.passage import Passage
from deployments.retriever import McpPool
from serve_app.pipeline import Carrier, index_figures
from serve_app.settings import Settings


class LocalPipeline:
    # Same spans as the deployed graph (one process here): the deployments'
    # span names under the carrier, so traces read the same either way.

    def __init__(self, settings: Settings, pool: McpPool, engine: Engine) -> None:
        self.settings = settings
        self.pool = pool
        self.engine = engine
        self.retry: RetryPolicy = settings.retry_policy()

    async def search(self, question: str, k: int, collection: str | None,
                     trace: Carrier | None = None) -> list[Passage]:
        return await retriever.search(self.pool, question, k, collection, trace,
                                      quotes=self.settings.wants_quote_vectors())

    async def decide(self, question: str, passages: list[Passage], trace: Carrier | None = None) -> GateDecision:
        with tracing.replica_span(gate.SPAN, trace):
            return gate.decide(passages, **self.settings.gate_rule(), question=question)

    def stream(self, prompt: Prompt, params: GenParams, trace: Carrier | None = None) -> AsyncGenerator[Delta, None]:
        return accepted_first(traced_generate(self.engine, prompt, params, self.retry, trace))

    async def check(self, answer: str, passages: list[Passage], trace: Carrier | None = None) -> CheckResult:
        with tracing.replica_span(citations.SPAN, trace):
            return citations.check(answer, passages, min_support=self.settings.min_support)

    async def info(self) -> dict[str, Any]:
        return {"engine": self.engine.name, "model": self.engine.model, "slots": self.engine.slots,
                **index_figures(await retriever.index_info(self.pool))}

    async def doc_archive(self, collection: str | None, known_hash: str | None) -> DocArchive:
        return await doc_archive(self.pool, collection, known_hash)

    async def close(self) -> None:
        await self.engine.close()
        await self.pool.close()


async def build_local_pipeline(settings: Settings) -> LocalPipeline:
    """Start the MCP pool and the engine (no slot check: there is no Serve queue here)."""
    tracing.setup_tracing("askdocs", settings.otel_endpoint)   # first call per process wins
    pool = McpPool(settings.mcp_argv(), size=settings.mcp_pool_size, call_timeout_s=settings.mcp_call_timeout_s,
                   start_timeout_s=settings.mcp_start_timeout_s)
    await pool.start()
    engine = make_engine(settings.engine_spec())
    try:
        await engine.start()
    except BaseException:
        await pool.close()
        raise
    return LocalPipeline(settings, pool, engine)


def app_factory() -> Starlette:
    """`uvicorn --factory serve_app.local:app_factory`: the ingress over a local pipeline."""
    from serve_app.ingress import create_app

    settings = Settings()
    holder: dict[str, LocalPipeline] = {}

    class _Lazy:
        """Delegates to the pipeline started in the lifespan."""

        def __getattr__(self, name: str) -> Any:
            return getattr(holder["pipeline"], name)

    app = create_app(_Lazy(), settings)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        holder["pipeline"] = await build_local_pipeline(settings)
        try:
            yield
        finally:
            await holder["pipeline"].close()

    app.router.lifespan_context = lifespan
    return app


if __name__ == "__main__":
    from serve_app.uvicorn_server import main

    main()

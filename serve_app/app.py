"""`build_app(args)`: the Serve application from serve_config.yaml's `args`.

A pure function from config to graph (the shape of ray.serve.llm's
builders): validate the args with the one `Settings` class (ASKDOCS_*
environment and .env fill what the YAML leaves out), bind each deployment,
bind the ingress over them. Per-deployment limits (max_ongoing_requests,
queues, back-pressure, autoscaling, CPUs) come from the YAML's
`deployments:` list, keyed by the names below.
"""
from __future__ import annotations

import logging
import os
from typing import Any

from pydantic import ValidationError
from ray import serve
from ray.serve import Application
from ray.serve.handle import DeploymentHandle

from deployments import tracing
from deployments.citations import CitationChecker
from deployments.errors import ConfigError
from deployments.gate import Gate
from deployments.generator import Generator
from deployments.logs import use_serve_logging
from deployments.retriever import Retriever
from serve_app.handles import HandlePipeline
from serve_app.ingress import create_app
from serve_app.settings import Settings, overridden_variables

log = logging.getLogger("askdocs.settings")


@serve.deployment
@serve.ingress()
class Ingress:
    """The HTTP edge: the Starlette app of serve_app.ingress over deployment handles."""

    def __init__(self, retriever: DeploymentHandle[Any], gate: DeploymentHandle[Any],
                 generator: DeploymentHandle[Any], checker: DeploymentHandle[Any], settings: Settings,
                 notes: tuple[str, ...] = ()) -> None:
        use_serve_logging()
        for note in notes:      # repeated here: the app builder's own log is not where people look
            log.warning("%s", note)
        tracing.setup_tracing("askdocs-ingress", settings.otel_endpoint)
        self.pipeline = HandlePipeline(retriever, gate, generator, checker)
        self.settings = settings

    def __serve_build_asgi_app__(self) -> Any:
        return create_app(self.pipeline, self.settings)


def load_settings(args: dict[str, Any] | None) -> Settings:
    """Settings from YAML args over ASKDOCS_* env / .env; unknown args are errors
    (a misspelled limit must not silently fall back to its default). An ASKDOCS_*
    variable that an arg beats is logged as overridden (WARNING, logger askdocs.settings)."""
    for note in overridden_variables(args or {}, os.environ):
        log.warning("%s", note)
    unknown = sorted(set(args or {}) - set(Settings.model_fields))
    if unknown:
        raise ConfigError(f"invalid askdocs args: unknown key(s) {', '.join(unknown)}")
    try:
        return Settings(**(args or {}))
    except ValidationError as e:
        problems = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" if err["loc"] else err["msg"]
                             for err in e.errors(include_input=False, include_url=False))
        raise ConfigError(f"invalid askdocs args: {problems}") from None


def build_app(args: dict[str, Any]) -> Application:
    settings = load_settings(args)
    notes = tuple(overridden_variables(args or {}, os.environ))
    otel = settings.otel_endpoint    # every process exports its own spans (docs/tracing.md)
    # @serve.deployment gives each class .bind() at runtime; mypy cannot see it (hence the ignores).
    retriever = Retriever.bind(  # type: ignore[attr-defined]
        settings.mcp_argv(), settings.mcp_pool_size, settings.mcp_call_timeout_s,
        settings.mcp_start_timeout_s, otel_endpoint=otel, quotes=settings.wants_quote_vectors())
    gate = Gate.bind(settings.gate_rule(), otel_endpoint=otel)  # type: ignore[attr-defined]
    generator = Generator.bind(  # type: ignore[attr-defined]
        settings.engine_spec(), settings.retry_policy(), otel_endpoint=otel,
        stream_interval_s=settings.stream_interval_s)
    checker = CitationChecker.bind(settings.min_support, otel_endpoint=otel)  # type: ignore[attr-defined]
    app: Application = Ingress.bind(retriever, gate, generator, checker, settings, notes)  # type: ignore[attr-defined]
    return app

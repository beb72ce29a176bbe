"""Fixtures shared by the ops tests."""
from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from deployments import tracing


@pytest.fixture
def memory() -> Iterator[InMemorySpanExporter]:
    tracing.shutdown_tracing()
    exporter = InMemorySpanExporter()
    tracing.setup_tracing("askdocs-test", exporter=exporter)
    yield exporter
    tracing.shutdown_tracing()

"""Body limits, read timeouts and a short overload over real sockets: the
ingress under uvicorn (no Ray), fake engine, stub index. Fast: default suite."""
from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.reliability.conftest import (
    LOCAL_BODY_TIMEOUT_S,
    LOCAL_MAX_CONCURRENT,
    RssSampler,
    Server,
    record,
    rss_mb,
    tree,
)
from tests.reliability.faults import assert_overload_bounds
from tests.reliability.load import run_load
from tests.reliability.rawhttp import slow_post

pytestmark = pytest.mark.timeout(120)
QUESTION = "What does the proxy answer when the queue is full?"


def test_chunked_body_over_the_limit_is_refused_before_the_client_finishes_sending(local_server: Server) -> None:
    # 64 KB offered in 1 KB chunks, 20 ms apart (~1.3 s in all); the limit is 16 KB.
    result = slow_post(local_server.port, chunk=b" " * 1024, chunks=64, gap_s=0.02, chunked=True)
    assert result.status == 413
    assert not result.finished_sending and result.sent_bytes <= 24 * 1024, result


def test_declared_oversized_body_is_refused_without_reading_any_of_it(local_server: Server) -> None:
    result = slow_post(local_server.port, chunk=b" " * 1024, chunks=200, gap_s=0.05, chunked=False)
    assert result.status == 413 and result.sent_bytes <= 1024, result


def test_slow_body_is_cut_off_by_the_read_timeout(local_server: Server) -> None:
    # slowloris: a valid Content-Length, then one byte every 0.5 s (the whole body would take ~50 s).
    result = slow_post(local_server.port, chunk=b" ", chunks=100, gap_s=0.5, chunked=False, deadline_s=20)
    assert result.status == 408, result
    # Not before the timeout (a lower bound: load only delays), and while the client was
    # still sending (order: the whole body would have taken ~50 s).
    assert result.seconds >= LOCAL_BODY_TIMEOUT_S - 0.5, result
    assert not result.finished_sending and result.sent_bytes < result.offered_bytes, result
    health = httpx.get(f"{local_server.url}/healthz", timeout=10).json()
    assert health["in_flight"] == 0


def test_short_overload_at_four_times_capacity_keeps_every_bound(local_server: Server) -> None:
    clients, seconds = 4 * LOCAL_MAX_CONCURRENT, 10.0
    before = rss_mb(tree(local_server.pid))
    with RssSampler(local_server.pid, every_s=0.5) as rss:
        started = time.monotonic()
        report = asyncio.run(run_load(local_server.url, clients=clients, seconds=seconds,
                                      question=QUESTION + " [[fake:slow=0.02]]"))
        held = time.monotonic() - started
    after = rss_mb(tree(local_server.pid))
    summary = report.summary()
    record("overload_uvicorn_10s", {"clients": clients, "capacity": LOCAL_MAX_CONCURRENT, "held_s": round(held, 1),
                                    **summary, "rss_mb": {"before": before, "peak": rss.peak, "after": after}})
    assert_overload_bounds(report)
    # Nothing hung: a request past the client deadline is a problem (above), and every slot came back.
    assert httpx.get(f"{local_server.url}/healthz", timeout=10).json()["in_flight"] == 0
    assert after - before < 100, (before, after)     # flat: no per-request leak

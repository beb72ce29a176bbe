"""Every fault class once, short, in the default suite (issue 17): the deployed
graph (serve_config.yaml as shipped, fake engine, stub index) on the session's
Ray cluster (tests/serve/conftest.py: no second cluster to start), a few
seconds of load and one kill each. The bounds are the published ones
(tests/reliability/faults.py); the long forms are `make reliability`
(tests/reliability/test_cluster_faults.py). The overload and hostile bodies
under plain uvicorn are tests/reliability/test_http_edge.py and
test_hostile_input.py. This file runs after the other cluster tests of this
directory (by name), and every test here ends with the graph answering again.

Faults fire on events (after N answers completed), and the load stops on an
event (answers completed after the kill); the only clocks are hang guards.
"""
from __future__ import annotations

import asyncio
import os
import signal
import time

import httpx
import pytest
from hypothesis import HealthCheck, given, seed
from hypothesis import settings as hsettings

from tests.fuzz_seed import fuzz_seed
from tests.reliability.conftest import record
from tests.reliability.faults import (
    Kill,
    assert_generator_kill_bounds,
    assert_index_kill_bounds,
    assert_overload_bounds,
    done_after,
    done_count,
    failed,
    index_outage,
    kill_index_servers,
    load_with_faults,
    recovery_s,
    replica_pids,
)
from tests.reliability.load import run_load
from tests.reliability.test_hostile_input import judge_response, requests_batch
from tests.serve.conftest import Cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]
QUESTION = "What does the proxy answer when the queue is full?"
SLOW_ANSWER = QUESTION + " [[fake:slow=0.02]]"       # ~25 tokens: ~0.5 s an answer
CAPACITY = 1 + 4          # serve_config.yaml: Generator max_ongoing_requests 1 + max_queued_requests 4
HANG_GUARD_S = 120.0      # far above any answer or restart here: reaching it means a hang
PROXY_BODIES = 100        # generated bodies through the Serve proxy (in-process: tests/reliability/test_hostile_input.py)


def _took(t0: float) -> float:
    return round(time.monotonic() - t0, 1)


def _kills(kills: list[Kill], t0: float) -> list[tuple[float, int]]:
    return [(round(k.at - t0, 2), k.victims) for k in kills]


def test_short_overload_through_serve_sheds_with_503_and_retry_after(serve_cluster: Cluster) -> None:
    t0, clients = time.monotonic(), 4 * CAPACITY
    report = asyncio.run(run_load(serve_cluster.url, clients=clients, seconds=HANG_GUARD_S, question=SLOW_ANSWER,
                                  until=lambda r: done_count(r) >= 5 and r.statuses()[503] >= 20))
    record("short_overload_ray", {"clients": clients, "capacity": CAPACITY, **report.summary(), "test_s": _took(t0)})
    assert_overload_bounds(report)


def test_generated_bodies_through_the_serve_proxy_never_get_a_500(serve_cluster: Cluster) -> None:
    t0, tally = time.monotonic(), {"requests": 0, "statuses": {}, "seed": fuzz_seed()}
    with httpx.Client(base_url=serve_cluster.url, timeout=60) as client:
        @seed(fuzz_seed())
        @hsettings(max_examples=PROXY_BODIES // 10, deadline=None, database=None,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(batch=requests_batch)
        def send(batch: list) -> None:
            for body, query, content_type in batch:
                # The stub index obeys "[[mcp:die]]" (the kill test's own fault): defused here.
                body = body.replace(b"[[mcp:", b"[[mcp-")
                headers = {"content-type": content_type} if content_type else {}
                response = client.post(f"/ask{query}", content=body, headers=headers)
                tally["requests"] += 1
                code = str(response.status_code)
                tally["statuses"][code] = tally["statuses"].get(code, 0) + 1
                judge_response(body, response)

        send()
    record("short_hostile_bodies_ray", {**tally, "test_s": _took(t0)})
    assert tally["requests"] >= PROXY_BODIES


def test_killing_the_index_servers_once_loses_only_answers_waiting_on_them(serve_cluster: Cluster) -> None:
    t0 = time.monotonic()
    report, kills = asyncio.run(load_with_faults(
        serve_cluster.url, clients=6, question=SLOW_ANSWER, seconds=HANG_GUARD_S,
        fault=lambda: kill_index_servers(serve_cluster.mcp_tag),
        triggers=[lambda r, _: done_count(r) >= 3],
        until=lambda r, k: len(done_after(r, k[-1].at)) >= 3))
    record("short_mcp_kill_ray", {"clients": 6, "kills": _kills(kills, t0), **report.summary(),
                                  "retrieval_failures": report.error_stages().get("retrieval", 0),
                                  "outages": [index_outage(report, k) for k in kills], "test_s": _took(t0)})
    assert_index_kill_bounds(report, kills)


def test_killing_the_generator_replica_once_recovers_with_at_most_its_answer_lost(serve_cluster: Cluster) -> None:
    victims = replica_pids(os.getpid(), "Generator")
    assert len(victims) == 1, victims

    def kill_generator() -> int:
        os.kill(victims[0], signal.SIGKILL)
        return 1

    t0 = time.monotonic()
    report, kills = asyncio.run(load_with_faults(
        serve_cluster.url, clients=8, question=SLOW_ANSWER, seconds=HANG_GUARD_S, fault=kill_generator,
        triggers=[lambda r, _: done_count(r) >= 3],
        until=lambda r, k: len(done_after(r, k[-1].at)) >= 2))
    replacement = replica_pids(os.getpid(), "Generator")
    record("short_generator_kill_ray", {
        "clients": 8, "kills": _kills(kills, t0), "replacement_pids": len(replacement), **report.summary(),
        "failed_answers": len(failed(report)), "recovery_s": recovery_s(report, kills[0].at) if kills else None,
        "test_s": _took(t0)})
    assert_generator_kill_bounds(report, kills, hang_guard_s=HANG_GUARD_S)
    assert replacement and victims[0] not in replacement
    assert httpx.get(f"{serve_cluster.url}/healthz", timeout=30).status_code == 200


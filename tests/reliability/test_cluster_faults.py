"""The deployed graph (serve_config.yaml as shipped, fake engine, stub index)
on a real local Ray cluster, under overload and injected faults. Slow:
`make reliability`. Each test records its figures (conftest.record). The
bounds are tests/reliability/faults.py's, the same the short forms in the
default suite assert (tests/serve/test_cluster_under_faults.py)."""
from __future__ import annotations

import asyncio
import os
import signal
import time

import httpx
import pytest

from tests.reliability.conftest import RayCluster, RssSampler, record, rss_mb
from tests.reliability.faults import (
    after,
    assert_generator_kill_bounds,
    assert_index_kill_bounds,
    assert_overload_bounds,
    done_after,
    failed,
    index_outage,
    kill_index_servers,
    load_with_faults,
    recovery_s,
)
from tests.reliability.load import run_load
from tests.reliability.rawhttp import slow_post

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
QUESTION = "What does the proxy answer when the queue is full?"
SLOW_ANSWER = QUESTION + " [[fake:slow=0.02]]"       # ~25 tokens: ~0.5 s an answer
CAPACITY = 1 + 4          # serve_config.yaml: Generator max_ongoing_requests 1 + max_queued_requests 4
SERVE_BODY_TIMEOUT_S = 10.0   # Settings.body_read_timeout_s default (the cluster config does not set it)
HANG_GUARD_S = 120.0          # a killed Generator's replacement: 10.7-17.7 s near idle, 33-43 s at load 20-25


def test_four_times_capacity_for_sixty_seconds_keeps_every_bound(ray_cluster: RayCluster) -> None:
    clients, seconds = 4 * CAPACITY, 60.0
    first = ray_cluster.processes()
    before, replicas_before = rss_mb(first), ray_cluster.replica_counts()
    with RssSampler(ray_cluster.driver_pid) as rss:
        started = time.monotonic()
        report = asyncio.run(run_load(ray_cluster.url, clients=clients, seconds=seconds, question=SLOW_ANSWER))
        held = time.monotonic() - started
    time.sleep(2)
    after = rss_mb(ray_cluster.processes())
    # Autoscaling may add a Retriever/CitationChecker replica (and its index server):
    # the leak check compares the processes that existed before the load.
    same_after = rss_mb([p for p in ray_cluster.processes() if p.pid in {q.pid for q in first}])
    record("overload_ray_60s", {"clients": clients, "capacity": CAPACITY, "held_s": round(held, 1),
                                **report.summary(), "ray_processes": [len(first), len(ray_cluster.processes())],
                                "replicas": [replicas_before, ray_cluster.replica_counts()],
                                "ray_rss_mb": {"before": before, "peak": rss.peak, "after": after,
                                               "same_processes_after": same_after}})
    assert_overload_bounds(report)
    assert held < seconds + 60
    assert same_after - before < 150, (before, same_after)


def test_oversized_and_slow_bodies_are_bounded_through_the_serve_proxy(ray_cluster: RayCluster) -> None:
    chunked = slow_post(ray_cluster.port, chunk=b" " * 1024, chunks=64, gap_s=0.05, chunked=True)
    declared = slow_post(ray_cluster.port, chunk=b" " * 1024, chunks=100, gap_s=0.05, chunked=False)
    slow = slow_post(ray_cluster.port, chunk=b" ", chunks=200, gap_s=0.5, chunked=False, deadline_s=60)
    record("bodies_ray", {"chunked_64k": vars(chunked), "declared_100k": vars(declared), "slowloris": vars(slow)})
    assert chunked.status == 413 and not chunked.finished_sending, chunked
    assert declared.status == 413 and declared.sent_bytes <= 2048, declared
    assert slow.status == 408 and slow.seconds < SERVE_BODY_TIMEOUT_S + 10, slow


def test_killing_the_index_servers_under_load_loses_only_answers_waiting_on_them(ray_cluster: RayCluster) -> None:
    clients, seconds, kill_at = 6, 32.0, (4.0, 11.0, 18.0)

    t0 = time.monotonic()
    report, kills = asyncio.run(load_with_faults(
        ray_cluster.url, clients=clients, question=SLOW_ANSWER, seconds=seconds,
        fault=lambda: kill_index_servers(ray_cluster.mcp_tag),
        triggers=[(lambda r, t, at=at: t >= at) for at in kill_at]))
    late = after(report, kills[-1].at + 8) if kills else []
    record("mcp_kill_ray", {"clients": clients, "load_s": seconds,
                            "kills": [(round(k.at - t0, 1), k.victims) for k in kills], **report.summary(),
                            "retrieval_failures": report.error_stages().get("retrieval", 0),
                            "outages": [index_outage(report, k) for k in kills],
                            "answers_started_8s_after_last_kill": len(late),
                            "of_them_done": sum(o.terminal == "done" for o in late)})
    assert len(kills) == len(kill_at)
    assert_index_kill_bounds(report, kills)     # order-based: the 8 s figure above is recorded, not asserted


def test_killing_the_generator_replica_under_load_recovers(ray_cluster: RayCluster) -> None:
    clients, seconds, kill_after = 8, 45.0, 8.0
    victims = ray_cluster.replica_pids("Generator")
    assert len(victims) == 1, victims

    def kill_generator() -> int:
        os.kill(victims[0], signal.SIGKILL)
        return 1

    began = time.monotonic()
    report, kills = asyncio.run(load_with_faults(      # 45 s of load, longer if the replacement is not answering yet
        ray_cluster.url, clients=clients, question=SLOW_ANSWER, seconds=seconds + HANG_GUARD_S, fault=kill_generator,
        triggers=[lambda r, t: t >= kill_after],
        until=lambda r, k: time.monotonic() - began >= seconds and len(done_after(r, k[0].at)) >= 2))
    killed_at = kills[0].at
    replacement = ray_cluster.replica_pids("Generator")
    record("generator_kill_ray", {
        "clients": clients, "load_s": seconds, "killed_pid": victims[0], "replacement_pids": replacement,
        **report.summary(),
        "failed_answers": [{"status": o.status, "stage": o.error_stage, "problem": o.problem,
                            "at_s_after_kill": round(o.ended - killed_at, 2)} for o in failed(report)],
        "recovery_s": recovery_s(report, killed_at)})
    assert_generator_kill_bounds(report, kills, hang_guard_s=HANG_GUARD_S)
    assert replacement and victims[0] not in replacement
    health = httpx.get(f"{ray_cluster.url}/healthz", timeout=30)
    assert health.status_code == 200

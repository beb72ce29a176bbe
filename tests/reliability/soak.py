"""What the soak tests share: the Serve processes to watch, RSS sampling and
its slope, a paced (open-loop) load, and per-window answers/s and P95.

- `serve_processes`: every Serve replica, the proxy, the controller and the
  index servers (found by a marker in their command line) of a cluster.
- `paced_soak`: requests sent at a fixed rate (not closed-loop: a slow answer
  does not lower the offered load), each with the load module's judgement,
  while a sampler records every process's RSS and the load average.
- `slope_mb_per_min`: least-squares slope of (seconds, MB) points.
"""
from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable

import httpx
import psutil

from serve_app.percentile import p50_p95
from tests.reliability.load import REQUEST_DEADLINE_S, LoadReport, one_request

TITLES = ("ServeReplica:askdocs:", "ProxyActor", "ServeController")
Samples = dict[str, list[tuple[float, float]]]


def serve_processes(processes: list[psutil.Process], index_marker: str) -> dict[str, psutil.Process]:
    """`<deployment or actor>:<pid>` → process, for Serve's processes and the index servers."""
    named: dict[str, psutil.Process] = {}
    for p in processes:
        try:
            cmd = " ".join(p.cmdline())
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        if index_marker in cmd:
            named[f"index_server:{p.pid}"] = p
            continue
        for title in TITLES:
            if title in cmd:
                # the title names the task running at that moment: "…:Ingress.handle_request"
                name = cmd.split(title, 1)[1].split()[0].split(".")[0] if title.endswith(":") else title
                named[f"{name}:{p.pid}"] = p
    return named


def slope_mb_per_min(points: list[tuple[float, float]]) -> float:
    n = len(points)
    mean_t, mean_m = sum(t for t, _ in points) / n, sum(m for _, m in points) / n
    var = sum((t - mean_t) ** 2 for t, _ in points)
    return round(sum((t - mean_t) * (m - mean_m) for t, m in points) / var * 60, 3) if var else 0.0


def sample_once(procs: dict[str, psutil.Process], samples: Samples, at: float) -> None:
    for name, p in procs.items():
        try:
            samples.setdefault(name, []).append((round(at, 1), round(p.memory_info().rss / 2**20, 2)))
        except psutil.NoSuchProcess:
            continue


async def paced_soak(url: str, *, rate: float, seconds: float, question: Callable[[int], str],
                     procs: dict[str, psutil.Process], samples: Samples, load_avg: list[tuple[float, list[float]]],
                     sample_every_s: float, max_in_flight: int = 32) -> LoadReport:
    """Send `rate` requests a second for `seconds` (request i asks `question(i)`);
    sample RSS every `sample_every_s` and the load average every minute."""
    report = LoadReport()
    t0 = time.monotonic()
    limits = httpx.Limits(max_connections=max_in_flight, max_keepalive_connections=max_in_flight)
    in_flight = asyncio.Semaphore(max_in_flight)

    async def sampler() -> None:
        next_load = 0.0
        while (at := time.monotonic() - t0) < seconds:
            sample_once(procs, samples, at)
            if at >= next_load:
                load_avg.append((round(at), [round(x, 2) for x in os.getloadavg()]))
                next_load += 60
            await asyncio.sleep(sample_every_s)

    async def one(client: httpx.AsyncClient, i: int) -> None:
        async with in_flight:
            report.outcomes.append(await one_request(client, url, question(i)))

    async with httpx.AsyncClient(timeout=httpx.Timeout(REQUEST_DEADLINE_S, connect=10.0), limits=limits) as client:
        sampling = asyncio.create_task(sampler())
        tasks = []
        i = 0
        while (due := t0 + i / rate) < t0 + seconds:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            tasks.append(asyncio.create_task(one(client, i)))
            i += 1
        await asyncio.gather(*tasks)
        await sampling
    return report


def windows(report: LoadReport, t0: float, seconds: float, width_s: int) -> list[dict[str, object]]:
    """Answers/s and P50/P95 of the answers that ended in each `width_s` window."""
    out: list[dict[str, object]] = []
    for start in range(0, int(seconds), width_s):
        inside = [o.ended - o.started for o in report.outcomes
                  if o.terminal == "done" and start <= o.ended - t0 < start + width_s]
        out.append({"from_s": start, "answers_per_s": round(len(inside) / width_s, 2), **p50_p95(inside)})
    return out


def per_minute(points: list[tuple[float, float]]) -> list[float]:
    """The first sample of each minute (MB): the curve, small enough to commit."""
    out, minute = [], -1
    for t, mb in points:
        if int(t // 60) > minute:
            minute = int(t // 60)
            out.append(mb)
    return out

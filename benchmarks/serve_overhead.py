"""What the Ray Serve graph costs on top of the same pipeline in-process.

    .venv/bin/python benchmarks/serve_overhead.py [--n 200] [--out benchmarks/results/serve_overhead.md]

1. Added latency: the same question answered (a) by the ingress app called
   in-process (ASGI, `serve_app.local` pipeline) and (b) through the deployed
   graph over HTTP on 127.0.0.1 (proxy → Ingress → Retriever, Gate,
   Generator (streaming), CitationChecker), fake engine with zero latency,
   JSON mode, sequential; P50/P95 of b - a over paired requests.
2. Throughput at saturation, zero-latency engine (closed loop, 16 clients).
3. Throughput with a fixed-latency fake engine vs the limit slots × 1/latency.
4. 4x overload: only 200 and 503 may come back.

Both sides use the same index server: the stub from tests/serve (deterministic,
~ms per query) unless --db points at a docindex file. The Serve side deploys
serve_config.yaml with the fake engine and, for the throughput runs, 4 slots.
"""
from __future__ import annotations

import argparse
import asyncio
import copy
import os
import platform
import shutil
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from serve_app.ingress import create_app  # noqa: E402
from serve_app.local import build_local_pipeline  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402
from serve_app.settings import Settings  # noqa: E402
from tests.ports import free_port  # noqa: E402  (outside Ray's and the kernel's port ranges)

QUESTION = "What does the proxy answer when the queue is full?"
SLOTS = 4
QUEUE = 8
TOKEN_S = 0.02          # fixed-latency runs: per-token sleep of the fake engine


def pct(values: list[float], q: float) -> float:
    """serve_app.percentile's nearest rank (the one definition); NaN for no values."""
    value = percentile(values, q)
    return float("nan") if value is None else value


def args_for(mcp_command: list[str]) -> dict:
    return {"engine": "fake", "engine_slots": SLOTS, "mcp_command": mcp_command, "mcp_pool_size": 2,
            "retry_backoff_s": 0.01, "max_concurrent": 256}


def start_graph(mcp_command: list[str]) -> tuple[str, Path]:
    """Deploy serve_config.yaml (fake engine) on a light local cluster; (url, ray temp dir)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")   # a loaded 2-core box starts slowly
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    import ray
    from ray.serve._private import api as serve_api
    from ray.serve.schema import ServeDeploySchema

    config = copy.deepcopy(yaml.safe_load((REPO / "serve_config.yaml").read_text()))
    port = free_port()
    config["http_options"]["port"] = port
    app = config["applications"][0]
    app["args"] = dict(app["args"], **args_for(mcp_command))
    for d in app["deployments"]:
        if d["name"] == "Generator":
            d["max_ongoing_requests"], d["max_queued_requests"] = SLOTS, QUEUE
        if d["name"] == "Ingress":
            d["max_ongoing_requests"], d["max_queued_requests"] = 300, 50
    ray_tmp = Path(f"/tmp/askdocs-bench-{uuid.uuid4().hex[:8]}")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(ray_tmp), log_to_driver=False, namespace="serve")
    client = serve_api.serve_start(http_options={"host": "127.0.0.1", "port": port})
    client.deploy_apps(ServeDeploySchema.model_validate(config), _blocking=False)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return url, ray_tmp
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the graph did not become healthy")


async def timed(client: httpx.AsyncClient, path: str, question: str) -> tuple[float, int]:
    start = time.perf_counter()
    response = await client.post(path, json={"question": question})
    await response.aread()
    return (time.perf_counter() - start) * 1000, response.status_code


async def added_latency(inproc: httpx.AsyncClient, graph: httpx.AsyncClient, n: int) -> dict:
    for _ in range(20):                                     # warm-up both sides
        await timed(inproc, "/ask?stream=false", QUESTION)
        await timed(graph, "/ask?stream=false", QUESTION)
    a, b = [], []
    for _ in range(n):                                      # interleaved pairs: same machine load
        a.append((await timed(inproc, "/ask?stream=false", QUESTION))[0])
        b.append((await timed(graph, "/ask?stream=false", QUESTION))[0])
    diff = [y - x for x, y in zip(a, b)]
    return {"inproc_p50": pct(a, 50), "inproc_p95": pct(a, 95), "graph_p50": pct(b, 50), "graph_p95": pct(b, 95),
            "diff_p50": pct(diff, 50), "diff_p95": pct(diff, 95), "n": n}


async def closed_loop(url: str, clients: int, seconds: float, question: str) -> tuple[float, Counter, list[float]]:
    codes: Counter = Counter()
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    async with httpx.AsyncClient(base_url=url, timeout=120,
                                 limits=httpx.Limits(max_connections=clients)) as client:
        async def worker() -> None:
            while time.perf_counter() < deadline:
                ms, code = await timed(client, "/ask?stream=false", question)
                codes[code] += 1
                if code == 200:
                    latencies.append(ms)
                else:
                    await asyncio.sleep(0.05)               # a rejected client backs off a little
        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        elapsed = time.perf_counter() - start
    return codes[200] / elapsed, codes, latencies


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--db", default=None, help="docindex file (default: the stub index of tests/serve)")
    parser.add_argument("--out", default=str(REPO / "benchmarks/results/serve_overhead.md"))
    opts = parser.parse_args()
    mcp = ([sys.executable, "-m", "docindex.cli", "serve-mcp", "--db", opts.db] if opts.db
           else [sys.executable, str(REPO / "tests/serve/stub_mcp_server.py")])

    settings = Settings(_env_file=None, **args_for(mcp))
    pipeline = await build_local_pipeline(settings)
    ray_tmp: Path | None = None
    try:
        url, ray_tmp = start_graph(mcp)
        inproc = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(pipeline, settings)),
                                   base_url="http://inproc", timeout=60)
        graph = httpx.AsyncClient(base_url=url, timeout=60)
        lat = await added_latency(inproc, graph, opts.n)
        zero_rate, zero_codes, _ = await closed_loop(url, 16, opts.seconds, QUESTION)

        slow_q = QUESTION + f" [[fake:slow={TOKEN_S}]]"
        probe = [(await timed(inproc, "/ask?stream=false", slow_q))[0] for _ in range(5)]
        tokens = 26                                         # tokens after the first in the fake answer
        nominal_s = tokens * TOKEN_S
        limit = SLOTS / nominal_s
        fixed_rate, fixed_codes, fixed_lat = await closed_loop(url, SLOTS * 2, opts.seconds, slow_q)
        over_rate, over_codes, _ = await closed_loop(url, 4 * (SLOTS + QUEUE), opts.seconds, slow_q)
    finally:
        import ray
        from ray import serve
        serve.shutdown()
        ray.shutdown()
        if ray_tmp is not None:
            shutil.rmtree(ray_tmp, ignore_errors=True)
        await pipeline.close()

    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    machine = f"{platform.machine()}, {os.cpu_count()} cores (shared; load avg {os.getloadavg()[0]:.1f} at the end)"
    text = f"""# Serve graph overhead

`.venv/bin/python benchmarks/serve_overhead.py --n {opts.n} --seconds {opts.seconds:g}` — {stamp}, {machine}, no GPU.
Index: {'docindex ' + opts.db if opts.db else 'stub index server (tests/serve/stub_mcp_server.py)'}; fake engine; Serve
{__import__('ray').__version__} with serve_config.yaml's deployment settings, except Generator
max_ongoing_requests = engine_slots = {SLOTS}, max_queued_requests = {QUEUE} (and Ingress limits raised so the
Generator is the bottleneck). By-value handles (`_by_reference=False`).

## 1. Added latency (zero-latency engine, JSON mode, {lat['n']} sequential pairs)
| | P50 ms | P95 ms |
|---|---|---|
| (a) in-process ingress + pipeline (ASGI call) | {lat['inproc_p50']:.1f} | {lat['inproc_p95']:.1f} |
| (b) Serve graph over HTTP | {lat['graph_p50']:.1f} | {lat['graph_p95']:.1f} |
| **b − a per pair** | **{lat['diff_p50']:.1f}** | **{lat['diff_p95']:.1f}** |

Target: ≤ 20 ms added at P50.

## 2. Throughput at saturation, zero-latency engine (16 closed-loop clients, {opts.seconds:g} s)
**{zero_rate:.1f} answers/s**; status codes {dict(zero_codes)}. Target: ≥ 40 answers/s.

## 3. Fixed-latency engine ({TOKEN_S*1000:.0f} ms per token after the first, {tokens} tokens → {nominal_s*1000:.0f} ms nominal; in-process P50 {pct(probe, 50):.0f} ms end to end)
Limit slots × 1/latency = {SLOTS} / {nominal_s:.2f} s = **{limit:.1f} answers/s**; measured with {SLOTS*2} clients:
**{fixed_rate:.1f} answers/s = {100*fixed_rate/limit:.0f} % of the limit** (P50 latency {pct(fixed_lat, 50) if fixed_lat else float('nan'):.0f} ms);
codes {dict(fixed_codes)}. Target ≥ 90 %.

## 4. 4× overload ({4*(SLOTS+QUEUE)} clients against {SLOTS} slots + {QUEUE} queued)
{over_rate:.1f} answers/s; status codes {dict(over_codes)}. Target: only 200 and 503.
"""
    Path(opts.out).write_text(text)
    print(text)


if __name__ == "__main__":
    asyncio.run(main())

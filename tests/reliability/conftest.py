"""Fixtures of the reliability suite (issue 8).

- `StaticPipeline`: the graph's logic in-process over a fixed passage list
  (hostile documents, auth, hostile bodies): no subprocess, milliseconds a request.
- `local_server`: the ingress under uvicorn (`python -m serve_app.local`) in a subprocess, over the
  stub MCP index and the fake engine: real sockets for body limits, read
  timeouts and a short overload, without Ray.
- `ray_cluster`: serve_config.yaml as shipped (fake engine, stub index) on a
  real local Ray cluster run by a separate driver process
  (`cluster_main.py`), so a test can kill replicas and index servers without
  touching Ray state in the pytest process (and without clashing with the
  tests/serve session cluster when both suites run in one session).

Every figure a test measures goes to var/reliability/<name>.json (see
`record`); under `make reliability` (RELIABILITY_PUBLISH=1) also to
benchmarks/results/reliability/<name>.json with the machine, date, commit
and load average, committed: docs/reliability.md's tables are generated from
those files (benchmarks/reliability_table.py; a default test keeps them equal).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from deployments import citations, gate
from deployments.engines.base import GenParams, Prompt
from deployments.engines.fake import FakeEngine
from deployments.errors import UnknownCollection
from deployments.generator import RetryPolicy, generate
from deployments.passage import Passage
from serve_app.settings import Settings
from tests.reliability.faults import replica_pids
from tests.serve.conftest import cluster_config, free_port, stub_command

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "var" / "reliability"
MACHINE = "2-core x86-64 VM, 24 GiB, no GPU"


PUBLISHED = REPO / "benchmarks" / "results" / "reliability"
PUBLISH_VARIABLE = "RELIABILITY_PUBLISH"      # set by `make reliability` (not ASKDOCS_: Settings refuses unknown ones)


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def record(name: str, figures: dict[str, Any]) -> None:
    """Keep a test's measured figures (var/ is git-ignored) and show them with -s;
    under `make reliability` also the committed copy under benchmarks/results/reliability/."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"machine": MACHINE, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
               "commit": _commit(), "load_average": [round(x, 1) for x in os.getloadavg()], **figures}
    text = json.dumps(payload, indent=1, sort_keys=True) + "\n"
    (RESULTS / f"{name}.json").write_text(text)
    if os.environ.get(PUBLISH_VARIABLE) == "1":
        PUBLISHED.mkdir(parents=True, exist_ok=True)
        (PUBLISHED / f"{name}.json").write_text(text)
    print(f"\n[{name}] {json.dumps(figures)}")


# ---------------------------------------------------------------- in-process pipeline

class StaticPipeline:
    """The deployments' logic in-process, with `search` answering fixed passages."""

    def __init__(self, passages: Sequence[Passage], *, min_cosine: float = 0.3) -> None:
        self.passages = list(passages)
        self.min_cosine = min_cosine
        self.engine = FakeEngine()

    async def search(self, question: str, k: int, collection: str | None, trace: Any = None) -> list[Passage]:
        if collection not in (None, "docs"):
            raise UnknownCollection(f"unknown collection {collection!r}")
        return self.passages[:k]

    async def decide(self, question: str, passages: list[Passage], trace: Any = None) -> gate.GateDecision:
        return gate.decide(passages, min_cosine=self.min_cosine)

    def stream(self, prompt: Prompt, params: GenParams, trace: Any = None) -> Any:
        return generate(self.engine, prompt, params, RetryPolicy(retries=0, backoff_s=0.0))

    async def check(self, answer: str, passages: list[Passage], trace: Any = None) -> citations.CheckResult:
        return citations.check(answer, passages, min_support=0.5)

    async def info(self) -> dict[str, Any]:
        return {"engine": "fake", "model": "fake", "slots": 1, "index": {"chunks": len(self.passages), "version": 1}}


PLAIN_PASSAGES = [
    Passage("serve.md", "Ray Serve scales a deployment by adding replicas. Each replica is a Ray actor.", 0.8,
            anchor="replicas", title="Serve › Replicas"),
    Passage("serve.md", "When the queue is full the proxy answers 503 with a Retry-After header.", 0.7,
            anchor="backpressure", title="Serve › Backpressure"),
]


def settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = dict(engine="fake", mcp_command=stub_command(), mcp_pool_size=1, api_keys=[])
    return Settings(_env_file=None, **(base | overrides))


# ---------------------------------------------------------------- process helpers

def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def rss_mb(procs: Sequence[psutil.Process]) -> float:
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return round(total / 2**20, 1)


class RssSampler:
    """Peak RSS (MB) of a process tree, sampled every `every_s` in a thread."""

    def __init__(self, root_pid: int, every_s: float = 1.0) -> None:
        self.root_pid, self.every_s = root_pid, every_s
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_mb(tree(self.root_pid)))
            self._stop.wait(self.every_s)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(5)


def wait_healthy(url: str, proc: subprocess.Popen, seconds: float, log: Path) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode}): {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"not healthy after {seconds:.0f} s: {log.read_text()[-3000:]}")


def stop(proc: subprocess.Popen, grace_s: float = 30) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def child_env() -> dict[str, str]:
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled",
               RAY_raylet_start_wait_time_s="120", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {k: v for k, v in env.items() if not k.startswith("ASKDOCS_")}


# ---------------------------------------------------------------- the ingress under uvicorn

LOCAL_MAX_CONCURRENT = 4
LOCAL_BODY_TIMEOUT_S = 2.0


@dataclass
class Server:
    url: str
    port: int
    pid: int
    mcp_tag: str


@pytest.fixture(scope="session")
def local_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    work = tmp_path_factory.mktemp("uvicorn")          # cwd without a .env
    port, tag = free_port(), f"askdocs-rel-{uuid.uuid4().hex[:8]}"
    env = child_env() | {
        "ASKDOCS_ENGINE": "fake", "ASKDOCS_MCP_COMMAND": json.dumps(stub_command(tag)), "ASKDOCS_MCP_POOL_SIZE": "1",
        "ASKDOCS_MAX_CONCURRENT": str(LOCAL_MAX_CONCURRENT), "ASKDOCS_RETRY_AFTER_S": "1",
        "ASKDOCS_BODY_READ_TIMEOUT_S": str(LOCAL_BODY_TIMEOUT_S), "ASKDOCS_RETRY_BACKOFF_S": "0.01"}
    log = work / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "serve_app.local",      # uvicorn with the edge's bounds
                                 "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
                                cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", proc, 60, log)
        yield Server(f"http://127.0.0.1:{port}", port, proc.pid, tag)
    finally:
        stop(proc)


# ---------------------------------------------------------------- the real Ray cluster

@dataclass
class RayCluster:
    url: str
    port: int
    driver_pid: int
    mcp_tag: str

    def processes(self) -> list[psutil.Process]:
        return tree(self.driver_pid)

    def replica_counts(self) -> dict[str, int]:
        return {d: len(self.replica_pids(d)) for d in ("Ingress", "Retriever", "Gate", "Generator", "CitationChecker")}

    def replica_pids(self, deployment: str) -> list[int]:
        return replica_pids(self.driver_pid, deployment)


RAY_START_TIMEOUT = "The current node timed out during startup"   # ray/_private/node.py: a fixed 30 s
START_ATTEMPTS = 3


@contextlib.contextmanager
def start_cluster(tmp: Path, edit: Callable[[dict[str, Any]], None] | None = None,
                  control: Path | None = None) -> Iterator[RayCluster]:
    """serve_config.yaml as shipped (fake engine, stub index), changed by `edit`,
    on its own local Ray cluster driven by cluster_main.py; stopped on exit.

    Ray gives its raylet a fixed 30 s to register (RAY_raylet_start_wait_time_s
    is not read by this version's ray.init); on a loaded 2-core box it can miss
    that, so a start that failed for that reason alone is tried again.
    `control`: the driver's request folder (cluster_main.py: tracemalloc in the Ingress)."""
    port, tag = free_port(), f"askdocs-rel-{uuid.uuid4().hex[:8]}"
    config = cluster_config(port, tmp / "aborts.log", tag)
    if edit is not None:
        edit(config)
    config_file = tmp / "config.json"
    config_file.write_text(json.dumps(config))
    for attempt in range(1, START_ATTEMPTS + 1):
        ray_tmp = Path(f"/tmp/askdocs-rel-{uuid.uuid4().hex[:8]}")   # Ray socket paths must stay short
        log = tmp / f"driver-{attempt}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("cluster_main.py")),
                                     str(config_file), str(ray_tmp), *([str(control)] if control else [])],
                                    cwd=REPO, env=child_env(), stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        try:
            try:
                wait_healthy(f"http://127.0.0.1:{port}", proc, 240, log)
            except RuntimeError:
                if attempt < START_ATTEMPTS and RAY_START_TIMEOUT in log.read_text():
                    continue        # the finally below stops this attempt first
                raise
            yield RayCluster(f"http://127.0.0.1:{port}", port, proc.pid, tag)
            return
        finally:
            stop(proc, grace_s=60)
            shutil.rmtree(ray_tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayCluster]:
    with start_cluster(tmp_path_factory.mktemp("raycluster")) as cluster:
        yield cluster

"""Fixtures of the serving tests: a stub MCP index, fake-engine settings, the
ingress over an in-process pipeline, and ONE session-scoped real Ray cluster
running serve_config.yaml (fake engine, stub index) over HTTP on 127.0.0.1."""
from __future__ import annotations

import copy
import os
import shutil
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml

from serve_app.settings import Settings
from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
STUB_SERVER = Path(__file__).with_name("stub_mcp_server.py")


def stub_command(tag: str = "") -> list[str]:
    """argv of the stub index server; `tag` makes its processes findable (to kill them)."""
    return [sys.executable, str(STUB_SERVER)] + (["--tag", tag] if tag else [])


def fake_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = dict(engine="fake", engine_slots=1, mcp_command=stub_command(), mcp_pool_size=1,
                                mcp_call_timeout_s=5.0, gate_min_cosine=0.3, retry_backoff_s=0.01,
                                api_keys=[])
    base.update(overrides)
    return Settings(_env_file=None, **base)


def pids_with(marker: str) -> list[int]:
    """Processes whose command line contains `marker` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def stub_pool() -> AsyncIterator[Any]:
    """One stub index process for the whole session (starting one costs ~1-2 s)."""
    from deployments.retriever import McpPool

    pool = McpPool(stub_command(), size=1, call_timeout_s=5.0)
    await pool.start()
    yield pool
    await pool.close()


@pytest_asyncio.fixture(loop_scope="session")
async def local_pipeline(stub_pool: Any) -> AsyncIterator[Any]:
    """The in-process pipeline over the shared stub index and a fresh fake engine.
    Tests using it run on the session loop: mark them `asyncio(loop_scope="session")`."""
    from deployments.generator import make_engine
    from serve_app.local import LocalPipeline

    settings = fake_settings()
    engine = make_engine(settings.engine_spec())
    await engine.start()
    yield LocalPipeline(settings, stub_pool, engine)
    await engine.close()


# ---------------------------------------------------------------- the real cluster

class Cluster:
    def __init__(self, url: str, abort_log: Path, mcp_tag: str, otlp: Any = None) -> None:
        self.url = url
        self.abort_log = abort_log
        self.mcp_tag = mcp_tag
        self.otlp = otlp          # tests.ops.otlp_receiver.OtlpReceiver every replica exports to
        self.config: dict[str, Any] = {}   # the deploy config, so a test can add an app beside it

    def aborted(self) -> list[str]:
        return self.abort_log.read_text().split() if self.abort_log.exists() else []


def wait_healthy(url: str, timeout_s: float) -> bool:
    """Poll `url`/healthz until it answers 200; False after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


def cluster_config(port: int, abort_log: Path, mcp_tag: str, otel_endpoint: str | None = None) -> dict[str, Any]:
    """serve_config.yaml as shipped, with the fake engine and the stub index
    (and, when given, every process exporting spans to `otel_endpoint`)."""
    config = copy.deepcopy(yaml.safe_load((REPO / "serve_config.yaml").read_text()))
    config["http_options"]["port"] = port
    app = config["applications"][0]
    app["args"] = dict(app["args"], engine="fake", mcp_command=stub_command(mcp_tag), mcp_pool_size=1,
                       engine_options={"abort_log": str(abort_log)}, retry_backoff_s=0.01)
    if otel_endpoint:
        app["args"]["otel_endpoint"] = otel_endpoint
    return config


@pytest.fixture(scope="session")
def serve_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")   # a loaded 2-core box starts slowly
    # Workers started by this cluster must import serve_app/deployments from the checkout.
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    # Replicas export their spans every 200 ms instead of every 5 s, so a trace
    # test does not wait on the batch timer (workers inherit this environment).
    os.environ.setdefault("OTEL_BSP_SCHEDULE_DELAY", "200")
    import ray
    from ray import serve
    from ray.serve._private import api as serve_api
    from ray.serve.schema import ServeDeploySchema

    tmp = tmp_path_factory.mktemp("ray")
    # Ray's socket paths must stay under 107 bytes: a short dir under /tmp.
    ray_tmp = Path(f"/tmp/askdocs-ray-{uuid.uuid4().hex[:8]}")
    port = free_port()
    abort_log = tmp / "aborts.log"
    tag = f"askdocs-test-{uuid.uuid4().hex[:8]}"
    # A stand-in OTLP/HTTP collector (a thread here): spans of every replica
    # arrive in it, so a test can check one answer's trace across processes.
    from tests.ops.otlp_receiver import OtlpReceiver

    otlp = OtlpReceiver().__enter__()
    raw_config = cluster_config(port, abort_log, tag, otlp.endpoint)
    config = ServeDeploySchema.model_validate(raw_config)
    for attempt in range(3):    # Ray gives the raylet a fixed 30 s to register: a loaded box can miss it
        try:
            ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(ray_tmp), log_to_driver=False,
                     namespace="serve", configure_logging=False)
            break
        except Exception as e:  # noqa: BLE001 - only Ray's start timeout is retried
            ray.shutdown()
            if attempt == 2 or "timed out during startup" not in str(e):
                raise
    try:
        client = serve_api.serve_start(http_options={"host": "127.0.0.1", "port": port},
                                       proxy_location=config.proxy_location)
        client.deploy_apps(config, _blocking=False)
        url = f"http://127.0.0.1:{port}"
        if not wait_healthy(url, 180):      # deploy + replica start; slow on a loaded box
            raise RuntimeError(f"askdocs did not become healthy: {serve.status()}")
        cluster = Cluster(url, abort_log, tag, otlp)
        cluster.config = raw_config
        yield cluster
    finally:
        serve.shutdown()
        ray.shutdown()
        otlp.__exit__(None, None, None)    # after the replicas, which flush to it at shutdown
        if not os.environ.get("ASKDOCS_TEST_KEEP_RAY_TMP"):     # set it to read the replicas' logs after a run
            shutil.rmtree(ray_tmp, ignore_errors=True)


def index_of(root: Path, docs: dict[str, str], **ingest_options: Any) -> Path:
    """`docs` (name → Markdown) written under `root` and ingested as collection "docs" into root/tiny.db."""
    from docindex.ingest import ingest

    for name, text in docs.items():
        (root / name).write_text(text)
    db = root / "tiny.db"
    ingest([root], db, "docs", **ingest_options)
    return db

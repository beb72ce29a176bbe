"""serve_config.yaml validated strictly offline; the askdocs CLI."""
from __future__ import annotations

import copy
import threading
import time
from pathlib import Path

import pytest
import uvicorn
import yaml
from click.testing import CliRunner

from serve_app.cli import main
from serve_app.config_check import check_file, problems
from serve_app.ingress import create_app
from tests.serve.conftest import REPO, fake_settings, free_port

CONFIG = REPO / "serve_config.yaml"


def shipped() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def test_shipped_config_is_sound() -> None:
    assert check_file(CONFIG) == []


@pytest.mark.parametrize("name", ["serve_config.yaml", "serve_config.gpu.yaml", "serve_config.rocm.yaml"])
def test_every_shipped_config_caps_the_router_backoff(name: str) -> None:
    """Without it a freed Generator slot idles ~250 ms on average (Serve's router
    re-polls a full replica with backoff up to 0.5 s): 65 % vs 93 % of the slot
    limit in benchmarks/serve_overhead.py."""
    app = yaml.safe_load((REPO / name).read_text())["applications"][0]
    assert float(app["runtime_env"]["env_vars"]["RAY_SERVE_ROUTER_RETRY_MAX_BACKOFF_S"]) <= 0.05


@pytest.mark.parametrize("path, key", [
    ((), "proxy_locaton"),
    (("http_options",), "prot"),
    (("applications", 0), "route_prefx"),
    (("applications", 0, "deployments", 3), "max_queued_request"),
    (("applications", 0, "deployments", 1, "autoscaling_config"), "target_ongoing_request"),
    (("applications", 0, "deployments", 1, "ray_actor_options"), "num_cpu"),
    (("applications", 0, "deployments", 0, "backpressure_config"), "retry_after"),
])
def test_every_misspelled_key_is_reported(path: tuple, key: str) -> None:
    data = shipped()
    node = data
    for step in path:
        node = node[step]
    node[key] = 1
    found = problems(data)
    assert len(found) == 1 and key in found[0]


def test_policy_violations_are_reported() -> None:
    data = shipped()
    deployments = data["applications"][0]["deployments"]
    deployments[3]["max_ongoing_requests"] = 4                       # Generator vs engine_slots 1
    deployments[2]["ray_actor_options"]["num_cpus"] = 1              # Gate
    del deployments[4]["backpressure_config"]                         # CitationChecker
    deployments[1]["autoscaling_config"]["min_replicas"] = 5          # > max_replicas
    data["applications"][0]["args"]["gate_min_cosin"] = 0.2
    text = "\n".join(problems(copy.deepcopy(data)))
    assert "Gate.ray_actor_options.num_cpus" in text and "CitationChecker: backpressure_config missing" in text
    assert "Retriever.autoscaling_config" in text and "gate_min_cosin" in text


def test_slot_mismatch_is_reported() -> None:
    data = shipped()
    data["applications"][0]["deployments"][3]["max_ongoing_requests"] = 2
    assert any("slot matching" in p for p in problems(data))


def test_check_config_command(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    data = shipped()
    data["applications"][0]["deployments"][0]["max_ongoing_request"] = 3
    bad.write_text(yaml.safe_dump(data))
    runner = CliRunner()
    assert runner.invoke(main, ["check-config", str(CONFIG)]).exit_code == 0
    result = runner.invoke(main, ["check-config", str(bad)])
    assert result.exit_code == 1 and "max_ongoing_request" in result.output


@pytest.fixture(scope="module")
def local_server() -> str:
    """The ingress under plain uvicorn over a local pipeline (fake engine, stub index)."""
    import asyncio

    from serve_app.local import build_local_pipeline

    port = free_port()
    loop = asyncio.new_event_loop()
    pipeline = loop.run_until_complete(build_local_pipeline(fake_settings()))
    server = uvicorn.Server(uvicorn.Config(create_app(pipeline, fake_settings()), host="127.0.0.1", port=port,
                                           log_level="warning", loop="asyncio"))
    thread = threading.Thread(target=loop.run_until_complete, args=(server.serve(),), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
    loop.run_until_complete(pipeline.close())
    loop.close()        # unclosed, it and its self-pipe's two sockets were collected in a later test, printed as warnings


def test_ask_command_prints_the_streamed_answer_and_cited_sources(local_server: str) -> None:
    result = CliRunner().invoke(main, ["ask", "What does the proxy answer when the queue is full?",
                                       "--url", local_server])
    assert result.exit_code == 0, result.output
    assert "proxy answers 503" in result.output and "[1] serve.md#backpressure" in result.output


def test_ask_command_reports_errors(local_server: str) -> None:
    result = CliRunner().invoke(main, ["ask", "x [[fake:error]] proxy queue", "--url", local_server])
    assert result.exit_code == 1 and "generation failed" in result.output


def test_foreign_dotenv_keys_are_ignored_but_unknown_args_are_errors(tmp_path: Path, monkeypatch) -> None:
    from deployments.errors import ConfigError
    from serve_app.app import load_settings
    from serve_app.settings import Settings

    (tmp_path / ".env").write_text("OTHER_TOOL_TOKEN=x\nASKDOCS_GATE_MIN_COSINE=0.42\n")
    monkeypatch.chdir(tmp_path)
    assert Settings().gate_min_cosine == 0.42
    assert load_settings({"max_tokens": 64}).max_tokens == 64
    with pytest.raises(ConfigError, match="max_token"):
        load_settings({"max_token": 64})

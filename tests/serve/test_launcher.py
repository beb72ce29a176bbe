"""The one graph launcher: the config renderer (pure) and one real lifecycle
(`askdocs launch` → healthy → SIGTERM → no process left behind)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from serve_app.cli import main
from serve_app.config_check import problems
from serve_app.launcher import LaunchError, parse_set, port_is_free, probe, render, settings_fields
from tests.ports import free_port
from tests.serve.conftest import REPO, pids_with, stub_command

SHIPPED = REPO / "serve_config.yaml"


def shipped() -> dict:
    return yaml.safe_load(SHIPPED.read_text())


def app_args(config: dict) -> dict:
    return config["applications"][0]["args"]


def test_render_changes_only_port_host_and_the_args_given():
    source = shipped()
    out = render(source, host="0.0.0.0", port=8431, db="/abs/eval.db", overrides={"default_k": 1}, env={},
                 known_args=settings_fields())
    assert out["http_options"] == {**source["http_options"], "host": "0.0.0.0", "port": 8431}
    assert app_args(out) == {**app_args(source), "db": "/abs/eval.db", "default_k": 1}
    # everything else, deployments included, is the shipped file as is; the source is untouched
    strip = lambda c: {**c, "http_options": None, "applications": [{**c["applications"][0], "args": None}]}  # noqa: E731
    assert strip(out) == strip(source) and source == shipped()
    assert problems(out) == []


def test_precedence_set_beats_askdocs_env_beats_yaml():
    """The one rule: explicit overrides > ASKDOCS_* variables > YAML args > Settings defaults."""
    env = {"ASKDOCS_ENGINE": "openai", "ASKDOCS_MAX_TOKENS": "64", "ASKDOCS_DB": "var/x.db", "PATH": "/bin"}
    out = app_args(render(shipped(), overrides={"max_tokens": 32}, env=env))
    assert "engine" not in out               # the variable reaches Settings (YAML args would beat it)
    assert "db" not in out
    assert out["max_tokens"] == 32           # an explicit override beats the variable
    assert out["mcp_pool_size"] == app_args(shipped())["mcp_pool_size"]   # no variable: the YAML stays
    assert app_args(render(shipped(), db="/d.db", env=env))["db"] == "/d.db"


def test_the_rendered_precedence_is_what_settings_sees(monkeypatch):
    from serve_app.app import load_settings
    monkeypatch.setenv("ASKDOCS_ENGINE", "fake")
    monkeypatch.setenv("ASKDOCS_MAX_TOKENS", "64")
    settings = load_settings(app_args(render(shipped(), overrides={"max_tokens": 32}, env=os.environ)))
    assert settings.engine == "fake" and settings.max_tokens == 32
    assert settings.prompt_max_sources == app_args(shipped())["prompt_max_sources"]


def test_bad_overrides_are_one_readable_error():
    with pytest.raises(LaunchError, match="unknown askdocs setting"):
        render(shipped(), overrides={"gate_min_cosin": 0.4}, known_args=settings_fields())
    with pytest.raises(LaunchError, match="KEY=VALUE"):
        parse_set(["default_k"])
    with pytest.raises(LaunchError, match="no application"):
        render({"applications": [{"import_path": "other:app"}]})
    assert parse_set(["default_k=1", "engine=extractive", 'engine_options={"a": 1}', "model="]) == {
        "default_k": 1, "engine": "extractive", "engine_options": {"a": 1}, "model": ""}


def test_render_config_cli_writes_the_rendered_file(tmp_path, monkeypatch):
    monkeypatch.delenv("ASKDOCS_DB", raising=False)
    out = tmp_path / "serve.yaml"
    result = CliRunner().invoke(main, ["render-config", str(SHIPPED), "--port", "9001", "--db", "var/e.db",
                                       "--set", "gate_min_cosine=0.9", "-o", str(out)])
    assert result.exit_code == 0, result.output
    config = yaml.safe_load(out.read_text())
    assert config["http_options"]["port"] == 9001
    assert app_args(config)["db"] == str((Path.cwd() / "var/e.db").resolve())
    assert app_args(config)["gate_min_cosine"] == 0.9
    bad = CliRunner().invoke(main, ["render-config", str(SHIPPED), "--set", "nope=1"])
    assert bad.exit_code == 1 and "unknown askdocs setting(s) nope" in bad.output


def _alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def _descendants(pid: int) -> list[int]:
    import psutil
    return [p.pid for p in psutil.Process(pid).children(recursive=True)]


@pytest.mark.cluster
def test_launch_serves_until_sigterm_and_leaves_no_process_behind(tmp_path):
    """A whole lifecycle on the fake engine and the stub index: healthy, then SIGTERM
    stops `serve run`, the Ray head and everything they started."""
    port, tag = free_port(), f"launcher-{os.getpid()}"
    config = tmp_path / "serve.yaml"
    source = yaml.safe_load((REPO / "loadtest" / "serve_config.fake.yaml").read_text())
    app_args(source).update(mcp_command=stub_command(tag), mcp_pool_size=1)
    config.write_text(yaml.safe_dump(source))
    run_dir = tmp_path / "run"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "serve_app.cli", "launch", str(config), "--port", str(port), "--run-dir",
         str(run_dir), "--logs", "--start-timeout", "240"],
        cwd=REPO, stderr=subprocess.PIPE, text=True)
    try:
        line = launcher.stderr.readline()                 # "launch: askdocs up on …" once healthy
        assert line.startswith("launch: askdocs up on"), line + (run_dir / "serve.log").read_text(errors="replace")
        health = probe(f"http://127.0.0.1:{port}/healthz")
        assert health is not None and health["status"] == "ok" and health["engine"] == "fake"
        started = _descendants(launcher.pid)
        assert pids_with(tag) and len(started) >= 4      # head, serve run, Ray's daemons and workers, the stub
        launcher.send_signal(signal.SIGTERM)
        assert launcher.wait(120) == 0                   # serving until stopped: a clean end (cli.interrupted_status)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait(30)
        launcher.stderr.close()
    deadline = time.monotonic() + 10                      # reaped children may linger as zombies briefly
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _alive(started) == [] and _alive(pids_with(tag)) == []
    assert probe(f"http://127.0.0.1:{port}/healthz", 2) is None


def test_a_port_is_in_use_while_something_listens_not_while_closed_connections_linger():
    """`make eval` starts a graph per entry on one port: the connections the last one closed
    (TIME_WAIT on the server side) must not make the next start fail as "already in use"."""
    port = free_port()
    listener = socket.create_server(("127.0.0.1", port))
    client = socket.create_connection(("127.0.0.1", port))
    served, _ = listener.accept()
    assert not port_is_free("127.0.0.1", port)
    served.close()                   # the server closes first: its side waits in TIME_WAIT
    client.close()
    listener.close()
    assert port_is_free("127.0.0.1", port)

"""serve_config.yaml from a fresh clone: a relative `db` means the checkout's file
(never the Ray worker's working directory, i.e. where `ray start` ran; only an
installed package with no checkout uses its working directory), and an
ASKDOCS_* variable that a YAML arg beats under a plain `serve run` is logged
as overridden."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
import yaml

from serve_app import settings as settings_module
from serve_app.app import load_settings
from serve_app.launcher import render
from serve_app.settings import Settings, overridden_variables, resolve_db

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def records() -> list[logging.LogRecord]:
    """Records of askdocs.settings (the askdocs logger may not propagate: Serve's logging)."""
    caught: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            caught.append(record)

    logger = logging.getLogger("askdocs.settings")
    handler = Keep(logging.DEBUG)
    logger.addHandler(handler)
    yield caught
    logger.removeHandler(handler)


def test_a_relative_db_is_the_checkouts_file_wherever_the_process_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("ASKDOCS_DB", raising=False)
    monkeypatch.chdir(tmp_path)                      # e.g. where `ray start` ran
    assert Settings(_env_file=None, db="var/my.db").db == str(REPO / "var" / "my.db")
    assert Settings(_env_file=None, db="/srv/index.db").db == "/srv/index.db"


def test_the_shipped_config_serves_what_make_index_builds(monkeypatch):
    monkeypatch.delenv("ASKDOCS_DB", raising=False)
    config = yaml.safe_load((REPO / "serve_config.yaml").read_text())
    db = config["applications"][0]["args"]["db"]
    assert "make index" in (REPO / "serve_config.yaml").read_text().splitlines()[1]
    assert "DB=var/demo.db" in (REPO / "scripts" / "build_demo_index.sh").read_text()   # what `make index` writes
    assert load_settings(config["applications"][0]["args"]).db == str(REPO / "var" / "demo.db") == str(REPO / db)


def test_installed_as_a_package_a_relative_db_is_the_working_directorys(tmp_path, monkeypatch):
    """The image: no checkout; its Ray processes start in WORKDIR /app (k8s/rayservice.yaml relies on it)."""
    monkeypatch.delenv("ASKDOCS_DB", raising=False)
    assert resolve_db("/abs/x.db", None) == "/abs/x.db"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(settings_module, "project_dir", lambda: None)
    assert load_settings({"db": "var/askdocs.db"}).db == str(tmp_path / "var" / "askdocs.db")


def test_a_custom_mcp_command_leaves_db_alone():
    assert Settings(_env_file=None, db="rel.db", mcp_command=["crag-mcp"]).db == "rel.db"


def test_a_variable_the_yaml_beats_is_logged_as_overridden(monkeypatch, records):
    monkeypatch.setenv("ASKDOCS_DB", "/srv/mine.db")
    monkeypatch.setenv("ASKDOCS_MAX_TOKENS", "64")
    settings = load_settings({"db": "/srv/yaml.db", "engine": "fake"})
    assert settings.db == "/srv/yaml.db" and settings.max_tokens == 64      # serve run: the YAML arg wins
    lines = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len(lines) == 1 and lines[0].startswith("ASKDOCS_DB is overridden by the YAML arg 'db'")
    assert "/srv/mine.db" not in lines[0]                                   # values are not logged


def test_the_launchers_rendering_leaves_nothing_overridden(monkeypatch, records):
    """Consistent with serve_app/launcher.py: there the variable wins, so nothing is overridden."""
    monkeypatch.setenv("ASKDOCS_DB", "/srv/mine.db")
    config = render(yaml.safe_load((REPO / "serve_config.yaml").read_text()), env=os.environ)
    assert load_settings(config["applications"][0]["args"]).db == "/srv/mine.db"
    assert not [r for r in records if "overridden" in r.getMessage()]


def test_override_lines_name_variables_case_insensitively_and_only_askdocs_ones():
    env = {"askdocs_engine": "x", "ASKDOCS_URL": "y", "PATH": "/bin", "DB": "z"}
    assert overridden_variables({"engine": "fake", "db": "/a.db"}, env) == [
        "askdocs_engine is overridden by the YAML arg 'engine' (under `serve run` YAML args beat ASKDOCS_* "
        "variables; drop the arg, or start with `askdocs launch`, where the variable wins)"]

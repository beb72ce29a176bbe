"""ASKDOCS_* variables: a name that is no setting stops the server with a clear
error (a misspelled limit must not silently keep its default); the client
CLI's and tools' own variables stay allowed."""
from __future__ import annotations

import pytest
from pydantic import ValidationError

from deployments.errors import ConfigError
from serve_app.app import load_settings
from serve_app.settings import Settings, unknown_variables


def test_a_misspelled_setting_variable_is_rejected_with_a_suggestion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKDOCS_GATE_MIN_COSIN", "0.4")
    with pytest.raises(ValidationError, match=r"ASKDOCS_GATE_MIN_COSIN \(did you mean ASKDOCS_GATE_MIN_COSINE\?\)"):
        Settings(_env_file=None)


def test_serve_start_up_reports_it_as_one_config_error_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKDOCS_NO_SUCH_KNOB", "1")
    with pytest.raises(ConfigError) as caught:
        load_settings({})
    message = str(caught.value)
    assert "unknown setting variable ASKDOCS_NO_SUCH_KNOB" in message and "\n" not in message


def test_known_settings_and_the_clients_variables_are_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKDOCS_GATE_MIN_COSINE", "0.4")
    monkeypatch.setenv("ASKDOCS_URL", "http://127.0.0.1:8000")      # the client CLI's
    monkeypatch.setenv("ASKDOCS_API_KEY", "client-token")            # the client CLI's (server: API_KEYS)
    monkeypatch.setenv("ASKDOCS_LOADTEST_TIMEOUT_S", "30")           # the load test's
    assert Settings(_env_file=None).gate_min_cosine == 0.4


def test_only_the_askdocs_prefix_is_checked() -> None:
    fields = set(Settings.model_fields)
    assert unknown_variables({"PATH": "/bin", "OTHER_GATE": "1", "askdocs_db": "x.db"}, fields) == []
    assert unknown_variables({"ASKDOCS_MAX_TOKEN": "9"}, fields) == [
        "unknown setting variable ASKDOCS_MAX_TOKEN (did you mean ASKDOCS_MAX_TOKENS?)"]

"""Errors are mapped to HTTP once (serve_app/errors.py), from each error's own
`stage` and `status` (deployments/errors.py)."""
from __future__ import annotations

import json

import pytest

from deployments import errors
from deployments.errors import AskdocsError, Busy, EngineTimeout, McpUnavailable, UnknownCollection
from serve_app.errors import response_for, status_for_stage


def _all_errors() -> list[type[AskdocsError]]:
    return [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, AskdocsError)]


def test_every_error_class_carries_a_stage_and_an_http_status() -> None:
    for cls in _all_errors():
        assert cls.stage and 400 <= cls.status < 600, cls


@pytest.mark.parametrize(("error", "status", "stage"), [
    (UnknownCollection("unknown collection 'x'"), 422, "request"),
    (McpUnavailable("the index server is down"), 502, "retrieval"),
    (EngineTimeout("no output within 30 s"), 502, "generation"),
    (AskdocsError("something"), 500, "internal"),
])
def test_response_for_reads_the_errors_status_and_stage(error: AskdocsError, status: int, stage: str) -> None:
    response = response_for(error, retry_after_s=3)
    assert response.status_code == status
    assert json.loads(response.body) == {"success": False, "data": None,
                                         "error": {"stage": stage, "message": str(error)}}


def test_busy_is_a_503_with_its_own_retry_after_or_the_default() -> None:
    assert response_for(Busy(retry_after_s=7.4), retry_after_s=3).headers["retry-after"] == "7"
    default = response_for(Busy(), retry_after_s=3)
    assert default.status_code == 503 and default.headers["retry-after"] == "3"
    assert json.loads(default.body)["error"]["stage"] == "capacity"


@pytest.mark.parametrize(("stage", "status"), [("retrieval", 502), ("generation", 502), ("internal", 500),
                                               ("unheard-of", 500)])
def test_an_error_events_stage_gives_the_json_mode_status(stage: str, status: int) -> None:
    assert status_for_stage(stage) == status

"""`make run` itself, end to end (issue 15 item 7): scripts/run.sh, the exact
command the Makefile's `run` target runs after `install`, with the shipped
serve_config.yaml (the extractive engine, the real `docindex serve-mcp`), on a
free port and over an index of README.md (a user's index: the demo index in
var/ is neither built nor touched). Healthy, one cited answer, Ctrl-C (SIGINT
to its process group, as a terminal sends it), exit 0, no process left."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import httpx
import psutil
import pytest

from tests.ports import free_port

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.cluster


def test_make_run_target_is_scripts_run_sh() -> None:
    target = re.search(r"^run: install\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert target is not None and target.group(1) == "\tbash scripts/run.sh\n"


def _alive(pids: list[int]) -> list[int]:
    return [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]


RAY_START_TIMEOUT = "The current node timed out during startup"
START_ATTEMPTS = 3


def _start_make_run(tmp_path: Path, db: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """scripts/run.sh until its banner says it is up. Ray gives its raylet a fixed 30 s to
    register (this version reads no setting for it); a loaded 2-core box can miss that,
    so a start that failed for that reason alone is tried again, as tests/serve/conftest.py does."""
    for attempt in range(1, START_ATTEMPTS + 1):
        port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDOCS_")} | {
            "ASKDOCS_DB": str(db), "ASKDOCS_PORT": str(port), "ASKDOCS_RUN_DIR": str(tmp_path / f"run{attempt}")}
        log = tmp_path / f"make-run-{attempt}.log"
        with log.open("w") as out:
            run = subprocess.Popen(["bash", "scripts/run.sh"], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)  # its own group, as in a terminal
        deadline = time.monotonic() + 300
        while "askdocs is up on" not in log.read_text():                 # the banner: printed once healthy
            if run.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        else:
            return run, f"http://127.0.0.1:{port}", log
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
        if attempt == START_ATTEMPTS or RAY_START_TIMEOUT not in log.read_text():
            raise AssertionError(log.read_text()[-3000:])
    raise AssertionError("unreachable")


def test_make_run_answers_with_a_citation_and_ctrl_c_leaves_nothing(tmp_path: Path) -> None:
    from docindex.ingest import ingest

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_bytes((REPO / "README.md").read_bytes())
    db = tmp_path / "readme.db"
    ingest([docs], db, "readme")
    run, url, log = _start_make_run(tmp_path, db)
    started: list[int] = []
    try:
        assert httpx.get(f"{url}/healthz", timeout=30).json()["status"] == "ok"
        started = [p.pid for p in psutil.Process(run.pid).children(recursive=True)]
        response = httpx.post(f"{url}/ask?stream=false", json={"question": "How do I run askdocs on a GPU?"},
                              timeout=120)
        assert response.status_code == 200, response.text
        data = response.json()["data"]
        assert data["refused"] is False and data["citations"] and data["invalid_citations"] == [], data
        assert {data["sources"][n - 1]["source"] for n in data["citations"]} == {"README.md"}, data
        os.killpg(run.pid, signal.SIGINT)                                # Ctrl-C
        assert run.wait(180) == 0, log.read_text()[-3000:]
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait(30)
    deadline = time.monotonic() + 30                                     # reaped children may linger briefly
    while _alive(started) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _alive(started) == [], [psutil.Process(p).cmdline() for p in _alive(started)]
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/healthz", timeout=2)
    text = log.read_text()
    assert "launch: stopped" in text and "Traceback" not in text and "make: ***" not in text, text[-3000:]
    assert "graceful_shutdown failed" not in text, text[-3000:]         # Ray's stop noise (serve_app/ray_quiet.py)


def test_only_rays_shutdown_noise_is_dropped(capsys: pytest.CaptureFixture[str]) -> None:
    from ray._private import worker

    from serve_app import ray_quiet

    ray_quiet.install()                                                  # idempotent: imported once already
    noise = ("Task ServeController.graceful_shutdown failed. There are infinite retries remaining, so the task "
             "will be retried. Error: The actor is dead because it was killed by `ray.kill`.")
    other = "Task Generator.stream failed. There are 3 retries remaining, so the task will be retried. Error: boom"
    worker.print_to_stdstream({"lines": [noise], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    worker.print_to_stdstream({"lines": [noise, other], "pid": "raylet", "is_err": False}, ignore_prefix=False)
    out = capsys.readouterr().out
    assert "graceful_shutdown" not in out and out.count("Generator.stream failed") == 1

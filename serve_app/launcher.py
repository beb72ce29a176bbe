"""The one graph launcher: a private local Ray head, `serve run` of a rendered
Serve config, one wait for /healthz, and a stop that leaves no process behind.

    askdocs render-config serve_config.yaml --port 8431 --db var/eval.db --set engine=extractive
    askdocs launch serve_config.yaml --db var/demo.db                 # foreground; Ctrl-C stops all
    askdocs launch loadtest/serve_config.fake.yaml --db X -- bash loadtest/run.sh   # graph around a command

Used by `make run` (scripts/run.sh), the live eval (evals/live.py,
evals/serve_eval.sh), the load test (loadtest/with_graph.sh) and the image.

**Rendering** (`render`, pure) copies a Serve config and changes only paths,
ports and askdocs' `args`. Precedence of an askdocs setting, highest first
(the one rule; tests/serve/test_launcher.py):

1. an explicit override (`--set KEY=VALUE`, `--db`);
2. an `ASKDOCS_KEY` variable in the launcher's environment: the YAML arg it
   names is dropped from the rendered copy, because Serve passes `args` to
   Settings as init arguments, which beat the environment (the replicas
   inherit the launcher's environment through the Ray head it starts);
3. the YAML file's `args`;
4. the Settings defaults (serve_app/settings.py).

**Lifecycle** (`Graph`): the port must be free; Ray and `serve run` start in
their own sessions (a terminal's Ctrl-C reaches only the launcher, which then
stops them in order: `serve run` by SIGINT (SIGTERM if that is not enough; see
STOP_SIGNALS), then the Ray head, which shuts its cluster down);
whatever any of them started and is still alive after that is
killed. Health: GET /healthz every `POLL_INTERVAL_S` until a 200, failing as
soon as `serve run` or the head exits, or at the start deadline.
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

ASKDOCS_IMPORT_PATH = "serve_app.app:build_app"
ENV_PREFIX = "ASKDOCS_"
POLL_INTERVAL_S = 1.0           # /healthz probe period while starting
PROBE_TIMEOUT_S = 5.0           # one probe; /healthz itself waits up to 5 s for the graph's info
START_TIMEOUT_S = 300.0         # Ray + replicas + MCP servers + model load, on a loaded 2-core box
STOP_TIMEOUT_S = 40.0           # per process; the Generator drains for up to 30 s (serve_config.yaml)
# Each process is stopped with SIGINT first, SIGTERM only if it is still running
# after STOP_TIMEOUT_S: `serve run` shuts the app down on KeyboardInterrupt, the
# head (ray_head) stops on either, and Ray's C++ core worker in both prints a
# stack dump to the terminal on SIGTERM (its failure-signal handler), never on SIGINT.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
# `serve run`, with SIGINT raising KeyboardInterrupt even when this process was
# started with it ignored (a background job), since children inherit SIG_IGN, and
# without the one "graceful_shutdown failed" line Ray prints on every clean stop
# (serve_app/ray_quiet.py says why it is noise and how exactly it is dropped).
SERVE_RUN = ("import signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "import serve_app.ray_quiet; from ray.serve.scripts import cli; cli()")


class LaunchError(RuntimeError):
    """The config cannot be rendered or the graph did not start; one readable line."""


# ------------------------------------------------------------------ rendering

def parse_set(items: Sequence[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings → {key: YAML-parsed value} (`default_k=1` → 1, `engine_options={"a": 1}` → dict)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise LaunchError(f"--set {item!r}: expected KEY=VALUE")
        try:
            out[key.strip()] = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError as e:
            raise LaunchError(f"--set {item!r}: value is not YAML ({e.__class__.__name__})") from None
    return out


def askdocs_app(config: dict[str, Any]) -> dict[str, Any]:
    app: dict[str, Any]
    for app in config.get("applications") or []:
        if app.get("import_path") == ASKDOCS_IMPORT_PATH:
            return app
    raise LaunchError(f"no application with import_path {ASKDOCS_IMPORT_PATH} in the config")


def render(config: dict[str, Any], *, host: str | None = None, port: int | None = None, db: str | None = None,
           overrides: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None,
           known_args: Sequence[str] | None = None) -> dict[str, Any]:
    """A copy of `config` with the HTTP host/port and askdocs' args changed (precedence above).
    `known_args`: the Settings field names (unknown override keys are errors)."""
    rendered = copy.deepcopy(config)
    explicit = dict(overrides or {})
    if db is not None:
        explicit["db"] = db
    if known_args is not None:
        unknown = sorted(set(explicit) - set(known_args))
        if unknown:
            raise LaunchError(f"unknown askdocs setting(s) {', '.join(unknown)}")
    http = rendered.setdefault("http_options", {})
    if host is not None:
        http["host"] = host
    if port is not None:
        http["port"] = int(port)
    args = askdocs_app(rendered).setdefault("args", {})
    named = {k[len(ENV_PREFIX):].lower() for k in (env or {}) if k.upper().startswith(ENV_PREFIX)}
    for key in [k for k in args if k.lower() in named and k not in explicit]:
        del args[key]
    args.update(explicit)
    return rendered


def settings_fields() -> list[str]:
    from serve_app.settings import Settings
    return list(Settings.model_fields)


def render_file(source: Path, **kwargs: Any) -> dict[str, Any]:
    try:
        config = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise LaunchError(f"cannot read {source}: {e}") from None
    if not isinstance(config, dict):
        raise LaunchError(f"{source} is not a Serve config (a YAML mapping)")
    return render(config, known_args=settings_fields(), **kwargs)


def dump(config: dict[str, Any], source: Path | str) -> str:
    return (f"# generated by the askdocs launcher from {source}; edit that file instead\n"
            + cast(str, yaml.safe_dump(config, sort_keys=False)))     # yaml is untyped here


def http_address(config: dict[str, Any]) -> tuple[str, int]:
    http = config.get("http_options") or {}
    host = http.get("host", "127.0.0.1")
    return ("127.0.0.1" if host in ("0.0.0.0", "::", "") else host), int(http.get("port", 8000))


# ------------------------------------------------------------------ lifecycle

def port_is_free(host: str, port: int) -> bool:
    """Nothing listens on host:port. SO_REUSEADDR, as every server sets it: the closed
    connections of a service just stopped (TIME_WAIT, up to 60 s) do not count as a user."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def probe(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, Any] | None:
    """/healthz's JSON on a 200, else None."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            return json.loads(resp.read() or b"{}") if resp.status == 200 else None
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _descendants(pid: int) -> list[Any]:
    import psutil
    try:
        return cast("list[Any]", psutil.Process(pid).children(recursive=True))     # psutil is untyped here
    except psutil.Error:
        return []


@dataclass
class Graph:
    """A graph started from a rendered config; `with Graph(...) as g:` starts it and always stops it."""
    config: dict[str, Any]
    run_dir: Path
    source: str = "serve_config.yaml"
    start_timeout_s: float = START_TIMEOUT_S
    log_to_files: bool = True          # ray.log / serve.log in run_dir; False: the launcher's own stdout/stderr
    num_cpus: int | None = None        # None: Ray counts them (cgroup limits included)
    ray_temp_dir: Path | None = None
    health: dict[str, Any] = field(default_factory=dict)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _seen: dict[int, Any] = field(default_factory=dict)

    @property
    def base_url(self) -> str:
        host, port = http_address(self.config)
        return f"http://{host}:{port}"

    def __enter__(self) -> Graph:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, argv: list[str], log: str) -> subprocess.Popen[bytes]:
        out = open(self.run_dir / log, "ab") if self.log_to_files else None  # noqa: SIM115 - closed at stop
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT if out else None, env=env,
                                start_new_session=True)
        if out is not None:
            out.close()
        self._procs.append(proc)
        return proc

    def _log_tail(self, name: str, lines: int = 30) -> str:
        path = self.run_dir / name
        if not self.log_to_files or not path.is_file():
            return ""
        return "\n" + "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def start(self) -> dict[str, Any]:
        host, port = http_address(self.config)
        if not port_is_free(host, port):
            raise LaunchError(f"{host}:{port} is already in use (another askdocs?); stop it or choose another port")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        config_path = self.run_dir / "serve.yaml"
        config_path.write_text(dump(self.config, self.source), encoding="utf-8")
        address_file = self.run_dir / "ray-address"
        address_file.unlink(missing_ok=True)
        deadline = time.monotonic() + self.start_timeout_s
        temp_dir = self.ray_temp_dir or Path(f"/tmp/askdocs-ray-{port}")   # AF_UNIX paths must stay short
        head = self._spawn([sys.executable, "-m", "serve_app.launcher", "ray-head", str(address_file),
                            str(temp_dir), str(self.num_cpus or 0)], "ray.log")
        while not (address_file.is_file() and address_file.read_text().strip()):
            if head.poll() is not None:
                raise LaunchError("the local Ray head exited while starting" + self._log_tail("ray.log"))
            if time.monotonic() > deadline:
                raise LaunchError(f"Ray did not start within {self.start_timeout_s:.0f} s")
            time.sleep(0.2)
        serve = self._spawn([sys.executable, "-c", SERVE_RUN, "run",
                             "--address", address_file.read_text().strip(), str(config_path)], "serve.log")
        url = f"{self.base_url}/healthz"
        while (health := probe(url)) is None:
            for proc, log in ((serve, "serve.log"), (head, "ray.log")):
                if proc.poll() is not None:
                    raise LaunchError(f"{'serve run' if proc is serve else 'the Ray head'} exited "
                                      f"(status {proc.returncode}) before {url} answered 200" + self._log_tail(log))
            if time.monotonic() > deadline:
                raise LaunchError(f"{url} not healthy after {self.start_timeout_s:.0f} s" + self._log_tail("serve.log"))
            self._remember()
            time.sleep(POLL_INTERVAL_S)
        self._remember()
        self.health = health
        return health

    def _remember(self) -> None:
        for proc in self._procs:
            for child in _descendants(proc.pid):
                self._seen[child.pid] = child

    def wait(self) -> int:
        """Block until `serve run` exits; its status."""
        return self._procs[1].wait() if len(self._procs) > 1 else 1

    def stop(self) -> None:
        """Stop `serve run`, then the Ray head (SIGINT, then SIGTERM; each waited for); then kill anything they started
        that lives on. A second Ctrl-C or SIGTERM meanwhile is held off (it must not cut this short)."""
        self._remember()
        held = {}
        if threading.current_thread() is threading.main_thread():
            held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for proc in reversed(self._procs):
                _terminate(proc)
            import psutil
            for child in self._seen.values():
                with contextlib.suppress(psutil.Error):
                    if child.is_running():
                        child.kill()
            psutil.wait_procs(list(self._seen.values()), timeout=5.0)   # killed: their ports are free after
            self._procs.clear()
            self._seen.clear()
        finally:
            for sig, previous in held.items():
                signal.signal(sig, previous)


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    for sig in STOP_SIGNALS:                     # SIGINT, then SIGTERM (see STOP_SIGNALS)
        if proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(STOP_TIMEOUT_S)
            return
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)      # its own session: the group is its pid
    proc.wait()


# ------------------------------------------------------------------ signals and the Ray head

@contextlib.contextmanager
def signals_raise() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt inside the block, so `finally` stops the graph
    (SIGINT explicitly too: a shell starting us in the background leaves it ignored)."""
    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)
    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def ray_head(address_file: Path, temp_dir: Path, num_cpus: int) -> None:  # num_cpus 0: Ray counts
    """A NEW local Ray cluster (never joins a running one), no dashboard (~2.7 GB and ~20 s here);
    its GCS address goes to `address_file`; SIGTERM/SIGINT shut it down (every Ray process it started)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # Ray annotates logging_level as int but takes a level name too; ray.init returns a RayContext
    # (address_info) though it is annotated as BaseContext.
    context = ray.init(address="local", num_cpus=num_cpus or None, include_dashboard=False,
                       _temp_dir=str(temp_dir.resolve()), logging_level="WARNING")  # type: ignore[arg-type]
    address_file.parent.mkdir(parents=True, exist_ok=True)
    address_file.write_text(context.address_info["gcs_address"])  # type: ignore[attr-defined]
    try:
        while not stop.wait(1.0):      # a timeout so signals are handled promptly
            pass
    finally:
        address_file.unlink(missing_ok=True)
        ray.shutdown()


if __name__ == "__main__":
    if sys.argv[1:2] == ["ray-head"] and len(sys.argv) == 5:
        ray_head(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit("usage: python -m serve_app.launcher ray-head ADDRESS_FILE TEMP_DIR NUM_CPUS "
                 "(use `askdocs launch` to start a graph)")

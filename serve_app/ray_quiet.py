"""Keep the one line Ray prints on every clean `serve run` stop off the terminal.

On Ctrl-C, `serve run` calls `serve.shutdown()`, which asks the Serve
controller to `graceful_shutdown`; the controller ends by killing itself
(`ray.kill`). The controller is an actor with infinite task retries, so the
driver's core worker reports its own finished call as a failed task that will
be retried, and the driver's error listener
(`ray._private.worker.listen_error_messages`) prints it as

    (raylet) Task ServeController.graceful_shutdown failed. There are infinite
    retries remaining, so the task will be retried. Error: The actor is dead
    because it was killed by `ray.kill`.

Nothing failed and nothing is retried (the cluster is going away), and Ray
has no setting for it: the listener prints every error published for the
job. `install()` wraps the printer that listener calls so exactly this
message (a `raylet` line with both phrases) is dropped; every other line,
other errors from the raylet included, is printed as before. Imported by the
`serve run` wrapper of serve_app/launcher.py (ray 2.x, module-level
`print_to_stdstream`); if Ray moves that function, nothing is filtered and
the line simply shows again.
"""
from __future__ import annotations

from typing import Any

SHUTDOWN_NOISE = ("Task ServeController.graceful_shutdown failed.", "killed by `ray.kill`")


def is_shutdown_noise(line: str) -> bool:
    return all(part in line for part in SHUTDOWN_NOISE)


def install() -> None:
    try:
        from ray._private import worker
    except ImportError:          # pragma: no cover - Ray moved it: print as Ray does
        return
    original = getattr(worker, "print_to_stdstream", None)
    if original is None or getattr(original, "askdocs_quiet", False):
        return

    def print_to_stdstream(data: dict[str, Any], ignore_prefix: bool) -> None:
        if data.get("pid") == "raylet":
            lines = [line for line in data.get("lines", []) if not is_shutdown_noise(str(line))]
            if not lines:
                return
            data = {**data, "lines": lines}
        original(data, ignore_prefix=ignore_prefix)

    print_to_stdstream.askdocs_quiet = True      # type: ignore[attr-defined]
    worker.print_to_stdstream = print_to_stdstream


install()

"""Why an index server did not start, in one line.

The MCP SDK reports a server that exits at start-up as an `ExceptionGroup`
("unhandled errors in a TaskGroup") around `MCPError: Connection closed`;
the reason the server itself gave ("var/x.db: no such index file …") is on
its stderr. `StderrTail` is the stderr handed to the server: every line is
passed on to ours (the replica log, as before) and the last few are kept, so
`start_failure` can say the server's own last line, or else the leaf errors.
"""
from __future__ import annotations

import os
import sys
import threading
from collections import deque
from typing import TextIO

KEEP_LINES = 20
JOIN_TIMEOUT_S = 2.0        # a dead server's pipe ends at once; a grandchild may hold it open


def leaf_message(e: BaseException) -> str:
    """One line: the leaves of (nested) exception groups as `Type: message`, duplicates once."""
    if isinstance(e, BaseExceptionGroup):
        leaves: list[str] = []
        for sub in e.exceptions:
            for part in leaf_message(sub).split("; "):
                if part not in leaves:
                    leaves.append(part)
        return "; ".join(leaves)
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def start_failure(e: BaseException, server_said: str = "") -> str:
    """The message of a failed start: the server's last stderr line when it left one, else the leaf errors."""
    said = " ".join(server_said.split())
    if said.lower().startswith("error: "):
        said = said[len("error: "):]
    return f"the index server did not start: {said or leaf_message(e)}"


class StderrTail:
    """A pipe to give a child process as its stderr; lines go on to `sink`, the last ones are kept."""

    def __init__(self, sink: TextIO | None = None, keep: int = KEEP_LINES) -> None:
        read_fd, write_fd = os.pipe()
        self.file: TextIO = os.fdopen(write_fd, "w")
        self._sink = sink if sink is not None else sys.stderr
        self._lines: deque[str] = deque(maxlen=keep)
        self._thread = threading.Thread(target=self._pump, args=(read_fd,), name="mcp-server-stderr", daemon=True)
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", errors="replace")
                try:
                    self._sink.write(line)
                    self._sink.flush()
                except (OSError, ValueError):
                    pass            # our stderr is gone: keep draining so the child never blocks
                if line.strip():
                    self._lines.append(line.rstrip())

    def close(self, wait: bool = True) -> None:
        """Close our end; with `wait`, until what the child wrote has been read (bounded).
        The reader thread ends by itself once the child's end closes too."""
        if not self.file.closed:
            self.file.close()
        if wait:
            self._thread.join(JOIN_TIMEOUT_S)

    def last_line(self) -> str:
        return self._lines[-1] if self._lines else ""

"""Helpers for the browser tests: Debian's Chromium driven by playwright, and
an ASGI app served by uvicorn on a free 127.0.0.1 port in a thread."""
from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from typing import Any

from tests.ports import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (scripts/install_browser.sh)"
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        return "Chromium is not installed (scripts/install_browser.sh)"
    return None


@contextlib.contextmanager
def serve_in_thread(app: Any, *, start_timeout_s: float = 120.0) -> Iterator[str]:
    """Runs `app` (lifespan included) under uvicorn; yields its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                          lifespan="on"))
    thread = threading.Thread(target=server.run, name=f"uvicorn-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + start_timeout_s
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the test server failed to start (see the log above)")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the test server did not start within {start_timeout_s} s")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def ask_by_keyboard(page: Any, question: str) -> None:
    """From a freshly loaded page: Tab past the skip link into the question,
    type it and submit with Ctrl+Enter, without the mouse."""
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")
    focused = page.evaluate("document.activeElement.id")
    if focused != "question":
        raise AssertionError(f"the second Tab focused {focused!r}, not the question")
    page.keyboard.type(question)
    page.keyboard.press("Control+Enter")

"""Fixtures for the browser tests: one headless Chromium for this package, and a
fresh browser context (own session storage) per page."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser import CHROMIUM, CHROMIUM_ARGS, browser_missing


# Package scope, not session: playwright's sync API keeps an event loop running
# in the main thread while open, which breaks any async test collected after it.
@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    reason = browser_missing()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def open_page(browser: Any) -> Iterator[Callable[..., Any]]:
    """open_page(base_url, api_key=None): a new context on `/`, optionally with
    an API key already in session storage. Fails the test on any JS error."""
    contexts: list[Any] = []
    errors: list[str] = []

    def open_(base_url: str, api_key: str | None = None) -> Any:
        context = browser.new_context(viewport={"width": 1280, "height": 900}, base_url=base_url)
        contexts.append(context)
        if api_key:
            # Only on the first load: a test that reloads sees what the page stored.
            context.add_init_script(
                "if (!sessionStorage.getItem('askdocs.seeded')) {"
                f" sessionStorage.setItem('askdocs.apiKey', {api_key!r});"
                " sessionStorage.setItem('askdocs.seeded', '1'); }")
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # The page is one file: any other asset it asks for is a bug.
        page.on("request", lambda req: None if req.url.split("?")[0].rstrip("/") in (
            base_url, f"{base_url}/ask", f"{base_url}/collections") else errors.append(f"unexpected request {req.url}"))
        page.goto("/")
        return page

    yield open_
    for context in contexts:
        context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"

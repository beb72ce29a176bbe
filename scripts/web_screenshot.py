"""Regenerate docs/web-page.png: the running page, headless Chromium, the default engine.

Serves the ingress and its page (`python -m serve_app.local`: the same app the
Serve Ingress runs, over the in-process pipeline) with the shipped default
engine on the demo index, asks one README question from the keyboard, opens
citation [1] and saves a full-page screenshot.

    make index && .venv/bin/python scripts/web_screenshot.py [--db var/demo.db] [--out docs/web-page.png]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.ports import free_port  # noqa: E402
from tests.web.browser import CHROMIUM, CHROMIUM_ARGS, ask_by_keyboard  # noqa: E402

QUESTION = "How do I point askdocs at my own documents?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="var/demo.db")
    parser.add_argument("--out", default="docs/web-page.png")
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    from playwright.sync_api import expect, sync_playwright

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDOCS_")} | {
        "ASKDOCS_DB": str(Path(args.db).resolve())}
    server = subprocess.Popen([sys.executable, "-m", "serve_app.local", "--host", "127.0.0.1", "--port", str(port),
                               "--log-level", "warning"], cwd=REPO, env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"web_screenshot: the server at {url} did not become healthy")
            time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
            page.goto(url + "/")
            ask_by_keyboard(page, args.question)
            expect(page.locator("#answer")).to_have_attribute("data-state", "done", timeout=120_000)
            page.locator("#answer [data-cite='1']").first.click()
            page.locator("#details summary").click()
            page.screenshot(path=args.out, full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(60)
    print(f"web_screenshot: wrote {args.out} ({args.question!r} on {args.db})")


if __name__ == "__main__":
    main()

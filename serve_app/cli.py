"""`askdocs`: ask a running service, check a Serve config.

    askdocs ask "How do I scale a deployment?" [--url http://127.0.0.1:8000]
    askdocs check-config serve_config.yaml
"""
from __future__ import annotations

import json
import os
import sys
from typing import Iterator

import click
import httpx

from serve_app.config_check import check_file

DEFAULT_URL = "http://127.0.0.1:8000"


def iter_sse(lines: Iterator[str]) -> Iterator[tuple[str, dict]]:
    """(event, data) pairs from SSE lines."""
    event, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield event, json.loads("\n".join(data))
            event, data = "message", []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())


@click.group()
def main() -> None:
    """Cited answers over your documents (the askdocs service client)."""


@main.command()
@click.argument("question")
@click.option("--url", default=lambda: os.environ.get("ASKDOCS_URL", DEFAULT_URL), show_default=DEFAULT_URL,
              help="Base URL of the service (env ASKDOCS_URL).")
@click.option("-k", "k", type=click.IntRange(1, 20), default=None, help="Passages to retrieve.")
@click.option("--collection", default=None, help="Search only this collection.")
@click.option("--api-key", envvar="ASKDOCS_API_KEY", default=None, help="Bearer token (env ASKDOCS_API_KEY).")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Seconds to wait between chunks.")
def ask(question: str, url: str, k: int | None, collection: str | None, api_key: str | None, timeout: float) -> None:
    """Ask QUESTION and print the answer as it streams, then its sources.

    Example:

        askdocs ask "What does the proxy answer when the queue is full?"
    """
    body: dict = {"question": question}
    if k:
        body["k"] = k
    if collection:
        body["collection"] = collection
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    sources: list[dict] = []
    try:
        with httpx.stream("POST", f"{url.rstrip('/')}/ask", json=body, headers=headers,
                          timeout=httpx.Timeout(timeout, connect=10.0)) as response:
            if response.status_code != 200:
                response.read()
                try:
                    message = response.json()["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    message = response.text[:200]
                retry = response.headers.get("retry-after")
                hint = f" (retry after {retry} s)" if retry else ""
                raise click.ClickException(f"HTTP {response.status_code}: {message}{hint}")
            for event, data in iter_sse(response.iter_lines()):
                if event == "sources":
                    sources = data["sources"]
                elif event == "token":
                    click.echo(data["text"], nl=False)
                elif event == "done":
                    click.echo()
                    _print_done(data, sources)
                elif event == "error":
                    click.echo()
                    raise click.ClickException(f"{data['stage']} failed: {data['message']} (trace {data['trace_id']})")
    except httpx.HTTPError as e:
        raise click.ClickException(f"cannot reach {url}: {e}") from e


def _print_done(done: dict, sources: list[dict]) -> None:
    if done["refused"]:
        click.secho(f"(refused at the {done['refusal_stage']} stage)", fg="yellow", err=True)
    if done["truncated"]:
        click.secho("(truncated: max_tokens reached)", fg="yellow", err=True)
    cited = set(done["citations"])
    for s in sources:
        if s["n"] in cited:
            anchor = f"#{s['anchor']}" if s["anchor"] else ""
            click.echo(f"[{s['n']}] {s['source']}{anchor}  (cosine {s['cosine']:.2f})")
    if done["invalid_citations"]:
        click.secho(f"invalid citations: {done['invalid_citations']}", fg="red", err=True)
    if done["unsupported_sentences"]:
        click.secho(f"unsupported sentences: {done['unsupported_sentences']} (support {done['support']:.2f})",
                    fg="yellow", err=True)


@main.command("check-config")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
def check_config(files: tuple[str, ...]) -> None:
    """Check Serve config FILES strictly (unknown keys, limits, slot matching).

    Example:

        askdocs check-config serve_config.yaml
    """
    failed = False
    for path in files:
        problems = check_file(path)
        for problem in problems:
            click.echo(f"{path}: {problem}", err=True)
        if problems:
            failed = True
        else:
            click.echo(f"{path}: ok")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()

"""`askdocs`: ask a running service, check, render and launch a Serve config.

    askdocs ask "How do I scale a deployment?" [--url http://127.0.0.1:8000] [--json]
    askdocs check-config serve_config.yaml
    askdocs render-config serve_config.yaml --port 8431 --db var/eval.db --set engine=extractive
    askdocs launch serve_config.yaml --db var/demo.db [-- COMMAND …]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
import httpx

from deployments.sse import iter_events
from serve_app.config_check import check_file

DEFAULT_URL = "http://127.0.0.1:8000"


def iter_sse(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event, data) pairs of an askdocs answer stream (deployments.sse reads it)."""
    for event in iter_events(lines):
        if event.data:
            yield event.event, json.loads(event.data)


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
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object instead of streaming: the answer, its citations and checks, "
                   "every retrieved source, usage, timings and trace_id (POST /ask?stream=false).")
def ask(question: str, url: str, k: int | None, collection: str | None, api_key: str | None, timeout: float,
        as_json: bool) -> None:
    """Ask QUESTION and print the answer as it streams, then every retrieved
    source (a `*` marks the ones the answer cites), with its heading path and
    the start of its text. Exit status 1 with one line on stderr on any error.

    Example:

        askdocs ask "What does the proxy answer when the queue is full?"
        askdocs ask --json "How do I run askdocs on a GPU?" | jq .sources
    """
    body: dict[str, Any] = {"question": question}
    if k:
        body["k"] = k
    if collection:
        body["collection"] = collection
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    endpoint = f"{url.rstrip('/')}/ask"
    http_timeout = httpx.Timeout(timeout, connect=10.0)
    try:
        if as_json:
            response = httpx.post(endpoint, params={"stream": "false"}, json=body, headers=headers,
                                  timeout=http_timeout)
            if response.status_code != 200:
                raise click.ClickException(_http_error(response))
            click.echo(json.dumps(response.json()["data"], indent=2, ensure_ascii=False))
            return
        sources: list[dict[str, Any]] = []
        with httpx.stream("POST", endpoint, json=body, headers=headers, timeout=http_timeout) as response:
            if response.status_code != 200:
                response.read()
                raise click.ClickException(_http_error(response))
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
        raise click.ClickException(f"cannot reach {url}: {e}") from None


def _http_error(response: httpx.Response) -> str:
    """One line for a non-200 answer: the service's message (JSON error envelope), and Retry-After."""
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = " ".join(response.text.split())[:200]
    retry = response.headers.get("retry-after")
    hint = f" (retry after {retry} s)" if retry else ""
    return f"HTTP {response.status_code}: {message}{hint}"


EXCERPT_CHARS = 100


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """The start of a passage on one line, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return flat[:limit].rsplit(" ", 1)[0] + " …"


def source_lines(sources: list[dict[str, Any]], cited: set[int]) -> list[str]:
    """Every retrieved source, best first: `* [n] path#anchor  heading path  (cosine)`, its link
    when the source has one, and its excerpt."""
    if not sources:
        return ["No sources were retrieved."]
    lines = ["Sources (retrieved; * = cited in the answer):"]
    for s in sources:
        anchor = f"#{s['anchor']}" if s.get("anchor") else ""
        where = f"  {s['title']}" if s.get("title") else ""
        mark = "*" if s["n"] in cited else " "
        lines.append(f"{mark} [{s['n']}] {s['source']}{anchor}{where}  (cosine {s['cosine']:.2f})")
        if s.get("url"):                    # the collection's base URL or the page's own (docindex ingest --base-url)
            lines.append(f"      {s['url']}")
        if s.get("text"):
            lines.append(f"      {excerpt(s['text'])}")
    return lines


def _print_done(done: dict[str, Any], sources: list[dict[str, Any]]) -> None:
    if done["refused"]:
        click.secho(f"(refused at the {done['refusal_stage']} stage)", fg="yellow", err=True)
    if done.get("unknown_names"):
        click.secho(f"(the documents never mention: {', '.join(done['unknown_names'])})", fg="yellow", err=True)
    if done["truncated"]:
        click.secho("(truncated: max_tokens reached)", fg="yellow", err=True)
    click.echo("\n".join(source_lines(sources, set(done["citations"]))))
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


_render_options = [
    click.argument("config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                   default="serve_config.yaml"),
    click.option("--host", default=None, help="HTTP host (default: the config's)."),
    click.option("--port", type=click.IntRange(1, 65535), default=None, help="HTTP port (default: the config's)."),
    click.option("--db", default=None, help="Index file for askdocs' `db` arg (made absolute)."),
    click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                 help="Override an askdocs arg (value read as YAML); repeatable. Beats ASKDOCS_KEY and the YAML."),
]


_F = TypeVar("_F", bound=Callable[..., Any])


def _with_render_options(f: _F) -> _F:
    for option in reversed(_render_options):
        f = option(f)
    return f


def _rendered(config: Path, host: str | None, port: int | None, db: str | None,
              sets: tuple[str, ...]) -> dict[str, Any]:
    from serve_app.launcher import LaunchError, parse_set, render_file
    try:
        return render_file(config, host=host, port=port, db=str(Path(db).resolve()) if db else None,
                           overrides=parse_set(sets), env=os.environ)
    except LaunchError as e:
        raise click.ClickException(str(e)) from None


@main.command("render-config")
@_with_render_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here instead of standard output.")
def render_config(config: Path, host: str | None, port: int | None, db: str | None, sets: tuple[str, ...],
                  output: Path | None) -> None:
    """Print CONFIG with only its host, port and askdocs args changed.

    Precedence of an askdocs setting: --set/--db, then an ASKDOCS_* variable
    (the YAML arg it names is dropped), then the YAML's args, then defaults.

    Example:

        askdocs render-config serve_config.yaml --port 8431 --set default_k=1
    """
    from serve_app.launcher import dump
    text = dump(_rendered(config, host, port, db, sets), config)
    if output is None:
        click.echo(text, nl=False)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")


@main.command(context_settings={"ignore_unknown_options": True})
@_with_render_options
@click.option("--run-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("var/run"),
              show_default=True, help="Rendered config, Ray address and logs.")
@click.option("--start-timeout", type=click.FloatRange(min=1), default=300.0, show_default=True,
              help="Seconds until /healthz must answer 200.")
@click.option("--logs/--no-logs", "to_files", default=False, show_default=True,
              help="Ray and Serve output to RUN_DIR/*.log instead of this terminal.")
@click.option("--keep-serving", is_flag=True,
              help="After COMMAND succeeds, serve on until Ctrl-C (e.g. COMMAND prints how to ask).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def launch(config: Path, host: str | None, port: int | None, db: str | None, sets: tuple[str, ...],
           run_dir: Path, start_timeout: float, to_files: bool, keep_serving: bool, command: tuple[str, ...]) -> None:
    """Start CONFIG on a private local Ray cluster and wait until healthy.

    Without COMMAND it serves until Ctrl-C or SIGTERM; with `-- COMMAND …`
    it runs the command (TARGET=the service URL, GRAPH_WORK=RUN_DIR in its
    environment) and exits with its status. Either way everything it started
    is stopped. Settings precedence as in render-config.

    Example:

        askdocs launch serve_config.yaml --db var/demo.db
    """
    from serve_app.launcher import Graph, LaunchError, signals_raise
    rendered = _rendered(config, host, port, db, sets)
    status = 0
    # Serving until Ctrl-C (no COMMAND, or --keep-serving) ends normally by an
    # interrupt: exit 0 once everything stopped, so `make run` prints no "Error 130".
    # Only a COMMAND cut short by it exits 130 (it did not finish).
    command_running = False
    with signals_raise():
        try:
            with Graph(rendered, run_dir, source=str(config), start_timeout_s=start_timeout,
                       log_to_files=to_files) as graph:
                click.echo(f"launch: askdocs up on {graph.base_url} ({json.dumps(graph.health)})", err=True)
                if command:
                    env = {**os.environ, "TARGET": graph.base_url, "GRAPH_WORK": str(run_dir)}
                    command_running = True
                    status = subprocess.run(list(command), env=env).returncode
                    command_running = False
                    if keep_serving and status == 0:
                        status = graph.wait()
                else:
                    status = graph.wait()
        except LaunchError as e:
            raise click.ClickException(str(e)) from None
        except KeyboardInterrupt:
            status = interrupted_status(bool(command), keep_serving, command_running)
        finally:
            click.echo("launch: stopped", err=True)
    sys.exit(status)


def interrupted_status(has_command: bool, keep_serving: bool, command_running: bool) -> int:
    """Exit status after Ctrl-C/SIGTERM stopped everything: 0 when serving until interrupted was
    the point (no COMMAND, or --keep-serving, e.g. `make run`), 130 when a COMMAND was cut short
    or never ran."""
    if command_running or (has_command and not keep_serving):
        return 130
    return 0


if __name__ == "__main__":
    main()

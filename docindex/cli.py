"""`docindex`: build, search and inspect a document index from the shell.

Library errors become one-line CLI errors only here (click.ClickException:
"Error: …" on stderr, exit code 1); a usage error exits 2. No tracebacks.
`ingest` exits 3 when it finished but skipped files (reported on stderr, a bulk kind in one line).
"""
from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from .blocks import READING_VERSION
from .errors import DocindexError
from .ranking import RANKINGS, SEARCH_RANKING

EXIT_SKIPPED = 3

_F = TypeVar("_F", bound=Callable[..., Any])
_P = ParamSpec("_P")
_R = TypeVar("_R")


def _db_option(exists: bool) -> Callable[[_F], _F]:
    return click.option("--db", "db", required=True, type=click.Path(path_type=Path, dir_okay=False),
                        help="The index file (SQLite)." + ("" if exists else " Created if missing."))


def _library_errors(command: Callable[_P, _R]) -> Callable[_P, _R]:
    """Turn the library's typed errors into one-line CLI errors."""
    @functools.wraps(command)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return command(*args, **kwargs)
        except DocindexError as exc:
            raise click.ClickException(str(exc)) from None
        except KeyboardInterrupt:
            raise click.ClickException("interrupted; nothing was written") from None
    return wrapper


def _checked_base_url(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """--base-url checked before anything is opened: a bad one is one line and exit 1, the index untouched."""
    if value is None:
        return None
    from .links import check_base_url

    try:
        return check_base_url(value)
    except DocindexError as exc:
        raise click.ClickException(f"--base-url: {exc}") from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="askdocs", prog_name="docindex")
def main() -> None:
    """Build, search and inspect a hybrid (dense + BM25) document index."""


@main.command(epilog="""\b
Exit status:
  0  every file was ingested or is unchanged
  3  done, but some files were skipped (on stderr: "skipped PATH: reason";
     4 or more of one unsupported type, .txt sources beside their HTML
     pages, or redirect pages, in one line: "skipped N files under DIR:
     reason, e.g. PATH")
  1  nothing written: a bad path or --base-url, no file that can be ingested,
     not an index, another ingest writing the same index, or interrupted
  2  usage error (an unknown option, a missing argument)""")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@_db_option(exists=False)
@click.option("--collection", "-c", required=True, help="Collection to bring in line with PATHS.")
@click.option("--dry-run", is_flag=True, help="List what would change; write nothing.")
@click.option("--force", is_flag=True, help="Re-chunk and re-embed every file, changed or not.")
@click.option("--follow-external-links", is_flag=True,
              help="Follow symbolic links whose target is outside PATHS (by default they are skipped).")
@click.option("--max-file-mb", type=click.FloatRange(min=0, min_open=True), default=20.0, show_default=True,
              help="Skip files larger than this, checked before reading.")
@click.option("--ray", "ray_address", is_flag=False, flag_value="auto", default=None, metavar="[ADDRESS]",
              help="Read, chunk and embed on a Ray cluster (Ray Data); this process writes. ADDRESS: auto "
                   "(the default: RAY_ADDRESS, else a running local cluster, else a new one), local (a new one), "
                   "HOST:PORT or ray://HOST:PORT. Needs the ray-ingest extra.")
@click.option("--ray-workers", type=click.IntRange(min=1), default=None,
              help="With --ray: files read and embedded at once, one CPU each [default: the cluster's CPUs].")
@click.option("--base-url", metavar="URL", default=None, callback=_checked_base_url,
              help="Where the collection's files are published (http or https, no user name or password): "
                   "citations link to URL + the file's path + #anchor, unless its front matter has a url. "
                   "Stored with the collection; later ingests without the option keep it.")
@click.option("--quote-vectors/--no-quote-vectors", default=True, show_default=True,
              help="Also embed each chunk's quotable sentences, so the extractive engine answers without "
                   "running the model per sentence (about twice the ingest time, ~4 KB a chunk).")
@_library_errors
def ingest(paths: tuple[Path, ...], db: Path, collection: str, dry_run: bool, force: bool,
           follow_external_links: bool, max_file_mb: float, ray_address: str | None,
           ray_workers: int | None, base_url: str | None, quote_vectors: bool) -> None:
    """Ingest Markdown (and MDX), text, HTML and PDF files under PATHS into a collection
    (each type also gzip-compressed: page.md.gz).

    Unchanged files (same SHA-256) are skipped, changed ones replaced, and files
    no longer under PATHS removed from the collection. The run is one
    transaction: interrupted, it leaves the previous index intact.

    Only regular files are read (FIFOs, devices and sockets are skipped), links
    leaving PATHS are not followed, and every file not ingested (unsupported
    type, too large, unreadable) is reported on stderr; hidden files and
    folders (a leading ".") are left out.

    With --ray, files are read, chunked and embedded by Ray Data actors (one
    CPU each; a GPU each for embedding where the cluster has GPUs), and this
    process writes them in the same one transaction: same chunks, same vectors.

    \b
    Examples:
        docindex ingest docs/ --db index.db --collection docs
        docindex ingest docs/ --db index.db --collection docs --ray
        docindex ingest docs/ --db index.db --collection docs \\
            --base-url https://github.com/OWNER/REPO/blob/main/docs/
    """
    from .ingest import NothingToIngest, skip_lines
    from .ingest import ingest as run_ingest

    if ray_workers is not None and ray_address is None:
        raise click.UsageError("--ray-workers needs --ray")
    if ray_address is not None and dry_run:
        raise click.UsageError("--dry-run embeds nothing: run it without --ray")
    options: dict[str, Any] = dict(force=force, progress=sys.stderr.isatty(), base_url=base_url,
                                   quote_vectors=quote_vectors,
                                   follow_external_links=follow_external_links,
                                   max_file_bytes=max(1, int(max_file_mb * 1_000_000)))
    try:
        if ray_address is not None:
            from .ingest_ray import ingest_with_ray

            report = ingest_with_ray(list(paths), db, collection, address=ray_address, workers=ray_workers,
                                     **options)
        else:
            report = run_ingest(list(paths), db, collection, dry_run=dry_run, **options)
    except NothingToIngest as exc:
        for line in skip_lines(exc.skipped):
            click.echo(f"skipped {line}", err=True)
        raise
    for error in report.errors:
        click.echo(f"skipped {error}", err=True)
    if report.read_again is not None:
        click.echo(f"note: the collection was read by older rules (version {report.read_again}, now "
                   f"{READING_VERSION}): every file was read again", err=True)
    if dry_run:
        verbs = {"add": "would add", "change": "would change", "remove": "would remove"}
        for action, source in report.changes:
            click.echo(f"{verbs[action]:<13} {source}")
    click.echo(report.summary())
    if report.skipped:
        click.get_current_context().exit(EXIT_SKIPPED)


@main.command()
@click.argument("collection")
@_db_option(exists=True)
@click.option("--dry-run", is_flag=True, help="List what would be removed; write nothing.")
@_library_errors
def drop(collection: str, db: Path, dry_run: bool) -> None:
    """Remove COLLECTION (its documents, chunks and vectors) from the index.

    One transaction: the other collections are untouched, and running servers
    see the index without it on their next search (the index version moves).
    An unknown collection is an error (exit 1) that lists the existing ones.

    Example:

        docindex drop askdocs --db var/my.db --dry-run
    """
    from .ann_build import drop_collection

    dropped = drop_collection(db, collection, dry_run=dry_run)
    if dry_run:
        for source in dropped.sources:
            click.echo(f"would remove  {source}")
        click.echo(f"dry run: would drop collection {collection!r}: {dropped.documents} documents, "
                   f"{dropped.chunks} chunks; nothing written")
    else:
        click.echo(f"dropped collection {collection!r}: {dropped.documents} documents, {dropped.chunks} chunks "
                   f"(index version {dropped.index_version})")


@main.command()
@click.argument("query")
@_db_option(exists=True)
@click.option("--collection", "-c", default=None, help="Search only this collection.")
@click.option("-k", "k", default=5, show_default=True, type=click.IntRange(1, 100), help="Passages to return.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as a JSON array.")
@click.option("--rank", "rank", type=click.Choice(sorted(RANKINGS)), default=SEARCH_RANKING, show_default=True,
              help="pages: one chunk per page first, each page also scored as a whole (which page answers); "
                   "passages: RRF of dense and BM25, the chunks an answer is given (as the MCP search tools).")
@_library_errors
def search(query: str, db: Path, collection: str | None, k: int, as_json: bool, rank: str) -> None:
    """Search the index with a question: the pages that answer it, best first.

    Example:

        docindex search "how do I enable TLS?" --db index.db -k 3
    """
    from .index import Index

    with Index(db, ranking=RANKINGS[rank]) as index:
        hits = index.search(query, k=k, collection=collection)
    if as_json:
        click.echo(json.dumps([hit.to_dict() for hit in hits], ensure_ascii=False, indent=2))
        return
    if not hits:
        click.echo("(no matching chunks)")
        return
    for n, hit in enumerate(hits, start=1):
        anchor = f"#{hit.anchor}" if hit.anchor else ""
        click.echo(f"{n}. [cos {hit.cosine:.3f}  bm25 {hit.bm25:.2f}  fusion {hit.fusion:.4f}] "
                   f"{hit.collection}:{hit.source}{anchor}")
        click.echo(f"   {hit.title}")
        snippet = " ".join(hit.text.split())
        click.echo(f"   {snippet[:300]}{'…' if len(snippet) > 300 else ''}")
    if hits[0].unknown_terms:           # the same for every hit: said once, after them
        click.echo(f"(no chunk{' of ' + collection if collection else ''} uses: {', '.join(hits[0].unknown_terms)})")


@main.command()
@_db_option(exists=True)
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@_library_errors
def stats(db: Path, as_json: bool) -> None:
    """Collections, documents, chunks, embedding model, index version and file size.

    Example:

        docindex stats --db index.db
    """
    from .index import Index

    with Index(db) as index:
        info = index.stats()
    if as_json:
        click.echo(json.dumps(info, ensure_ascii=False, indent=2))
        return
    click.echo(f"index        {info['path']} ({info['size_bytes'] / 1e6:.1f} MB)")
    click.echo(f"model        {info['embed_model'] or '(none yet)'}")
    click.echo(f"version      {info['index_version']}")
    click.echo(f"documents    {info['documents']}")
    click.echo(f"chunks       {info['chunks']}")
    for c in info["collections"]:
        click.echo(f"  {c['name']}: {c['documents']} documents, {c['chunks']} chunks")


@main.command("serve-mcp")
@click.option("--db", "db", default=None, type=click.Path(path_type=Path, dir_okay=False),
              help="The index file (SQLite). Give this or --endpoint.")
@click.option("--endpoint", default=None, metavar="URL",
              help="A deployed askdocs (http://HOST:PORT/ask): serve fetch_docs from its doc tree, no local index.")
@click.option("--cache-dir", default=None, type=click.Path(path_type=Path, file_okay=False),
              help="With --endpoint: where downloaded trees go (default ~/.cache/docindex/endpoints).")
@click.option("--api-key", envvar="ASKDOCS_API_KEY", default=None,
              help="With --endpoint: the service's API key (or ASKDOCS_API_KEY).")
@click.option("--collection", "-c", default=None, help="Default collection for the tools.")
@click.option("--warmup/--no-warmup", default=True, show_default=True,
              help="Load the embedder and the index before answering the first call.")
@_library_errors
def serve_mcp(db: Path | None, endpoint: str | None, cache_dir: Path | None, api_key: str | None,
              collection: str | None, warmup: bool) -> None:
    """Serve the index over MCP on stdio (stdout carries protocol only).

    Examples:

        docindex serve-mcp --db index.db --collection docs

        docindex serve-mcp --endpoint http://127.0.0.1:8000/ask
    """
    if (db is None) == (endpoint is None):
        raise click.UsageError("give exactly one of --db FILE or --endpoint URL")
    if endpoint is not None:
        from .mcp.endpoint import archive_url, run_endpoint_stdio

        archive_url(endpoint)       # a malformed URL is a one-line error now, not at the first call
        run_endpoint_stdio(endpoint, cache_dir, api_key)
        return
    assert db is not None
    from .mcp.server import run_stdio  # imported lazily: `import mcp` costs ~1 s

    run_stdio(db, collection, warmup=warmup)


if __name__ == "__main__":  # pragma: no cover
    main()

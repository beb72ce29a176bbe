"""The stdio process: `docindex serve-mcp --db FILE [--collection NAME]`.

Resources
  docindex://stats  index statistics as JSON
  crag://stats      crag-mcp's plain-text stats, for clients written against crag-mcp

stdout carries the protocol only; logging goes to stderr. The Index is opened
once per process (so is the embedder) and refreshed before every call, so an
ingest made while the server runs is seen on the next call (the index checks
its version inside each read transaction, so no call mixes two versions).
Sync tools run on worker threads; `Index` is thread-safe.
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

from ..index import Index
from .contract import SchemaValidatingServer, crag_stats_text
from .tools import IndexService, build_tools

log = logging.getLogger(__name__)

SERVER_NAME = "docindex"

INSTRUCTIONS = """\
docindex answers questions from an indexed document collection. Every claim \
you make from it must cite its source path and section anchor, like \
`guide/install.md#requirements`; say so plainly when the documents do not \
answer the question instead of guessing.

Two ways in:
1. Quick lookups: call `search` (passages headed `source#anchor`, optional \
collection filter; `crag_search` is the same search in crag-mcp's format, \
which shows the source only; `query_knowledge_hub` takes the MCP Knowledge \
Service's arguments). Each passage shows its cosine score; cosine is \
the only calibrated relevance score, so ignore passages whose cosine is far \
below the best one.
2. Reading the documents as files: call `fetch_docs`. It writes the collection \
as markdown files, one per section, with frontmatter (title, source, anchor, \
url), and returns the title tree inline. Read that tree first; open only the \
sections whose titles fit the question; use grep over the returned path for \
specific names, flags and error messages. The files are rewritten only when \
the index changes, so calling it again is cheap.

`list_collections` shows what is indexed; `get_document` lists one document's \
sections and anchors; `get_document_summary` gives its summary and tags.
"""


def build_server(service: IndexService) -> SchemaValidatingServer:
    server = SchemaValidatingServer(
        SERVER_NAME, instructions=INSTRUCTIONS, version=_package_version(), tools=build_tools(service)
    )

    @server.resource(
        "docindex://stats",
        name="docindex stats",
        description=("Index statistics as JSON: collections, documents, chunks, embedding model, "
                     "index version, db path."),
        mime_type="application/json",
    )
    def docindex_stats() -> str:
        return json.dumps(service.stats(), ensure_ascii=False, indent=1)

    @server.resource(
        "crag://stats",
        name="cRAG diagnostics",
        description="crag-mcp compatible plain-text stats: DB path, chunk count, file count, embedding dim.",
        mime_type="text/plain",
    )
    def crag_stats() -> str:
        return crag_stats_text(service.db_path, service.stats())

    return server


def _package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("askdocs")
    except PackageNotFoundError:
        return "0"


def default_cache_root(db: Path) -> Path:
    """`<db path>.cache/fetch_docs`: beside the index, one per index file."""
    return db.with_name(db.name + ".cache") / "fetch_docs"


def _log_to_stderr() -> None:
    # stdout is the protocol channel: one stray print corrupts the stream.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    # The SDK logs every request at INFO: noise on stderr and time on the hot path.
    logging.getLogger("mcp").setLevel(logging.WARNING)


def open_service(db: str | Path, collection: str | None, cache_root: Path | None = None) -> IndexService:
    db_path = Path(db).resolve()
    index = Index(db_path)
    return IndexService(
        index,
        db_path=db_path,
        default_collection=collection,
        cache_root=cache_root or default_cache_root(db_path),
    )


def _one_blas_thread() -> None:
    """Run numpy's matrix-vector product on one thread.

    The dense search is one (n, 384) @ (384,) product: memory-bound, so a
    second BLAS thread gains little on an idle machine and, measured on the
    shared 2-core box, tripled its latency under load (13 ms vs 4 ms at 20k
    chunks). A server shares the cores with its siblings in the Retriever pool.
    """
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def run_stdio(db: str | Path, collection: str | None, warmup: bool = True) -> None:
    """Serve the index at `db` over stdio until the client closes stdin."""
    _log_to_stderr()
    _one_blas_thread()
    service = open_service(db, collection)
    known = [c.name for c in service.fresh().collections()]
    if collection is not None and collection not in known:
        # Not fatal: an ingest may create it while we run; until then calls say so.
        log.warning("collection %r is not in %s yet (collections: %s)", collection, service.db_path,
                    ", ".join(known) or "none")
    if warmup:
        service.warm_up()
    server = build_server(service)  # its own logging setup is a no-op once the root has a handler
    log.info("serving %s over stdio (collection: %s)", service.db_path, collection or "all")
    server.run("stdio")

"""Fixtures shared by the whole suite."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CORPORA = REPO / "corpora"      # corpora/ in the repository (MIT, see corpora/README.md)
CMCP = CORPORA / "cmcp"


def pytest_report_header(config: pytest.Config) -> str:
    from tests.fuzz_seed import header

    return header()


def pytest_sessionstart(session: pytest.Session) -> None:
    """Prepare the embedder's model once, before any test: on a fresh clone its
    first use builds and checks a re-quantized copy (docindex.quantize, seconds
    and ~1 GB), and a test that happened to come first would pay that in its
    own time and memory bounds (a stats read timed out, an ingest peaked at 1.7 GB)."""
    from docindex.quantize import best_model_path

    best_model_path()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The seed again at the end: `make test` runs with -q, which hides the header."""
    from tests.fuzz_seed import header

    terminalreporter.write_line(header())


def pytest_unconfigure(config: pytest.Config) -> None:
    # llama_cpp._utils opens two /dev/null files at import and never closes them;
    # under warnings-as-errors each prints an "Exception ignored ... ResourceWarning"
    # at interpreter exit. Close them once every test is done.
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None:
            handle.close()


@pytest.fixture(scope="session")
def cmcp_index(tmp_path_factory) -> Path:
    """An index of corpora/cmcp (collection "cmcp", real MiniLM embedder), built once per session.

    Returns the database path. Treat it as read-only: other tests share it.
    """
    if not CMCP.is_dir():
        pytest.skip(f"dev corpus missing: {CMCP}")
    from docindex.ingest import ingest

    db = tmp_path_factory.mktemp("cmcp-index") / "cmcp.db"
    report = ingest([CMCP], db, "cmcp", quote_vectors=False)   # retrieval tests: the chunks alone
    assert report.added > 30 and report.chunks > 300
    assert [error.split(": ", 1)[0] for error in report.errors] == [str(CMCP / "LICENSE")]   # reported, skipped
    return db

"""docindex fixtures: tiny corpora written per test, one real-model index per session.

The real MiniLM embeds ~20-60 chunks/s on 2 shared cores, so only the
session-scoped indexes (cmcp_index in tests/conftest.py, salon_index here) use
it; every other index is built with the hashing fake from fakes.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CORPORA

from .fakes import HashEmbedder

SALON = CORPORA / "salon-zh" / "examples" / "salon" / "knowledge_sources"


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def fake_embedder() -> HashEmbedder:
    return HashEmbedder()


@pytest.fixture
def corpus(tmp_path) -> Path:
    """Three small markdown files: the usual subject of the re-ingest tests."""
    return write_files(tmp_path / "docs", {
        "install.md": "# Install\n\nRun make install to create the virtual environment.\n\n"
                      "## Requirements\n\nPython 3.11 and a C compiler.\n",
        "tls.md": "# TLS\n\nTerminate TLS at a reverse proxy such as nginx or caddy.\n",
        "guide/search.md": "# Search\n\nHybrid search fuses dense and BM25 rankings with RRF.\n",
    })


@pytest.fixture(scope="session")
def salon_index(tmp_path_factory) -> Path:
    """The 7 Chinese salon documents, real embedder, collection "salon"."""
    if not SALON.is_dir():
        pytest.skip(f"dev corpus missing: {SALON}")
    from docindex.ingest import ingest

    db = tmp_path_factory.mktemp("salon-index") / "salon.db"
    report = ingest([SALON], db, "salon")
    assert report.added == 7 and not report.errors
    return db

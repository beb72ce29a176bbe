"""Fixtures for the MCP server tests: tiny indexes and a real server over real stdio.

Each section is long enough to stand alone as a chunk (docindex/chunking.py joins tinier ones
to a neighbour), so every heading keeps its own anchor."""
from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from docindex.ingest import ingest

REPO = Path(__file__).resolve().parents[2]

GUIDE = """\
# Installation

How to install the frobnicator on a workstation or a server, from the release archive or from source.

## Requirements

The frobnicator needs Python 3.11 and a quokka license key. Both must be in place before the installer runs.

## Troubleshooting

If the daemon prints `E_QUOKKA_EXPIRED`, renew the quokka license. The daemon reads the renewed license when it starts again.
"""

FAQ = """\
# FAQ

## Does it run on a toaster?

Only toasters with at least two slots and a serial port. Single-slot models lack the memory the daemon needs.
"""

NOTES = """\
# Release notes

## Version 2

Version 2 removes the legacy teleport mode. Configurations that still name it fail at start with a clear message.
"""


def write_corpus(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="session")
def small_index(tmp_path_factory) -> Path:
    """Two collections: `docs` (guide/install.md, faq.md) and `notes` (notes.md). Read-only for tests."""
    base = tmp_path_factory.mktemp("small_index")
    docs = write_corpus(base / "docs", {"guide/install.md": GUIDE, "faq.md": FAQ})
    notes = write_corpus(base / "notes", {"notes.md": NOTES})
    db = base / "index.db"
    ingest([docs], db, "docs")
    ingest([notes], db, "notes")
    return db


def server_params(db: Path, *args: str) -> StdioServerParameters:
    """The real entry point, `docindex serve-mcp`, as a subprocess of this test."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "docindex.cli", "serve-mcp", "--db", str(db), *args],
        env=env,
        cwd=str(REPO),
    )


@asynccontextmanager
async def mcp_client(db: Path, *args: str, mode: str = "auto", timeout: float = 30) -> AsyncIterator[Client]:
    async with Client(server_params(db, *args), read_timeout_seconds=timeout, mode=mode) as client:
        yield client

"""Stand-in MCP servers for the tests (run as scripts, never imported by the code under test)."""
from __future__ import annotations

import sys
from pathlib import Path

CRAG_STUB = Path(__file__).with_name("crag_mcp_server.py")


def crag_command(*args: str) -> list[str]:
    """argv of the crag-mcp stand-in (tests/stubs/crag_mcp_server.py)."""
    return [sys.executable, str(CRAG_STUB), *args]

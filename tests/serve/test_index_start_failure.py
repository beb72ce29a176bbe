"""A Retriever whose index server cannot start fails with ONE readable line
(what `serve status` and the replica log end with): the server's own reason,
never "ExceptionGroup: unhandled errors in a TaskGroup"."""
from __future__ import annotations

import io
import sys

import pytest

from deployments.errors import McpUnavailable
from deployments.retriever import McpPool
from deployments.server_stderr import StderrTail, leaf_message, start_failure


class Closed(Exception):
    pass


def test_leaf_message_unwraps_nested_groups_to_their_leaves():
    group = ExceptionGroup("unhandled errors in a TaskGroup",
                           [ExceptionGroup("unhandled errors in a TaskGroup", [Closed("Connection closed")])])
    assert leaf_message(group) == "Closed: Connection closed"
    two = ExceptionGroup("g", [Closed("a"), ValueError("bad\nvalue"), Closed("a")])
    assert leaf_message(two) == "Closed: a; ValueError: bad value"        # one line, duplicates once


def test_start_failure_prefers_what_the_server_said():
    group = ExceptionGroup("unhandled errors in a TaskGroup", [Closed("Connection closed")])
    said = "Error: var/x.db: no such index file (build one with `docindex ingest`)"
    assert start_failure(group, said) == ("the index server did not start: var/x.db: no such index file "
                                          "(build one with `docindex ingest`)")
    assert start_failure(group) == "the index server did not start: Closed: Connection closed"


def test_stderr_tail_passes_lines_on_and_keeps_the_last():
    sink = io.StringIO()
    tail = StderrTail(sink=sink)
    tail.file.write("loading\nError: it broke\n\n")
    tail.file.flush()
    tail.close()
    assert sink.getvalue() == "loading\nError: it broke\n\n" and tail.last_line() == "Error: it broke"


async def test_a_missing_index_file_fails_the_start_with_the_servers_line(tmp_path, capfd):
    missing = tmp_path / "nowhere.db"
    pool = McpPool([sys.executable, "-m", "docindex.cli", "serve-mcp", "--db", str(missing)], size=1,
                   start_timeout_s=120)
    with pytest.raises(McpUnavailable) as caught:
        await pool.start()
    message = str(caught.value)
    assert message == f"the index server did not start: {missing}: no such index file (build one with `docindex ingest`)"
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert "no such index file" in capfd.readouterr().err          # still in the replica's log, as before


async def test_a_server_that_says_nothing_gets_the_leaf_error():
    pool = McpPool([sys.executable, "-c", "raise SystemExit(3)"], size=1, start_timeout_s=60)
    with pytest.raises(McpUnavailable) as caught:
        await pool.start()
    assert "ExceptionGroup" not in str(caught.value) and "TaskGroup" not in str(caught.value)
    assert str(caught.value).startswith("the index server did not start: MCPError: ")

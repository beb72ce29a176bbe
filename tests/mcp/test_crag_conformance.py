"""Replay crag-mcp's recorded wire transcripts against `docindex serve-mcp`.

The "in" frames of each transcript in tests/data/crag-mcp/ are
written, byte for byte, to the server's stdin; every stdout line must be a
JSON-RPC message, and each response must have the shape crag-mcp's had
(same keys and value types; argument errors word for word).
"""
from __future__ import annotations

import json
import re
import selectors
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import REPO

TRANSCRIPTS = REPO / "tests" / "data" / "crag-mcp"
pytestmark = [
    pytest.mark.timeout(300),
]


def load(path: Path) -> tuple[list[str], dict[Any, dict]]:
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    inbound = [f["frame"] for f in frames if f["dir"] == "in"]
    outbound = {msg["id"]: msg for msg in (json.loads(f["frame"]) for f in frames if f["dir"] == "out") if "id" in msg}
    return inbound, outbound


def exchange(db: Path, inbound: list[str], expected_ids: set, timeout: float = 150) -> dict[Any, dict]:
    """Write the frames to a fresh server; collect its responses by id."""
    server = subprocess.Popen(
        [sys.executable, "-m", "docindex.cli", "serve-mcp", "--db", str(db), "--no-warmup"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=REPO,
    )
    responses: dict[Any, dict] = {}
    try:
        for frame in inbound:
            server.stdin.write(frame.encode() + b"\n")
        server.stdin.flush()
        selector = selectors.DefaultSelector()
        selector.register(server.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout
        while set(responses) < expected_ids:
            assert time.monotonic() < deadline, f"no answer for ids {expected_ids - set(responses)}"
            if not selector.select(timeout=1):
                continue
            line = server.stdout.readline()
            assert line, "server closed stdout early"
            message = json.loads(line)  # stdout carries protocol only: every line is JSON-RPC
            assert message.get("jsonrpc") == "2.0"
            if "id" in message:
                responses[message["id"]] = message
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    return responses


def assert_same_shape(expected: Any, actual: Any, where: str = "$") -> None:
    """`actual` has every key of `expected`, recursively, with values of the same JSON type."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{where}: missing key {key!r} (have {sorted(actual)})"
            assert_same_shape(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list), f"{where}: expected an array, got {actual!r}"
        if expected:
            assert actual, f"{where}: expected a non-empty array"
            for item in actual:
                assert_same_shape(expected[0], item, f"{where}[]")
    else:
        assert type(actual) is type(expected), f"{where}: {actual!r} is not like {expected!r}"


@pytest.mark.parametrize("name", ["crag_search_empty_query", "crag_search_k_above_max"])
def test_argument_errors_match_crag_mcp_word_for_word(small_index, name):
    inbound, outbound = load(TRANSCRIPTS / f"{name}.jsonl")
    responses = exchange(small_index, inbound, set(outbound))

    for request_id, expected in outbound.items():
        assert_same_shape(expected, responses[request_id])
    init = responses[1]["result"]
    assert {"tools", "resources"} <= set(init["capabilities"])
    assert init["serverInfo"]["name"] == "docindex"
    error = responses[2]["result"]
    assert error["isError"] is True
    assert error["content"] == outbound[2]["result"]["content"]


def test_stats_resource_reads_like_crag_mcp(small_index):
    inbound, outbound = load(TRANSCRIPTS / "stats_resource_read.jsonl")
    responses = exchange(small_index, inbound, set(outbound))

    for request_id, expected in outbound.items():
        assert_same_shape(expected, responses[request_id])
    listed = {r["uri"]: r for r in responses[2]["result"]["resources"]}
    crag = outbound[2]["result"]["resources"][0]
    assert_same_shape(crag, listed["crag://stats"])
    assert listed["crag://stats"]["mimeType"] == "text/plain"
    assert "docindex://stats" in listed

    ours = responses[3]["result"]["contents"][0]
    theirs = outbound[3]["result"]["contents"][0]
    assert_same_shape(theirs, ours)
    assert ours["uri"] == "crag://stats" and ours["mimeType"] == "text/plain"
    labels = [line.split(":", 1)[0] for line in ours["text"].splitlines()]
    assert labels == [line.split(":", 1)[0] for line in theirs["text"].splitlines()] == ["db", "chunks", "files", "dim"]
    assert re.fullmatch(r"db:     \S.*\nchunks: [1-9]\d*\nfiles:  3\ndim:    384", ours["text"])

"""Parse an SSE body strictly (framing is part of what the tests check)."""
from __future__ import annotations

import json


def parse_sse(body: str) -> list[tuple[str, dict]]:
    assert body.endswith("\n\n"), "every SSE frame ends with a blank line"
    events = []
    for frame in body.split("\n\n")[:-1]:
        lines = frame.split("\n")
        assert len(lines) == 2, f"one event line and one data line per frame: {frame!r}"
        assert lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        events.append((lines[0][7:], json.loads(lines[1][6:])))
    return events

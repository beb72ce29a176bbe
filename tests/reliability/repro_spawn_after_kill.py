"""Reproduction attempt, outside Ray, of "the first spawns after a SIGKILLed index
server die before exec" (KNOWN_LIMITATIONS.md): the Retriever's McpPool over the
stub index, on the event loop a Ray replica uses (uvloop, in a thread that is
not the main one) or on plain asyncio; SIGKILL the server N times and count
the restarts that failed, with their errors and how long the outage lasted.

    .venv/bin/python tests/reliability/repro_spawn_after_kill.py --loop uvloop --kills 20
    .venv/bin/python tests/reliability/repro_spawn_after_kill.py --loop asyncio --kills 20
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from deployments.retriever import McpPool  # noqa: E402
from tests.serve.conftest import pids_with, stub_command  # noqa: E402


class Failures(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[tuple[float, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if "could not start" in record.getMessage() or "died" in record.getMessage():
            self.lines.append((time.monotonic(), record.getMessage()))


async def run(kills: int, gap_s: float) -> dict:
    tag = f"askdocs-repro-{uuid.uuid4().hex[:8]}"
    pool = McpPool(stub_command(tag), size=1, call_timeout_s=10.0)
    await pool.start()
    outcomes = []
    try:
        for _ in range(kills):
            victims = pids_with(tag)
            for pid in victims:
                os.kill(pid, signal.SIGKILL)
            killed = time.monotonic()
            try:
                await pool.call("crag_search", {"query": "replicas", "k": 1})
                outcomes.append({"ok": True, "s": round(time.monotonic() - killed, 3)})
            except Exception as e:  # noqa: BLE001 - what happened is the result
                outcomes.append({"ok": False, "s": round(time.monotonic() - killed, 3), "error": repr(e)[:200]})
            await asyncio.sleep(gap_s)
    finally:
        await pool.close()
    return {"restarts": pool.restarts, "calls": outcomes}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--loop", choices=["uvloop", "asyncio"], default="uvloop")
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--gap-s", type=float, default=0.2)
    parser.add_argument("--main-thread", action="store_true", help="run the loop in the main thread")
    args = parser.parse_args()
    failures = Failures()
    logging.getLogger("askdocs.retriever").addHandler(failures)
    logging.getLogger("askdocs.retriever").setLevel(logging.INFO)
    result: dict = {}

    def body() -> None:
        if args.loop == "uvloop":
            import uvloop
            loop = uvloop.new_event_loop()
        else:
            loop = asyncio.new_event_loop()
        result.update(loop.run_until_complete(run(args.kills, args.gap_s)))
        loop.close()

    if args.main_thread:
        body()
    else:
        t = threading.Thread(target=body)
        t.start()
        t.join()
    calls = result["calls"]
    print(json.dumps({"loop": args.loop, "thread": "main" if args.main_thread else "other",
                      "kills": args.kills, "restarts": result["restarts"],
                      "failed_calls": sum(not c["ok"] for c in calls),
                      "slowest_call_after_kill_s": max(c["s"] for c in calls), "calls": calls,
                      "start_failures": [m for _, m in failures.lines if "could not start" in m][:10]}, indent=1))


if __name__ == "__main__":
    main()

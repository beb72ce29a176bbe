"""Time to the first byte of an SSE answer, before and after sources-at-accept
(issue 15 item 5), on the embedded default (serve_config.yaml's args: the
extractive engine) over the real `docindex serve-mcp`, in-process (ASGI).

Before the change the ingress sent nothing until the first token, so the
first byte came with it; now the `sources` event is sent when the Generator
accepted the request. One run measures both on the current code: the time
to the `sources` frame (first byte now) and to the first `token` frame
(first byte before). Same questions, each asked --rounds times, sequential;
later rounds find the engine's sentence vectors cached, so the first round
is also reported alone.

    .venv/bin/python benchmarks/sources_ttfb.py [--db var/demo.db] [--rounds 3]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.docindex_common import REPO, machine, percentiles, write_results  # noqa: E402

QUESTIONS = [       # the README's and the banner's own examples, and a few more about its docs
    "How do I run askdocs on a GPU?", "What does make run do?", "How do I point askdocs at my own documents?",
    "How do I remove a collection from an index?", "What does the web page show for a refusal?",
    "Which engine answers by default?", "How do I run the load test?", "What does make test run?",
]


async def one(app: Any, question: str) -> tuple[float, float]:
    """(ms to the sources frame, ms to the first token frame) for one SSE answer."""
    body = [{"type": "http.request", "body": json.dumps({"question": question}).encode(), "more_body": False}]
    marks: dict[str, float] = {}
    done = asyncio.Event()
    start = time.perf_counter()

    async def receive() -> dict[str, Any]:
        if body:
            return body.pop(0)
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] != "http.response.body":
            return
        now = 1000 * (time.perf_counter() - start)
        for name in ("sources", "token"):
            if f"event: {name}\n".encode() in message.get("body", b"") and name not in marks:
                marks[name] = now
        if not message.get("more_body"):
            done.set()

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "scheme": "http", "path": "/ask", "raw_path": b"/ask", "query_string": b"",
             "root_path": "", "headers": [(b"content-type", b"application/json")], "client": ("127.0.0.1", 1),
             "server": ("bench", 80)}
    await app(scope, receive, send)
    return marks["sources"], marks.get("token", marks["sources"])


async def run(db: str, rounds: int) -> dict[str, Any]:
    from serve_app.app import load_settings
    from serve_app.ingress import create_app
    from serve_app.local import build_local_pipeline

    (shipped,) = yaml.safe_load((REPO / "serve_config.yaml").read_text())["applications"]
    settings = load_settings({**shipped["args"], "db": str(Path(db).resolve())})
    pipeline = await build_local_pipeline(settings)
    try:
        app = create_app(pipeline, settings)
        await one(app, QUESTIONS[0])                    # warm-up: embedder and engine loaded, not counted
        sources, tokens = [], []
        for _ in range(rounds):
            for question in QUESTIONS:
                s, t = await one(app, question)
                sources.append(s)
                tokens.append(t)
    finally:
        await pipeline.close()
    cold = len(QUESTIONS)      # the first round: the engine has embedded none of these passages' sentences yet
    return {"engine": settings.engine, "n": len(sources), "first_byte_now_sources_ms": percentiles(sources),
            "first_byte_before_first_token_ms": percentiles(tokens),
            "gained_ms": percentiles([t - s for s, t in zip(sources, tokens)]),
            "gained_first_round_ms": percentiles([t - s for s, t in zip(sources[:cold], tokens[:cold])])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="var/demo.db")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    info = machine()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    result = asyncio.run(run(args.db, args.rounds))
    payload = {"machine": info | {"commit": commit.strip()}, "db": args.db, **result}
    rows = [("first byte now (`sources`)", result["first_byte_now_sources_ms"]),
            ("first byte before (first `token`)", result["first_byte_before_first_token_ms"]),
            ("gained per answer", result["gained_ms"]),
            ("gained, first round only (cold engine cache)", result["gained_first_round_ms"])]
    setup = (f"{info['machine']}, {info['date']}, commit {commit.strip()}, load {info['load_avg_1m_at_start']}; "
             f"engine {result['engine']} (serve_config.yaml args), {args.db}, in-process ASGI, "
             f"{len(QUESTIONS)} questions x {args.rounds}, sequential (n={result['n']}).")
    table = ["| | P50 ms | P95 ms |", "|---|---|---|"] + [f"| {name} | {v['p50']} | {v['p95']} |" for name, v in rows]
    markdown = "\n".join(["# First byte of an SSE answer: sources at accept vs first token", "", setup, "", *table]) + "\n"
    write_results("sources_ttfb", payload, markdown)


if __name__ == "__main__":
    main()

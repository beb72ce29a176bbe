"""MCP round trip of `crag_search` (query embedding included) on a ~20k-chunk index.

    .venv/bin/python benchmarks/mcp_roundtrip.py [--chunks 20000] [--calls 500] [--out benchmarks/results/mcp_roundtrip.md]

1. Index corpora/cmcp with the real embedder (once; kept in --workdir).
2. Scale it up to --chunks by copying its documents under new source names:
   each copy drops a different ~15% of the words of every chunk (text and
   BM25 body) and jitters the vector slightly, so BM25 posting lists and the
   dense matrix have the size of a real 20k-chunk index without embedding
   20k chunks (~25 chunks/s here). Latency depends on the sizes, not on what
   the words mean.
3. Start `docindex serve-mcp` as a subprocess, connect the official client
   over stdio from this process, warm up, then time --calls sequential
   `crag_search` calls (k=5) over a fixed set of questions.

The per-stage split (embed, dense, bm25) comes from `Index.search(timings=…)`
run in this process on the same index, for context. The load average is
recorded because the development machine is shared.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import anyio
import numpy as np

from serve_app.percentile import percentile as nearest_rank

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "corpora" / "cmcp"

QUESTIONS = [
    "how do I register a tool with an input schema",
    "maximum frame size on the stdio transport",
    "crag_search relevance threshold cosine",
    "HTTP transport bearer token authentication",
    "elicitation request from the server",
    "pagination cursor for tools/list",
    "set the logging level of the server",
    "ping keepalive between client and server",
    "roots list changed notification",
    "sampling createMessage from a tool handler",
    "subscribe to resource updates",
    "progress notifications for long tool calls",
    "cancel an in-flight request",
    "schema validation error message for tool arguments",
    "worker pool for blocking handlers",
    "build the library with cmake and install it",
    "fuzzing the JSON parser",
    "SSRF guard for the HTTP client",
    "session lifecycle initialize and shutdown",
    "structured output of a tool result",
    "what changed in version 0.10",
    "record wire transcripts with cmcp-tee",
    "dogfood notes on the crag host",
    "rate limits and handler resource limits",
]


def percentile(values: list[float], q: float) -> float:
    """serve_app.percentile's nearest rank (the one definition)."""
    value = nearest_rank(values, q)
    return float("nan") if value is None else value


def build_base_index(workdir: Path) -> Path:
    from docindex.ingest import ingest

    db = workdir / "cmcp.db"
    report = ingest([CORPUS], db, "cmcp")
    print(f"base index: {report.summary()}", file=sys.stderr)
    return db


def scale_index(base: Path, target: Path, chunks_wanted: int, seed: int = 7) -> int:
    """Copy `base` to `target` and grow it to about `chunks_wanted` chunks; returns the chunk count."""
    from docindex import store

    for suffix in ("", "-wal", "-shm"):
        Path(f"{target}{suffix}").unlink(missing_ok=True)
    with sqlite3.connect(base) as source:
        source.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copyfile(base, target)
    rng = np.random.default_rng(seed)
    conn, _meta = store.open_for_ingest(target)
    try:
        documents = conn.execute(
            "SELECT id, collection, source, path, sha256, size, mtime_ns, title, metadata FROM documents"
        ).fetchall()
        chunks = conn.execute(
            "SELECT c.doc_id, c.ordinal, c.level, c.anchor, c.heading_path, c.text, f.body, v.embedding "
            "FROM chunks c JOIN chunks_fts f ON f.rowid = c.id JOIN vectors v ON v.chunk_id = c.id "
            "ORDER BY c.doc_id, c.ordinal"
        ).fetchall()
        by_doc: dict[int, list[tuple]] = {}
        for row in chunks:
            by_doc.setdefault(row[0], []).append(row[1:])
        base_count = len(chunks)
        copies = max(0, round(chunks_wanted / max(base_count, 1)) - 1)
        conn.execute("BEGIN IMMEDIATE")
        for copy in range(1, copies + 1):
            for doc_id, collection, source, path, sha, size, mtime, title, _metadata in documents:
                new_id = store.insert_document(
                    conn, collection=collection, source=f"scaled/{copy:03d}/{source}", path=path,
                    sha256=f"{sha[:56]}{copy:08x}", size=size, mtime_ns=mtime, title=title, metadata={},
                )
                rows, vectors = [], []
                for ordinal, level, anchor, heading_path, text, body, blob in by_doc.get(doc_id, []):
                    rows.append((ordinal, level, anchor, tuple(json.loads(heading_path)),
                                 _drop_words(text, rng), _drop_words(body, rng)))
                    vector = np.frombuffer(blob, dtype=np.float32) + rng.normal(0, 0.01, size=len(blob) // 4)
                    vectors.append(vector / np.linalg.norm(vector))
                if rows:
                    store.insert_chunks(conn, new_id, collection, rows, np.asarray(vectors, dtype=np.float32))
        store.bump_index_version(conn)
        conn.execute("COMMIT")
        total = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    finally:
        conn.close()
    return int(total)


def _drop_words(text: str, rng: np.random.Generator, rate: float = 0.15) -> str:
    words = text.split(" ")
    keep = rng.random(len(words)) >= rate
    return " ".join(w for w, k in zip(words, keep) if k)


def process_cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def time_round_trips(db: Path, calls: int, warmup_calls: int) -> tuple[list[float], float, dict[str, float]]:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "docindex.cli", "serve-mcp", "--db", str(db)], cwd=str(REPO)
    )
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=60) as client:
        connect_s = time.perf_counter() - started
        for i in range(warmup_calls):
            await client.call_tool("crag_search", {"query": QUESTIONS[i % len(QUESTIONS)], "k": 5})
        stats = await client.read_resource("docindex://stats")
        server_pid = json.loads(stats.contents[0].text)["server_pid"]
        samples = []
        server_cpu, client_cpu = process_cpu_seconds(server_pid), time.process_time()
        for i in range(calls):
            question = QUESTIONS[i % len(QUESTIONS)]
            t0 = time.perf_counter()
            result = await client.call_tool("crag_search", {"query": question, "k": 5})
            samples.append((time.perf_counter() - t0) * 1e3)
            assert not result.is_error and len(result.content) == 5, result.content[0].text
        # CPU time per call barely depends on what else runs on the machine, unlike wall time.
        cpu = {
            "server": (process_cpu_seconds(server_pid) - server_cpu) * 1e3 / calls,
            "client": (time.process_time() - client_cpu) * 1e3 / calls,
        }
        # The MCP layer alone: a call refused by argument validation never reaches the index.
        server_cpu, client_cpu = process_cpu_seconds(server_pid), time.process_time()
        for _ in range(calls):
            assert (await client.call_tool("crag_search", {"query": ""})).is_error
        cpu["server_mcp_only"] = (process_cpu_seconds(server_pid) - server_cpu) * 1e3 / calls
        cpu["client_mcp_only"] = (time.process_time() - client_cpu) * 1e3 / calls
    return samples, connect_s, cpu


def stage_split(db: Path, rounds: int = 3) -> dict[str, float]:
    """Median wall ms of each stage of `Index.search`, and its median CPU ms, in this process."""
    from threadpoolctl import threadpool_limits

    from docindex.index import Index

    threadpool_limits(limits=1, user_api="blas")  # as the server runs it
    index = Index(db)
    index.search(QUESTIONS[0], 5)
    stages: dict[str, list[float]] = {"search_cpu": []}
    for _ in range(rounds):
        for question in QUESTIONS:
            timings: dict[str, float] = {}
            started = time.process_time()
            index.search(question, 5, timings=timings)
            stages["search_cpu"].append((time.process_time() - started) * 1e3)
            for name, ms in timings.items():
                stages.setdefault(name, []).append(ms)
    index.close()
    return {name: percentile(values, 50) for name, values in stages.items()}


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{affinity} usable cores of {os.cpu_count()} ({cpu}), {mem_gib:.0f} GiB RAM, no GPU used"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--workdir", type=Path, default=REPO / "var" / "bench")
    parser.add_argument("--out", type=Path, default=None, help="write a markdown report here")
    args = parser.parse_args()

    args.workdir.mkdir(parents=True, exist_ok=True)
    base = build_base_index(args.workdir)
    scaled = args.workdir / f"cmcp-x{args.chunks}.db"
    total = scale_index(base, scaled, args.chunks)
    print(f"scaled index: {total} chunks at {scaled}", file=sys.stderr)

    load_before = os.getloadavg()
    samples, connect_s, cpu = anyio.run(time_round_trips, scaled, args.calls, args.warmup)
    load_after = os.getloadavg()
    split = stage_split(scaled)

    p50, p95, p99 = (percentile(samples, q) for q in (50, 95, 99))
    summary = {
        "chunks": total,
        "calls": len(samples),
        "p50_ms": round(p50, 2),
        "p95_ms": round(p95, 2),
        "p99_ms": round(p99, 2),
        "mean_ms": round(statistics.fmean(samples), 2),
        "max_ms": round(max(samples), 2),
        "cpu_ms_per_call": {k: round(v, 2) for k, v in cpu.items()},
        "server_start_and_handshake_s": round(connect_s, 2),
        "in_process_median_ms": {k: round(v, 2) for k, v in split.items()},
        "loadavg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
    }
    print(summary)
    if args.out:
        write_report(args, summary)


def write_report(args: argparse.Namespace, summary: dict) -> None:
    stages = dict(summary["in_process_median_ms"])
    search_cpu = stages.pop("search_cpu")
    split = ", ".join(f"{k} {v} ms" for k, v in stages.items())
    cpu = summary["cpu_ms_per_call"]
    command = "python benchmarks/mcp_roundtrip.py " + " ".join(sys.argv[1:])
    text = f"""# MCP round trip: `crag_search` on ~20k chunks

| | |
|---|---|
| command | `{command}` |
| date | {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC |
| machine | {machine()} |
| load average (1 min) before / after | {summary["loadavg_1m_before_after"][0]} / {summary["loadavg_1m_before_after"][1]} |
| index | {summary["chunks"]} chunks (cmcp corpus copied with word dropout and jittered vectors; see the script) |
| client | official `mcp` client in another process, stdio, sequential calls, k=5 |

| calls | P50 | P95 | P99 | mean | max |
|---|---|---|---|---|---|
| {summary["calls"]} | {summary["p50_ms"]} ms | {summary["p95_ms"]} ms | {summary["p99_ms"]} ms | {summary["mean_ms"]} ms | {summary["max_ms"]} ms |

Target: ≤ 8 ms P50 / ≤ 20 ms P95 on an idle 2-core machine.

CPU time per call depends far less than wall time on what else runs (contention
still inflates it somewhat). On an idle machine a sequential call takes about the
client's plus the server's CPU time:

| | server | client |
|---|---|---|
| `crag_search` round trip (mean) | {cpu["server"]} ms | {cpu["client"]} ms |
| MCP layer only: a round trip refused by argument validation (mean) | {cpu["server_mcp_only"]} ms | {cpu["client_mcp_only"]} ms |
| `Index.search` in-process, same index (median) | {search_cpu} ms | |

CPU per round trip, client + server: {round(cpu["server"] + cpu["client"], 2)} ms against the 8 ms P50 target
({"within" if cpu["server"] + cpu["client"] <= 8 else "over"}); the MCP layer's share is
{round(cpu["server_mcp_only"] + cpu["client_mcp_only"], 2)} ms, the rest is `Index.search`.
{"Wall times above were taken on a busy machine and are not an idle figure." if summary["loadavg_1m_before_after"][0] > 1.5 else ""}

In-process wall split of `Index.search` (median): {split}.
Server start + handshake: {summary["server_start_and_handshake_s"]} s.
"""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()

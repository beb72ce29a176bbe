"""What tracing adds to one answer: the span tree's cost, with and without export.

Run: .venv/bin/python benchmarks/tracing_overhead.py [--answers 3000]

Each "answer" makes exactly the spans the ingress and the Retriever make
(askdocs.answer, retrieval, the MCP call under an extracted carrier, gate,
generation with a first_token event and token attributes, citations), and
nothing else, so the numbers are tracing's own cost. Modes:

* ``none``  – the same code path with tracing calls removed (baseline)
* ``off``   – tracing set up without an endpoint (the default): sampling off
* ``otlp``  – OTLP/HTTP exporter (batch, background thread) to a stand-in
  receiver on 127.0.0.1 (tests/ops/otlp_receiver.py, its own process) that
  decodes every request

Latency is the caller's time per answer; CPU is the process's CPU time per
answer including the background export, measured up to the final flush.
Writes benchmarks/results/tracing_overhead.json and prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from deployments import tracing  # noqa: E402

_RECEIVER = """
import sys
from tests.ops.otlp_receiver import OtlpReceiver
with OtlpReceiver() as rx:
    print(rx.endpoint, flush=True)
    sys.stdin.read()
    print(len(rx.spans()), flush=True)
"""


def untraced_answer() -> None:
    carrier = {"traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}
    _ = dict(carrier)
    for _stage in ("retrieval", "gate", "generation", "citations"):
        pass


def traced_answer() -> None:
    with tracing.answer_span() as answer:
        with tracing.child_span("retrieval", answer, k=5) as retrieval:
            carrier = tracing.inject(retrieval)
            with tracing.child_span("tools/call crag_search", tracing.extract(carrier)):
                pass
        with tracing.child_span("gate", answer):
            pass
        with tracing.child_span("generation", answer) as generation:
            tracing.first_token_event(generation)
            tracing.record_generation(generation, input_tokens=400, output_tokens=120, finish_reason="stop")
        with tracing.child_span("citations", answer):
            pass
        tracing.trace_id_hex(answer)


def measure(answer: Callable[[], None], n: int, finish: Callable[[], None]) -> dict[str, float]:
    for _ in range(200):  # warm-up
        answer()
    samples = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(n):
        t0 = time.perf_counter()
        answer()
        samples.append(time.perf_counter() - t0)
    finish()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    samples.sort()
    return {
        "p50_us": samples[len(samples) // 2] * 1e6,
        "p95_us": samples[int(len(samples) * 0.95)] * 1e6,
        "mean_us": statistics.fmean(samples) * 1e6,
        "cpu_per_answer_us": cpu / n * 1e6,
        "wall_per_answer_us": wall / n * 1e6,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=3000)
    n = parser.parse_args().answers

    results: dict[str, dict[str, float]] = {}
    results["none"] = measure(untraced_answer, n, lambda: None)

    tracing.shutdown_tracing()
    tracing.setup_tracing("askdocs-bench", None)
    results["off"] = measure(traced_answer, n, tracing.shutdown_tracing)

    # Answers here come back to back, far faster than any real service: let the
    # queue hold them all, so the export cost is counted rather than dropped
    # (the default 2048-span queue drops when full and never blocks a request).
    os.environ.setdefault("OTEL_BSP_MAX_QUEUE_SIZE", str((n + 200) * 6))
    # The receiver runs in its own process so its decoding is not billed to
    # the answers' CPU time.
    receiver = subprocess.Popen(
        [sys.executable, "-c", _RECEIVER], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        endpoint = receiver.stdout.readline().strip()
        tracing.setup_tracing("askdocs-bench", endpoint)
        results["otlp"] = measure(traced_answer, n, tracing.shutdown_tracing)
        out_text, _ = receiver.communicate("", timeout=60)
        exported = int(out_text.strip())
    finally:
        if receiver.poll() is None:
            receiver.kill()
    expected = (n + 200) * 6
    if exported != expected:
        raise SystemExit(f"receiver got {exported} spans, expected {expected}: export dropped spans")

    record = {
        "script": "benchmarks/tracing_overhead.py",
        "answers": n,
        "date": date.today().isoformat(),
        "python": platform.python_version(),
        "machine": "2-core x86-64 VM, 24 GiB, no GPU",
        "spans_per_answer": 6,
        "results": results,
    }
    out = REPO / "benchmarks" / "results" / "tracing_overhead.json"
    out.write_text(json.dumps(record, indent=2) + "\n")

    print("| mode | latency P50 µs | latency P95 µs | CPU per answer µs (incl. export) |")
    print("|---|---|---|---|")
    for mode, r in results.items():
        print(f"| {mode} | {r['p50_us']:.1f} | {r['p95_us']:.1f} | {r['cpu_per_answer_us']:.1f} |")
    print(f"\nwritten {out.relative_to(REPO)}; {exported} spans received by the stand-in collector")


if __name__ == "__main__":
    main()

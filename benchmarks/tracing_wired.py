"""What tracing adds to one answer as wired in the graph (serve_app/answer.py).

Run: .venv/bin/python benchmarks/tracing_wired.py [--answers 2000]

benchmarks/tracing_overhead.py measures the 6-span tree that was planned;
the wired graph makes 5 spans in the ingress (answer + 4 stages, each with a
carrier) and one span in each of the 4 deployments. With tracing off the
ingress sends no carrier and the deployments make no span. Modes:

* ``off``            – no endpoint (the default), whole answer
* ``otlp_all``       – OTLP/HTTP to the stand-in receiver, all 9 spans in one
  process (the shape of LocalPipeline)
* ``otlp_ingress``   – OTLP/HTTP, only the ingress process's share on Serve
  (5 spans, 4 carriers); each deployment adds one span in its own process

Same method as tracing_overhead.py (its `measure`): 200 warm-up answers, then
N timed; CPU includes the background export. Prints a markdown table and
writes benchmarks/results/tracing_wired.json.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from tracing_overhead import _RECEIVER, measure  # noqa: E402

from deployments import tracing  # noqa: E402

STAGES = (("retrieval", "tools/call crag_search"), ("gate", "gate.decide"),
          ("generation", "generator.stream"), ("citations", "citations.check"))
TRACE_ID = "1" * 32


def whole_answer() -> None:
    with tracing.answer_span(trace_id=TRACE_ID) as answer:
        for stage, deployment_span in STAGES:
            with tracing.child_span(stage, answer) as span:
                carrier = tracing.inject(span) if span.is_recording() else None
                with tracing.replica_span(deployment_span, carrier):
                    pass
                if stage == "generation":
                    tracing.first_token_event(span)
                    tracing.record_generation(span, input_tokens=400, output_tokens=120, finish_reason="stop")
        tracing.trace_id_hex(answer)


def ingress_share() -> None:
    with tracing.answer_span(trace_id=TRACE_ID) as answer:
        for stage, _ in STAGES:
            with tracing.child_span(stage, answer) as span:
                if span.is_recording():
                    tracing.inject(span)
                if stage == "generation":
                    tracing.first_token_event(span)
                    tracing.record_generation(span, input_tokens=400, output_tokens=120, finish_reason="stop")
        tracing.trace_id_hex(answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=2000)
    n = parser.parse_args().answers

    results = {}
    tracing.shutdown_tracing()
    tracing.setup_tracing("askdocs-bench", None)
    results["off"] = measure(whole_answer, n, tracing.shutdown_tracing)

    os.environ.setdefault("OTEL_BSP_MAX_QUEUE_SIZE", str((n + 200) * 14))   # count export, never drop
    receiver = subprocess.Popen([sys.executable, "-c", _RECEIVER], cwd=REPO, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    try:
        tracing.setup_tracing("askdocs-bench", receiver.stdout.readline().strip())
        results["otlp_all"] = measure(whole_answer, n, lambda: tracing._setup.provider.force_flush())
        results["otlp_ingress"] = measure(ingress_share, n, tracing.shutdown_tracing)
        exported = int(receiver.communicate("", timeout=60)[0].strip())
    finally:
        if receiver.poll() is None:
            receiver.kill()
    if exported != (n + 200) * 14:
        raise SystemExit(f"receiver got {exported} spans, expected {(n + 200) * 14}")

    out = REPO / "benchmarks" / "results" / "tracing_wired.json"
    out.write_text(json.dumps({"script": "benchmarks/tracing_wired.py", "answers": n, "date": date.today().isoformat(),
                               "python": platform.python_version(), "machine": "2-core x86-64 VM, 24 GiB, no GPU",
                               "load_average": os.getloadavg()[0], "results": results}, indent=2) + "\n")
    print("| mode | latency P50 µs | latency P95 µs | CPU per answer µs (incl. export) |")
    print("|---|---|---|---|")
    for mode, r in results.items():
        print(f"| {mode} | {r['p50_us']:.1f} | {r['p95_us']:.1f} | {r['cpu_per_answer_us']:.1f} |")


if __name__ == "__main__":
    main()

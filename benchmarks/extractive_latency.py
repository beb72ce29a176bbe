"""Time the extractive engine after retrieval: `ExtractiveEngine.choose` per question.

The 66 dev cases are searched once (k = the prompt's 4 sources, as served),
then each answer is chosen by engines started as served (`start()`), every
case once per pass:

* static cold — the default (`embedder: static`), a fresh engine: static token
          vectors for every candidate, MiniLM for the best sentence's floor;
* static warm — the same engine again (its MiniLM cache holds the floors);
* minilm cold / warm — `embedder: minilm`: the EMBED_TOP best candidates by
          term overlap embedded with MiniLM, then the same engine again;
* lexical — `embedder: none` (term overlap only), the floor of the cost.

    python benchmarks/extractive_latency.py [--db var/eval.db]   # writes benchmarks/results/extractive_latency.*
"""
from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.docindex_common import REPO, machine, percentiles, write_results  # noqa: E402


def timed(engine, cases, contexts) -> list[float]:
    out = []
    for case in cases:
        start = time.perf_counter()
        engine.choose(case.question, contexts[case.id], 256)
        out.append(1000 * (time.perf_counter() - start))
    return out


def main() -> None:
    from deployments.engines.extractive import EMBED_TOP, ExtractiveEngine
    from evals.extractive_tune import dev_args, dev_contexts

    args = dev_args(__doc__)

    cases, contexts = dev_contexts(args.db, args.collection)
    modes: dict[str, list[float]] = {}
    for embedder in ("static", "minilm", "none"):
        engine = ExtractiveEngine(embedder=embedder)
        asyncio.run(engine.start())        # loads what is served: MiniLM, the static table
        label = {"none": "lexical"}.get(embedder, embedder)
        modes[f"{label} cold"] = timed(engine, cases, contexts)
        if embedder != "none":
            modes[f"{label} warm"] = timed(engine, cases, contexts)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    payload = {"machine": machine(), "commit": commit, "cases": len(cases), "embed_top": EMBED_TOP,
               "ms": {mode: percentiles(values) for mode, values in modes.items()}}
    rows = "\n".join(f"| {mode} | {v['p50']:.1f} | {v['p95']:.1f} |" for mode, v in payload["ms"].items())
    info = payload["machine"]
    markdown = (f"# Extractive engine: time after retrieval\n\n`python benchmarks/extractive_latency.py`, "
                f"{info['machine']}, {info['date']}, commit {commit}, load {info['load_avg_1m_at_start']} at start; "
                f"{len(cases)} dev cases, one `choose()` each per pass (`embedder: minilm` embeds EMBED_TOP={EMBED_TOP}).\n\n"
                f"| pass | P50 ms | P95 ms |\n|---|---:|---:|\n{rows}\n")
    write_results("extractive_latency", payload, markdown)


if __name__ == "__main__":
    main()

"""Time the extractive engine after retrieval: `ExtractiveEngine.choose` per question.

The 66 dev cases are searched once (k = the prompt's 4 sources, as served),
then each answer is chosen by engines started as served (`start()`), every
case once per pass:

* static cold — the default (`embedder: static`), a fresh engine: static token
          vectors for every candidate, MiniLM for the best sentence's floor;
* static warm — the same engine again (its MiniLM cache holds the floors);
* minilm cold / warm — `embedder: minilm`: the EMBED_TOP best candidates by
          term overlap embedded with MiniLM, then the same engine again;
* lexical — `embedder: none` (term overlap only), the floor of the cost;
* minilm stored cold / static stored cold — fresh engines given the passages
          with the sentence vectors ingest stored (docindex/quotable.py), as the
          served Retriever sends them: only the question, and any sentence
          without a stored vector (one cut by the prompt's 900-character clip),
          is embedded per answer. The default (`embedder: minilm`) is this pass
          when the index has them (`docindex ingest`'s default).

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


def stored_share(engine, contexts) -> tuple[int, int]:
    """Candidate sentences with a stored vector, of all candidates (the rest are embedded per answer)."""
    from deployments.engines.extractive import candidates

    found = {key: candidates(passages) for key, passages in contexts.items()}
    have = sum(v is not None for key, passages in contexts.items()
               for v in engine.stored_vectors(passages, found[key]))
    return have, sum(len(f) for f in found.values())


def main() -> None:
    from deployments.engines.extractive import EMBED_TOP, ExtractiveEngine
    from evals.extractive_tune import dev_args, dev_contexts

    args = dev_args(__doc__)

    cases, contexts = dev_contexts(args.db, args.collection)
    _, stored = dev_contexts(args.db, args.collection, quotes=True)
    if not any(p.quote_vectors for ps in stored.values() for p in ps):
        sys.exit(f"{args.db} has no quote vectors: rebuild it (python -m evals.build_index)")
    modes: dict[str, list[float]] = {}
    have = total = 0
    for embedder in ("static", "minilm", "none"):
        engine = ExtractiveEngine(embedder=embedder)
        asyncio.run(engine.start())        # loads what is served: MiniLM, the static table
        label = {"none": "lexical"}.get(embedder, embedder)
        modes[f"{label} cold"] = timed(engine, cases, contexts)
        if embedder != "none":
            modes[f"{label} warm"] = timed(engine, cases, contexts)
            engine = ExtractiveEngine(embedder=embedder)
            asyncio.run(engine.start())
            modes[f"{label} stored cold"] = timed(engine, cases, stored)
            if embedder == "minilm":
                have, total = stored_share(engine, stored)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    payload = {"machine": machine(), "commit": commit, "cases": len(cases), "embed_top": EMBED_TOP,
               "stored_candidates": {"with_vector": have, "all": total},
               "ms": {mode: percentiles(values) for mode, values in modes.items()}}
    rows = "\n".join(f"| {mode} | {v['p50']:.1f} | {v['p95']:.1f} |" for mode, v in payload["ms"].items())
    info = payload["machine"]
    markdown = (f"# Extractive engine: time after retrieval\n\n`python benchmarks/extractive_latency.py`, "
                f"{info['machine']}, {info['date']}, commit {commit}, load {info['load_avg_1m_at_start']} at start; "
                f"{len(cases)} dev cases, one `choose()` each per pass (`embedder: minilm` embeds EMBED_TOP={EMBED_TOP}). "
                f"Stored passes: {have} of {total} candidate sentences had a stored vector (the rest were cut by "
                f"the prompt's clip).\n\n"
                f"| pass | P50 ms | P95 ms |\n|---|---:|---:|\n{rows}\n")
    write_results("extractive_latency", payload, markdown)


if __name__ == "__main__":
    main()

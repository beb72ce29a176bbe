"""What continuous batching could give llama.cpp on this box: one context, several sequences.

    .venv/bin/python benchmarks/llamacpp_batch.py [--steps 32] [--sequences 1,2,4]

Issue 12 item 3 asks llama.cpp to match vLLM-CPU's 4-concurrent aggregate. The engine runs one
sequence per `Llama` context (deployments/engines/llamacpp.py); llama-cpp-python's low-level API
can put several sequences in one `llama_decode` batch, as llama-server does. This measures that
directly, before anyone builds it: the served weights (`weights: auto`, BF16 on an AVX512_BF16
CPU), 2 threads, flash attention, one context with `n_seq_max` = 4 (a 2,048-token KV cache per
sequence). Each sequence is prefilled with the ~1.4k-token prompt of benchmarks/engines.py (in
512-token micro-batches), then `--steps` decode steps are timed with 1, 2 and 4 sequences in
the batch (one token each, at the position after the prompt; the KV cell is freed after each
step so every step sees the same context length). Sampling is left out: it is per sequence and
the same with or without batching.

Writes benchmarks/results/llamacpp_batch.{json,md}.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.engines import git_commit  # noqa: E402
from benchmarks.llamacpp_prefill import prompt_tokens  # noqa: E402
from deployments.engines.gguf_convert import AUTO, convert_gguf, resolve_weights  # noqa: E402
from deployments.engines.models import default_gguf  # noqa: E402

MAX_SEQUENCES = 4
N_BATCH = 512
CTX_PER_SEQUENCE = 2048


def main() -> None:
    import llama_cpp
    from llama_cpp import _internals as internals

    from deployments.engines.llamacpp_load import amx_quantized, load_llama

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--sequences", default="1,2,4")
    args = parser.parse_args()
    counts = [int(n) for n in args.sequences.split(",")]
    if not counts or min(counts) < 1 or max(counts) > MAX_SEQUENCES:
        parser.error(f"--sequences: numbers from 1 to {MAX_SEQUENCES}")
    weights = resolve_weights(AUTO, default_model=True, amx=amx_quantized)
    path = str(convert_gguf(default_gguf(), weights))
    info = machine() | {"commit": git_commit(), "weights": weights, "threads": 2}
    llm = load_llama(path, n_ctx=512, verbose=False)      # the model and tokenizer; its own context unused
    params = llama_cpp.llama_context_default_params()
    params.n_ctx, params.n_batch, params.n_ubatch = CTX_PER_SEQUENCE * MAX_SEQUENCES, N_BATCH, N_BATCH
    params.n_seq_max, params.n_threads, params.n_threads_batch = MAX_SEQUENCES, 2, 2
    params.flash_attn_type, params.kv_unified = 1, False
    ctx = internals.LlamaContext(model=llm._model, params=params, verbose=False)
    batch = internals.LlamaBatch(n_tokens=N_BATCH, embd=0, n_seq_max=MAX_SEQUENCES)
    tokens = prompt_tokens(llm)
    b = batch.batch

    started = time.perf_counter()
    for seq in range(MAX_SEQUENCES):
        for at in range(0, len(tokens), N_BATCH):
            chunk = tokens[at:at + N_BATCH]
            b.n_tokens = len(chunk)
            for i, token in enumerate(chunk):
                b.token[i], b.pos[i], b.n_seq_id[i] = token, at + i, 1
                b.seq_id[i][0], b.logits[i] = seq, at + i == len(tokens) - 1
            ctx.decode(batch)
    prefill_s = time.perf_counter() - started

    rows = []
    for count in counts:
        load1 = os.getloadavg()[0]
        started = time.perf_counter()
        for step in range(args.steps):
            b.n_tokens = count
            for seq in range(count):
                b.token[seq], b.pos[seq], b.n_seq_id[seq] = tokens[step], len(tokens), 1
                b.seq_id[seq][0], b.logits[seq] = seq, True
            ctx.decode(batch)
            for seq in range(count):
                llama_cpp.llama_memory_seq_rm(ctx.memory, seq, len(tokens), -1)
        step_s = (time.perf_counter() - started) / args.steps
        rows.append({"sequences": count, "step_ms": round(step_s * 1000, 1),
                     "aggregate_tok_s": round(count / step_s, 1), "load1": round(load1, 1)})
    prefill = {"sequences": MAX_SEQUENCES, "prompt_tokens": len(tokens), "seconds": round(prefill_s, 2),
               "tok_s": round(MAX_SEQUENCES * len(tokens) / prefill_s, 1)}
    markdown = "\n".join([
        "# llama.cpp: several sequences in one decode batch (SmolLM2-135M-Instruct)", "",
        f"`python benchmarks/llamacpp_batch.py --steps {args.steps}` — {info['machine']}, {info['date']}, "
        f"commit {info['commit']}, weights {weights}, 2 threads, flash attention, n_batch {N_BATCH}; "
        f"load average at start {info['load_avg_1m_at_start']}.", "",
        f"Prefill: {MAX_SEQUENCES} × {len(tokens)} tokens in {prefill['seconds']} s ({prefill['tok_s']} tok/s).", "",
        "| sequences in the batch | decode step | aggregate decode | load (1 min) |", "|---|---|---|---|",
        *[f"| {r['sequences']} | {r['step_ms']} ms | {r['aggregate_tok_s']} tok/s | {r['load1']} |" for r in rows],
        "", "Each step decodes one token per sequence at the position after the prompt (the same context "
        "length every step); sampling is not included.", ""])
    write_results("llamacpp_batch", {"machine": info, "prefill": prefill, "decode": rows}, markdown)
    ctx.close()
    llm.close()


if __name__ == "__main__":
    main()

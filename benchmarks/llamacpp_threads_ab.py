"""Interleaved A/B of llama.cpp prefill settings on the served F16 weights.

    nice -n 10 .venv/bin/python benchmarks/llamacpp_threads_ab.py --repeats 2

One process loads the F16 default (deployments/engines/gguf_convert.py) once per
setting: n_batch = n_ubatch = 512 with 2 threads (the served default on this
2-core box), the same with 1 thread, 2048/2048 with 2 threads, and 512/512 with
2 threads and flash attention. Each round prefills the ~1.4k-token prompt of
benchmarks/engines.py once per setting in turn (KV cache cleared), so a load
spike hits every setting. Wall tok/s and tok per CPU-second of this process
(with 2 threads it includes the time OpenMP threads spend waiting at barriers)
and the 1-minute load average are recorded per run.
Writes benchmarks/results/llamacpp_threads_ab.json.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.llamacpp_prefill import prompt_tokens  # noqa: E402
from deployments.engines.gguf_convert import convert_gguf  # noqa: E402
from deployments.engines.models import default_gguf  # noqa: E402
from serve_app.percentile import percentile  # noqa: E402

SETTINGS = {
    "n_batch 512 n_ubatch 512, 2 threads": {"n_batch": 512, "n_ubatch": 512, "threads": 2},
    "n_batch 512 n_ubatch 512, 1 thread": {"n_batch": 512, "n_ubatch": 512, "threads": 1},
    "n_batch 2048 n_ubatch 2048, 2 threads": {"n_batch": 2048, "n_ubatch": 2048, "threads": 2},
    "n_batch 512 n_ubatch 512, 2 threads, flash_attn": {"n_batch": 512, "n_ubatch": 512, "threads": 2,
                                                        "flash_attn": True},
}


def main() -> None:
    from llama_cpp import Llama

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    path = str(convert_gguf(default_gguf(), "f16"))
    models = {}
    for name, setting in SETTINGS.items():
        kwargs = dict(setting)
        threads = kwargs.pop("threads")
        models[name] = Llama(model_path=path, n_ctx=4096, n_threads=threads, n_threads_batch=threads,
                             verbose=False, **kwargs)
    tokens = prompt_tokens(next(iter(models.values())))
    load_start = " ".join(f"{x:.1f}" for x in os.getloadavg())
    runs: dict[str, list[dict]] = {name: [] for name in models}
    for _ in range(args.repeats):
        for name, llm in models.items():
            llm.reset()
            load1 = os.getloadavg()[0]
            started, cpu_started = time.perf_counter(), time.process_time()
            llm.eval(tokens)
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
            runs[name].append({"tok_s": round(len(tokens) / wall, 1), "tok_cpu_s": round(len(tokens) / cpu, 1),
                               "load1": round(load1, 1)})
            print(f"{name}: {runs[name][-1]}", file=sys.stderr, flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=False).stdout.strip()
    report = {
        "command": f"python benchmarks/llamacpp_threads_ab.py --repeats {args.repeats}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
        "loadavg_start": load_start, "loadavg_end": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "prompt_tokens": len(tokens),
        "rows": {name: {"tok_s_median": percentile((r["tok_s"] for r in rs), 50),
                        "tok_cpu_s_median": percentile((r["tok_cpu_s"] for r in rs), 50), "runs": rs}
                 for name, rs in runs.items()},
    }
    out = ROOT / "benchmarks" / "results" / "llamacpp_threads_ab.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["rows"], indent=2))


if __name__ == "__main__":
    main()

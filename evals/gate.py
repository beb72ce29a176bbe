"""The quality gate: fresh eval runs against floors (no model, no service needed).

    python -m evals.gate check ENTRY=RUN_DIR [ENTRY=RUN_DIR …]
        CI (`make eval`, evals/live.py): each FRESH run must cover exactly its
        entry's cases (all cases, or the entry's `cases` subset; same ids, same
        case content), have been served by the entry's engine, and clear the
        entry's floors. Every entry of gate.json must be given a run. Metrics are
        recomputed from records.jsonl, never read from report.json. The
        committed baselines in evals/results/ are where floors come from, not
        what is checked.

    python -m evals.gate compare BASE NEW [--entry service]
        Paired bootstrap per metric (same resampled cases for both runs). A
        metric regresses only when the 95 % interval of NEW - BASE excludes
        zero in the bad direction AND the drop exceeds the run-to-run noise
        measured for that metric (gate.json). Exit 1 on any regression of a
        gated metric.

    python -m evals.gate floors ENTRY BASE RERUN [RERUN …]
        Derive an entry of gate.json from a baseline and reruns of the same
        code: noise = largest |rerun - baseline| per metric; margin = one
        case's worth (1/denominator), plus the noise where there is any;
        floor = baseline - margin
        (ceiling = baseline + margin for lower-is-better metrics).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from evals.cases import Case, load_cases
from evals.metrics import METRICS_BY_NAME, aggregate, paired_difference
from evals.report import RunError, load_run

EVALS_DIR = Path(__file__).resolve().parent
REPO_ROOT = EVALS_DIR.parent
GATE_PATH = EVALS_DIR / "gate.json"

# Metrics that carry a floor. Informational ones (anchor recall, refusal counts by
# stage, cited answers) are reported but not gated: they have no "better" side
# on their own (more gate refusals is good off-topic, bad on answerable cases,
# and each of those halves is gated separately).
GATED = {
    "retrieval": ("recall@1", "recall@3", "recall@5", "mrr"),
    "service": ("recall@1", "recall@3", "mrr", "context_recall", "key_fact_recall", "wrong_refusals",
                "wrong_gate_refusals", "correct_refusals", "off_topic_gate_refusals", "invalid_citation_rate",
                "mean_support", "faithfulness", "error_rate"),
}


class GateError(RuntimeError):
    """gate.json or a results folder is unusable."""


def _resolve(path: str | Path) -> Path:
    p = Path(path)
    return p if p.is_absolute() else REPO_ROOT / p


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def load_gate(path: Path = GATE_PATH) -> dict:
    if not path.is_file():
        raise GateError(f"{path} not found: derive it with `python -m evals.gate floors …`")
    return json.loads(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- coverage

def coverage_problems(cases: Sequence[Case], records: dict[str, dict]) -> list[str]:
    """Ids missing or extra, and records made against an older wording of a case."""
    ids = {c.id for c in cases}
    problems = []
    missing, extra = sorted(ids - set(records)), sorted(set(records) - ids)
    if missing:
        problems.append(f"no result for case(s) {missing}")
    if extra:
        problems.append(f"results for unknown case(s) {extra}")
    stale = sorted(c.id for c in cases if c.id in records and records[c.id].get("case_sha") != c.sha)
    if stale:
        problems.append(f"case(s) changed since the run: {stale}")
    return problems


# ---------------------------------------------------------------- check

@dataclass(frozen=True)
class FloorResult:
    metric: str
    value: float | None
    bound: float
    higher_is_better: bool

    @property
    def ok(self) -> bool:
        if self.value is None:
            return False
        return self.value >= self.bound if self.higher_is_better else self.value <= self.bound


def entry_cases(entry: dict, cases: Sequence[Case]) -> list[Case]:
    """The cases an entry is gated on: its `cases` id list, or every case."""
    ids = entry.get("cases")
    return list(cases) if ids is None else [c for c in cases if c.id in set(ids)]


def served_engine(meta: dict) -> str | None:
    """The engine a service run was answered by, as its /healthz said."""
    served = meta.get("served") or {}
    return served.get("engine") or (meta.get("service") or {}).get("engine")


def check_entry(name: str, entry: dict, cases: Sequence[Case], run_dir: Path) -> tuple[list[str], list[FloorResult]]:
    """A fresh run against one entry's floors."""
    try:
        meta, records = load_run(run_dir)
    except RunError as exc:
        return [str(exc)], []
    cases = entry_cases(entry, cases)
    if entry.get("cases") is not None and len(cases) != len(entry["cases"]):
        return [f"{name}: gate.json lists case ids that no longer exist"], []
    problems = [f"{name} ({_rel(run_dir)}): {p}" for p in coverage_problems(cases, records)]
    if entry.get("engine") and served_engine(meta) != entry["engine"]:
        problems.append(f"{name} ({_rel(run_dir)}): served by engine {served_engine(meta)!r}, "
                        f"the floors are for {entry['engine']!r}")
    aggregates = aggregate(cases, records)
    results = []
    for metric_name, floor in entry["metrics"].items():
        agg = aggregates.get(metric_name)
        results.append(FloorResult(metric_name, agg.value if agg else None, floor["bound"],
                                   METRICS_BY_NAME[metric_name].higher_is_better))
    return problems, results


def parse_runs(pairs: Sequence[str]) -> dict[str, Path]:
    runs = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise GateError(f"expected ENTRY=RUN_DIR, got {pair!r}")
        runs[name] = _resolve(path)
    return runs


def cmd_check(gate_path: Path, runs: dict[str, Path]) -> int:
    gate = load_gate(gate_path)
    cases = load_cases()
    unknown = sorted(set(runs) - set(gate["entries"]))
    if unknown:
        raise GateError(f"no gate.json entry named {', '.join(unknown)}")
    failed = False
    for name, entry in gate["entries"].items():
        if name not in runs:
            print(f"\n{name}: FAIL no fresh run given (floors from {entry['results']})")
            failed = True
            continue
        problems, results = check_entry(name, entry, cases, runs[name])
        print(f"\n{name}: {_rel(runs[name])} (floors from {entry['results']})")
        for p in problems:
            print(f"  FAIL coverage: {p}")
        for r in results:
            rel = ">=" if r.higher_is_better else "<="
            value = "missing" if r.value is None else f"{r.value:.3f}"
            print(f"  {'ok  ' if r.ok else 'FAIL'} {r.metric:<24} {value:>8} {rel} {r.bound:.3f}")
        failed = failed or bool(problems) or not all(r.ok for r in results)
    print("\ngate: " + ("FAILED" if failed else "passed"))
    return 1 if failed else 0


# ---------------------------------------------------------------- compare

@dataclass(frozen=True)
class Verdict:
    metric: str
    base: float | None
    new: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    noise: float
    gated: bool
    regression: bool
    improvement: bool


def compare_runs(cases: Sequence[Case], base: dict[str, dict], new: dict[str, dict], noise: dict[str, float],
                 gated: Iterable[str]) -> list[Verdict]:
    gated = set(gated)
    verdicts = []
    for name, metric in METRICS_BY_NAME.items():
        diff = paired_difference(metric, cases, base, new)
        if diff is None:
            continue
        sign = 1.0 if metric.higher_is_better else -1.0
        worse_by = -sign * diff.delta            # > 0: NEW is worse
        excludes_zero_bad = (diff.ci_high < 0) if metric.higher_is_better else (diff.ci_low > 0)
        excludes_zero_good = (diff.ci_low > 0) if metric.higher_is_better else (diff.ci_high < 0)
        n = noise.get(name, 0.0)
        verdicts.append(Verdict(name, diff.base, diff.new, diff.delta, diff.ci_low, diff.ci_high, n,
                                name in gated, excludes_zero_bad and worse_by > n,
                                excludes_zero_good and -worse_by > n))
    return verdicts


def cmd_compare(base_dir: Path, new_dir: Path, entry_name: str | None, gate_path: Path) -> int:
    cases = load_cases()
    base_meta, base = load_run(base_dir)
    _, new = load_run(new_dir)
    entry_name = entry_name or base_meta.get("mode", "service")
    entry = (load_gate(gate_path)["entries"].get(entry_name, {}) if gate_path.is_file() else {})
    noise = {m: f["noise"] for m, f in entry.get("metrics", {}).items()}
    gated = GATED.get(entry.get("mode") or base_meta.get("mode", "service"), ())
    common = set(base) & set(new) & {c.id for c in cases}
    skipped = sorted((set(base) | set(new)) - common)
    if skipped:
        print(f"compare: scoring the {len(common)} cases both runs cover ({len(skipped)} others skipped)")
    verdicts = compare_runs(cases, base, new, noise, gated)
    print(f"compare {_rel(base_dir)} -> {_rel(new_dir)} (noise from gate.json entry {entry_name!r})\n")
    print(f"{'metric':<30} {'base':>7} {'new':>7} {'delta':>8} {'95% CI of delta':>20} {'noise':>7}  verdict")
    for v in verdicts:
        ci = f"[{v.ci_low:+.3f}, {v.ci_high:+.3f}]"
        label = ("REGRESSION" if v.regression else "improved" if v.improvement else "same within noise")
        if not v.gated:
            label += " (not gated)"
        print(f"{v.metric:<30} {v.base:7.3f} {v.new:7.3f} {v.delta:+8.3f} {ci:>20} {v.noise:7.3f}  {label}")
    regressions = [v.metric for v in verdicts if v.regression and v.gated]
    print("\ncompare: " + (f"REGRESSION in {', '.join(regressions)}" if regressions else "no regression"))
    return 1 if regressions else 0


# ---------------------------------------------------------------- floors

def _floor_down(x: float) -> float:
    return math.floor(x * 1000 + 1e-9) / 1000


def _ceil_up(x: float) -> float:
    return math.ceil(x * 1000 - 1e-9) / 1000


def derive_entry(cases: Sequence[Case], base_dir: Path, rerun_dirs: Sequence[Path], mode: str | None = None) -> dict:
    """Floors from a baseline and reruns of the same code. A baseline that ran a
    subset of the cases (evals/live.py's smollm2 entry) makes a subset entry:
    its `cases` are gated, and every rerun must cover exactly them."""
    meta, base = load_run(base_dir)
    all_ids = {c.id for c in cases}
    subset = sorted(set(base) & all_ids) if set(base) < all_ids else None
    cases = entry_cases({"cases": subset}, cases)
    problems = coverage_problems(cases, base)
    for d in rerun_dirs:
        problems += [f"rerun {_rel(d)}: {p}" for p in coverage_problems(cases, load_run(d)[1])]
    if problems:
        raise GateError(f"{base_dir}: " + "; ".join(problems))
    mode = mode or meta.get("mode", "service")
    base_agg = aggregate(cases, base)
    # Noise is measured on the cases a rerun covers (all of them, normally; a
    # rerun cut short still measures noise, on fewer cases), baseline vs rerun.
    pairs = []
    for d in rerun_dirs:
        rerun = load_run(d)[1]
        common = [c for c in cases if c.id in rerun]
        pairs.append((aggregate(common, base), aggregate(common, rerun)))
    metrics = {}
    for name in GATED[mode]:
        agg = base_agg.get(name)
        if agg is None or agg.value is None:
            continue                              # e.g. faithfulness without a judge
        noise = max((abs(r[name].value - b[name].value) for b, r in pairs
                     if r.get(name) and b.get(name) and r[name].value is not None and b[name].value is not None),
                    default=0.0)
        one_case = 1.0 / agg.denominator
        # Noise seen is noise's floor, not its ceiling: the reruns that show any (other CPUs'
        # numerics, stop 27) are a few samples, and a third CPU landed one case past the
        # largest would fail unchanged code. Where runs differ at all, one case more.
        margin = one_case + noise if noise > 1e-9 else one_case
        higher = METRICS_BY_NAME[name].higher_is_better
        bound = max(0.0, _floor_down(agg.value - margin)) if higher else min(1.0, _ceil_up(agg.value + margin))
        metrics[name] = {"baseline": round(agg.value, 4), "noise": round(noise, 4),
                         "margin": round(margin, 4), "bound": bound,
                         "direction": "higher" if higher else "lower"}
    entry = {"results": _rel(base_dir), "noise_runs": [_rel(d) for d in rerun_dirs], "mode": mode}
    if mode == "service":
        entry["engine"] = served_engine(meta)
    if subset is not None:
        entry["cases"] = subset
    return {**entry, "metrics": metrics}


def cmd_floors(entry_name: str, base_dir: Path, rerun_dirs: Sequence[Path], gate_path: Path) -> int:
    cases = load_cases()
    gate = load_gate(gate_path) if gate_path.is_file() else {}
    gate.setdefault("_comment", "Floors derived by `python -m evals.gate floors` (see evals/README.md).")
    gate.setdefault("entries", {})
    gate["entries"][entry_name] = derive_entry(cases, base_dir, rerun_dirs)
    gate_path.write_text(json.dumps(gate, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(gate["entries"][entry_name], indent=2))
    return 0


def main(argv: Iterable[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m evals.gate", description=__doc__.split("\n\n")[0])
    p.add_argument("--gate", type=Path, default=GATE_PATH, help="gate file (default evals/gate.json)")
    sub = p.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("check", help="fresh runs cover their entries' cases and clear the floors")
    k.add_argument("runs", nargs="+", metavar="ENTRY=RUN_DIR", help="a fresh run for every gate.json entry")
    c = sub.add_parser("compare", help="paired bootstrap BASE vs NEW")
    c.add_argument("base", type=Path)
    c.add_argument("new", type=Path)
    c.add_argument("--entry", default=None, help="gate.json entry whose noise applies (default: BASE's mode)")
    f = sub.add_parser("floors", help="derive a gate.json entry from a baseline and reruns")
    f.add_argument("entry")
    f.add_argument("base", type=Path)
    f.add_argument("reruns", type=Path, nargs="+")
    args = p.parse_args(argv)
    try:
        if args.cmd == "check":
            return cmd_check(args.gate, parse_runs(args.runs))
        if args.cmd == "compare":
            return cmd_compare(_resolve(args.base), _resolve(args.new), args.entry, args.gate)
        return cmd_floors(args.entry, _resolve(args.base), [_resolve(d) for d in args.reruns], args.gate)
    except (GateError, RunError) as exc:
        print(f"gate: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""A run on disk: `evals/results/<name>/` holds

    records.jsonl   one record per case (what the service returned, minus passage text)
    report.json     run metadata + every metric (value, numerator/denominator, 95 % interval)
    report.md       the same as a table, for people

The gate never trusts report.json: it recomputes the metrics from
records.jsonl and the current cases.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evals.cases import Case
from evals.metrics import METRICS_BY_NAME, Aggregate, aggregate

RECORDS = "records.jsonl"
REPORT_JSON = "report.json"
REPORT_MD = "report.md"


class RunError(ValueError):
    """A results folder is missing or unreadable."""


def load_run(run_dir: Path) -> tuple[dict, dict[str, dict]]:
    """(metadata from report.json, records by case id)."""
    records_path, report_path = run_dir / RECORDS, run_dir / REPORT_JSON
    if not records_path.is_file():
        raise RunError(f"{run_dir}: no {RECORDS} (run `python -m evals.run` first)")
    records: dict[str, dict] = {}
    for line in records_path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            rec = json.loads(line)
            records[rec["id"]] = rec
    meta = json.loads(report_path.read_text(encoding="utf-8")).get("meta", {}) if report_path.is_file() else {}
    return meta, records


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _num(x: float) -> str:
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}"


def markdown_table(aggregates: dict[str, Aggregate]) -> str:
    lines = ["| metric | value | 95 % CI | numerator / denominator | cases | better |",
             "|---|---:|---|---:|---:|---|"]
    for name, agg in aggregates.items():
        metric = METRICS_BY_NAME[name]
        ci = "–" if agg.ci_low is None else f"[{agg.ci_low:.3f}, {agg.ci_high:.3f}]"
        lines.append(f"| {name} | {_fmt(agg.value)} | {ci} | {_num(agg.numerator)} / {_num(agg.denominator)} "
                     f"| {agg.cases} | {'higher' if metric.higher_is_better else 'lower'} |")
    return "\n".join(lines)


def write_run(run_dir: Path, meta: dict, cases: Sequence[Case], records: dict[str, dict]) -> dict[str, Aggregate]:
    run_dir.mkdir(parents=True, exist_ok=True)
    ordered = [records[c.id] for c in cases if c.id in records]
    (run_dir / RECORDS).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ordered), encoding="utf-8")
    aggregates = aggregate(cases, records)
    report = {"meta": meta, "metrics": {name: agg.to_dict() for name, agg in aggregates.items()}}
    (run_dir / REPORT_JSON).write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    descriptions = "\n".join(f"- **{name}**: {METRICS_BY_NAME[name].description}" for name in aggregates)
    meta_lines = "\n".join(f"- {k}: `{v}`" for k, v in meta.items() if not isinstance(v, (dict, list)))
    (run_dir / REPORT_MD).write_text(
        f"# Eval run `{run_dir.name}`\n\n{meta_lines}\n\n{markdown_table(aggregates)}\n\n"
        f"Intervals: percentile bootstrap over cases (evals/metrics.py).\n\n{descriptions}\n",
        encoding="utf-8")
    return aggregates

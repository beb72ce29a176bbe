"""The CI gate over committed results, and the paired comparison."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evals import gate
from evals.cases import load_cases
from evals.report import load_run

REPO = Path(__file__).resolve().parents[2]


def committed_entry(name: str) -> tuple[dict, dict[str, dict]]:
    entry = gate.load_gate()["entries"][name]
    return entry, load_run(REPO / entry["results"])[1]


def fresh_run(tmp_path: Path, name: str, records: dict[str, dict], meta: dict | None = None) -> Path:
    """A run folder as evals/run.py writes it (records + report.json's meta)."""
    run = tmp_path / name
    run.mkdir()
    (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records.values()))
    (run / "report.json").write_text(json.dumps({"meta": meta or {}, "metrics": {}}))
    return run


def gate_file(tmp_path: Path, entries: dict) -> Path:
    path = tmp_path / "gate.json"
    path.write_text(json.dumps({"entries": entries}))
    return path


def test_check_gates_fresh_runs_not_the_committed_records(tmp_path, capsys):
    entry, records = committed_entry("retrieval")
    run = fresh_run(tmp_path, "fresh", records)
    assert gate.main(["--gate", str(gate_file(tmp_path, {"retrieval": entry})), "check", f"retrieval={run}"]) == 0
    out = capsys.readouterr().out
    assert "gate: passed" in out and str(run.name) in out


def test_check_fails_when_an_entry_gets_no_fresh_run(tmp_path, capsys):
    entry, records = committed_entry("retrieval")
    gf = gate_file(tmp_path, {"retrieval": entry, "other": entry})
    assert gate.main(["--gate", str(gf), "check", f"retrieval={fresh_run(tmp_path, 'r', records)}"]) == 1
    assert "other: FAIL no fresh run given" in capsys.readouterr().out
    assert gate.main(["--gate", str(gf), "check", f"nope={tmp_path}"]) == 2          # an unknown entry
    assert gate.main(["--gate", str(gf), "check", "retrieval"]) == 2                  # not ENTRY=RUN_DIR


def test_check_fails_a_run_served_by_another_engine(tmp_path, capsys):
    entry, records = committed_entry("retrieval")
    gf = gate_file(tmp_path, {"retrieval": {**entry, "engine": "extractive"}})
    run = fresh_run(tmp_path, "r", records, {"served": {"engine": "fake"}})
    assert gate.main(["--gate", str(gf), "check", f"retrieval={run}"]) == 1
    assert "served by engine 'fake', the floors are for 'extractive'" in capsys.readouterr().out


def test_a_subset_entry_gates_exactly_its_cases(tmp_path):
    cases = load_cases()
    entry, records = committed_entry("retrieval")
    ids = [c.id for c in cases[0::3]]
    subset = {i: records[i] for i in ids}
    base, rerun = fresh_run(tmp_path, "base", subset), fresh_run(tmp_path, "rerun", subset)
    derived = gate.derive_entry(cases, base, [rerun])
    assert derived["cases"] == sorted(ids)
    gf = gate_file(tmp_path, {"retrieval": derived})
    assert gate.main(["--gate", str(gf), "check", f"retrieval={rerun}"]) == 0
    short = fresh_run(tmp_path, "short", {i: records[i] for i in ids[1:]})
    assert gate.main(["--gate", str(gf), "check", f"retrieval={short}"]) == 1
    with pytest.raises(gate.GateError, match="rerun"):
        gate.derive_entry(cases, base, [short])                       # noise needs full reruns


def test_every_committed_run_covers_exactly_the_current_cases():
    cases = load_cases()
    for name in gate.load_gate()["entries"]:
        _, records = committed_entry(name)
        assert gate.coverage_problems(cases, records) == [], name


def test_check_fails_when_a_case_is_missing_extra_or_changed(tmp_path):
    cases = load_cases()
    _, records = committed_entry("retrieval")
    dropped = {k: v for k, v in records.items() if k != cases[0].id}
    assert "no result for case(s)" in gate.coverage_problems(cases, dropped)[0]
    extra = {**records, "zz-new": {"id": "zz-new"}}
    assert "unknown case(s)" in gate.coverage_problems(cases, extra)[0]
    stale = {**records, cases[0].id: {**records[cases[0].id], "case_sha": "0" * 16}}
    assert "changed since the run" in gate.coverage_problems(cases, stale)[0]


def test_check_fails_when_a_metric_falls_below_its_floor(tmp_path):
    entry, records = committed_entry("retrieval")
    broken = tmp_path / "broken"
    broken.mkdir()
    with (broken / "records.jsonl").open("w") as f:
        for rec in records.values():                      # every answerable case loses its passages
            f.write(json.dumps({**rec, "sources": []} if rec["kind"] in ("factual", "two_source") else rec) + "\n")
    gf = gate_file(tmp_path, {"retrieval": entry})
    assert gate.main(["--gate", str(gf), "check", f"retrieval={broken}"]) == 1


def test_compare_passes_a_rerun_of_the_same_code():
    entry, base = committed_entry("retrieval")
    rerun = load_run(REPO / entry["noise_runs"][0])[1]
    noise = {m: f["noise"] for m, f in entry["metrics"].items()}
    verdicts = gate.compare_runs(load_cases(), base, rerun, noise, gate.GATED["retrieval"])
    assert verdicts and not any(v.regression for v in verdicts)


def test_compare_flags_a_synthetic_regression():
    """Half the answerable cases lose their right passages: recall must be flagged."""
    cases = load_cases()
    entry, base = committed_entry("retrieval")
    relevant = {c.id: {p for g in c.sources for p in g} for c in cases}
    new = {}
    for i, (cid, rec) in enumerate(base.items()):
        if rec["kind"] in ("factual", "two_source") and i % 2 == 0:
            rec = {**rec, "sources": [s for s in rec["sources"] if s["source"] not in relevant[cid]]}
        new[cid] = rec
    noise = {m: f["noise"] for m, f in entry["metrics"].items()}
    verdicts = {v.metric: v for v in gate.compare_runs(cases, base, new, noise, gate.GATED["retrieval"])}
    assert verdicts["recall@5"].regression and verdicts["mrr"].regression
    assert verdicts["recall@5"].ci_high < 0


def test_a_significant_drop_within_measured_noise_is_not_a_regression():
    cases = load_cases()
    _, base = committed_entry("retrieval")
    # Factual cases get their relevant passages ranked last: recall@1 drops clearly, recall@5 not at all.
    relevant = {c.id: {p for g in c.sources for p in g} for c in cases}
    new = {cid: ({**rec, "sources": sorted(rec["sources"], key=lambda s: s["source"] in relevant[cid])}
                 if rec["kind"] == "factual" else rec)
           for cid, rec in base.items()}
    strict = {v.metric: v for v in gate.compare_runs(cases, base, new, {}, gate.GATED["retrieval"])}
    assert strict["recall@1"].regression and not strict["recall@5"].regression
    lenient = {v.metric: v for v in gate.compare_runs(cases, base, new, {"recall@1": 0.9}, gate.GATED["retrieval"])}
    assert not lenient["recall@1"].regression


def test_floors_are_baseline_minus_the_larger_of_noise_and_one_case(tmp_path):
    cases = load_cases()
    entry, base = committed_entry("retrieval")
    rerun = tmp_path / "rerun"
    rerun.mkdir()
    shutil.copy(REPO / entry["results"] / "records.jsonl", rerun / "records.jsonl")
    derived = gate.derive_entry(cases, REPO / entry["results"], [rerun])
    recall = derived["metrics"]["recall@5"]
    assert recall["noise"] == 0.0
    assert recall["margin"] == pytest.approx(1 / 56, abs=1e-4)          # one of 56 source groups
    assert recall["bound"] == pytest.approx(recall["baseline"] - recall["margin"], abs=1e-3)
    assert recall["bound"] <= recall["baseline"] - recall["margin"] + 1e-9

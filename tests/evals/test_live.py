"""`make eval` (evals/live.py) gates every gate.json entry, on the cases the entry was measured on."""
from __future__ import annotations

from collections import Counter

from evals import gate, live
from evals.cases import load_cases


def test_the_smollm2_subset_is_fixed_covers_every_kind_and_has_at_least_20_cases():
    cases = load_cases()
    ids = live.smollm2_subset(cases)
    kinds = Counter(c.kind for c in cases if c.id in ids)
    assert len(ids) >= 20 and set(kinds) == {"factual", "two_source", "unanswerable", "off_topic"}
    assert ids == live.smollm2_subset(load_cases())


def test_make_eval_can_run_every_gate_entry_and_each_entry_knows_its_engine_and_cases():
    entries = gate.load_gate()["entries"]
    assert {"retrieval", "extractive"} <= set(entries) <= {"retrieval", *(e.name for e in live.SERVICE_ENTRIES)}
    cases = load_cases()
    for e in live.SERVICE_ENTRIES:
        if e.name not in entries:
            continue                                   # not gated yet: make eval skips it, saying so
        entry = entries[e.name]
        assert entry["engine"] == e.args["engine"]
        expected = live.smollm2_subset(cases) if e.subset else None
        assert entry.get("cases") == (sorted(expected) if expected else None)
        assert len(entry["noise_runs"]) >= 1          # floors from >= 2 full runs of the same code


def test_a_bad_set_is_one_line_and_exit_2(capsys):
    assert live.main(["--set", "default_k"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err

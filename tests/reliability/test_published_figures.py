"""docs/reliability.md's measured figures are the committed raw outputs'
(benchmarks/results/reliability/, written by `make reliability`)."""
from __future__ import annotations

import json

from benchmarks import reliability_table


def test_every_committed_raw_output_says_when_where_and_at_which_commit() -> None:
    files = sorted(reliability_table.RESULTS.glob("*.json"))
    assert files, "no committed raw outputs: run make reliability"
    for path in files:
        raw = json.loads(path.read_text())
        assert {"machine", "at", "commit", "load_average"} <= set(raw), path.name
        assert path.stem in reliability_table.ROWS, f"{path.name}: no row in benchmarks/reliability_table.py"


def test_the_doc_table_is_generated_from_the_committed_raw_outputs() -> None:
    doc = reliability_table.DOC.read_text()
    assert reliability_table.replace_block(doc, reliability_table.render()) == doc, (
        "docs/reliability.md differs from benchmarks/results/reliability/: "
        "run .venv/bin/python benchmarks/reliability_table.py")

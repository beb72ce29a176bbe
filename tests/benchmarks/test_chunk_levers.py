"""benchmarks/chunk_levers.py: its child ingest really chunks at the size it is given, and its table renders."""
from __future__ import annotations

from benchmarks import chunk_levers


def test_the_child_ingest_chunks_at_the_given_size(tmp_path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\n## Setup\n\n" + " ".join(
        f"Step {i} installs the index and checks that every page of the guide was read." for i in range(40)) + "\n")
    shipped = chunk_levers.ingest([docs], "guide", 256, 32, tmp_path / "a.db")
    small = chunk_levers.ingest([docs], "guide", 64, 8, tmp_path / "b.db")
    assert shipped["chunks"] and small["chunks"] and small["chunks"] > 2 * shipped["chunks"], (shipped, small)
    again = chunk_levers.ingest([docs], "guide", 64, 8, tmp_path / "b.db")      # a stale index is replaced
    assert again["chunks"] == small["chunks"]


def test_the_table_has_a_row_per_setting_and_corpus() -> None:
    scores = {"recall@1": 0.5, "recall@5": 0.75, "mrr@10": 0.6, "chunk_recall@4": 0.8, "gate": "0/60 · 22/23"}
    rows = {"256:32": {"postgresql": {"ingest": {"chunks": 10}, "scores": scores}},
            "128:16": {"postgresql": {"ingest": {"chunks": 20}, "scores": scores}}}
    table = chunk_levers.markdown({"date": "d", "commit": "c", "loadavg": "0 0 0"}, rows)
    assert "| 256:32 | postgresql | 10 | 0.500 | 0.750 | 0.600 | 0.800 | 0/60 · 22/23 |" in table
    assert "| 128:16 | postgresql | 20 |" in table

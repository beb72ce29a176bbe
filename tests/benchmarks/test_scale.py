"""benchmarks/scale.py's core on a tiny index: it builds, uses the ANN path, and measures every figure."""
from __future__ import annotations

import json

from benchmarks import ann_ef, scale, snapshot_open
from docindex import ann_sidecar


def test_scale_core_on_a_tiny_index(tmp_path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("install", "search", "serve"):     # a few pages: replicated to 400 chunks
        (corpus / f"{name}.md").write_text(f"# {name.title()}\n\n" + "".join(
            f"## Step {i}\n\nTo {name} the index, run step {i} of the {name} guide with care.\n\n" for i in range(6)))
    result = scale.run(400, tmp_path, rounds=1, calls=3, min_chunks=200, corpus=corpus)
    build, disk, here, mcp = result["build"], result["disk"], result["in_process"], result["mcp"]
    assert build["chunks"] == 400 and build["search_files"]
    assert disk["sqlite_mb"] > 0 and disk["search_files_mb"] > 0
    assert ann_sidecar.folder(tmp_path / "scale-400.db").is_dir()
    assert here["uses_ann"] == ["scaled"] and here["searches"] == len(scale.QUESTIONS)
    assert set(here["stage_ms_p50"]) == {"embed", "wait", "dense", "bm25", "fuse", "total"}
    assert here["recall_at_10_synthetic"] >= 0.95          # 400 vectors: the graph search is all but exact
    assert 0.0 <= here["recall_at_10_real_questions"] <= 1.0
    assert mcp["calls"] == 3 and mcp["server_rss_mb"] > 0
    assert {"p50", "p95"} <= set(mcp["round_trip_ms"]) and {"p50", "p95"} <= set(here["search_ms"])
    assert "| MCP crag_search round trip" in scale.markdown({**result, "machine": {
        "machine": "m", "python": "3", "date": "d", "load_avg_1m_at_start": 0}, "commit": "c", "command": "x",
        "wall_s": 1.0, "ann_min_chunks": 200, "ef_search": 64})
    json.dumps(result)    # the results file is JSON
    again = scale.run(400, tmp_path, rounds=1, calls=1, measure_only=True, with_mcp=False)   # the kept index
    assert again["build"] == {"chunks": 400, "measure_only": True} and again["in_process"]["uses_ann"] == ["scaled"]
    assert "not rebuilt" in scale.markdown({**again, "machine": {
        "machine": "m", "python": "3", "date": "d", "load_avg_1m_at_start": 0}, "commit": "c", "command": "x",
        "wall_s": 1.0, "ann_min_chunks": 200, "ef_search": 192})
    # benchmarks/snapshot_open.py (its row readers agree, or it exits) and benchmarks/ann_ef.py on the same index
    opened = snapshot_open.once(tmp_path / "scale-400.db")
    assert set(opened) == {"rows_s", "rows_joined_s", "rows_row_by_row_s", "search_files_s", "index_open_s"}
    rows = ann_ef.sweep(tmp_path / "scale-400.db", [16, 64], seed=5, n_queries=20)
    assert [r["ef"] for r in rows] == [16, 64] and all(0.0 <= r["recall_at_10"] <= 1.0 for r in rows), rows
    assert rows[-1]["recall_at_10"] >= 0.9          # ef 64 on 400 vectors: all but exact (0.99 when written)

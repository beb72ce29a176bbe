"""A collection's noise floor: the third best cosine everyday questions reach there (docindex/noise_floor.py),
searched once per index version and collection, sent by the MCP search tools for the Gate."""
from __future__ import annotations

from docindex.index import Index
from docindex.ingest import ingest
from docindex.noise_floor import FLOOR_RANK, PROBE_K, PROBES, collection_floor, noise_floor

from .conftest import write_files


def test_the_floor_is_the_third_best_cosine_of_the_probes_so_one_stray_probe_does_not_set_it():
    cosines = {probe: n / 100 for n, probe in enumerate(PROBES)}
    assert FLOOR_RANK == 3 and noise_floor(cosines.get) == (len(PROBES) - 3) / 100
    stray = {**cosines, PROBES[0]: 0.9}                     # one probe meets a page by chance
    assert noise_floor(stray.get) == (len(PROBES) - 2) / 100
    assert noise_floor({PROBES[0]: 0.3, PROBES[1]: 0.2}.get) == 0.2     # fewer found than the rank: the last
    assert noise_floor(lambda probe: None) == 0.0          # nothing found anywhere
    assert len(PROBES) == len(set(PROBES)) >= 40 and PROBE_K == 4


def test_the_floor_is_searched_once_per_index_version_and_collection(tmp_path, fake_embedder, monkeypatch):
    docs = write_files(tmp_path / "docs", {"a.md": "# Backups\n\nRun pg_dump nightly and keep seven copies.\n",
                                           "b.md": "# Cooking\n\nBake bread at 220 degrees for forty minutes.\n"})
    db = tmp_path / "i.db"
    ingest([docs], db, "c", embedder=fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        searched: list[str] = []
        search = index.search
        monkeypatch.setattr(index, "search", lambda q, *a, **kw: searched.append(q) or search(q, *a, **kw))
        first = collection_floor(index, "c")
        assert len(searched) == len(PROBES) and -1.0 <= first <= 1.0
        assert collection_floor(index, "c") == first and len(searched) == len(PROBES)     # cached
        write_files(docs, {"c.md": "# Travel\n\nThe flight from London to Tokyo takes fourteen hours.\n"})
        ingest([docs], db, "c", embedder=fake_embedder)                                    # a new index version
        collection_floor(index, "c")
        assert len(searched) == 2 * len(PROBES)

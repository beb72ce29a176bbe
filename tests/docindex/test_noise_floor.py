"""A collection's noise floors: the third best cosine everyday questions reach there, over passages and over
their best quotable sentences (docindex/noise_floor.py), searched once per index version and collection, sent
by the MCP search tools for the Gate."""
from __future__ import annotations

import numpy as np

from docindex import quote_blobs
from docindex.index import Index
from docindex.ingest import ingest
from docindex.noise_floor import FLOOR_RANK, PROBE_K, PROBES, Floors, collection_floors, floors_of, noise_floor

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
        first = collection_floors(index, "c")
        assert len(searched) == len(PROBES) and -1.0 <= first.cosine <= 1.0
        assert first.sentence is not None and -1.0 <= first.sentence <= 1.0    # ingest stored quote vectors
        assert collection_floors(index, "c") == first and len(searched) == len(PROBES)     # cached
        write_files(docs, {"c.md": "# Travel\n\nThe flight from London to Tokyo takes fourteen hours.\n"})
        ingest([docs], db, "c", embedder=fake_embedder)                                    # a new index version
        collection_floors(index, "c")
        assert len(searched) == 2 * len(PROBES)


def test_the_sentence_floor_is_the_third_best_of_the_probes_best_sentences_and_none_without_any():
    found = {probe: (n / 100, n / 50 if n % 2 else None) for n, probe in enumerate(PROBES)}
    odd = sorted((n / 50 for n in range(len(PROBES)) if n % 2), reverse=True)
    assert floors_of(found) == Floors((len(PROBES) - 3) / 100, odd[2])
    assert floors_of({probe: (0.3, None) for probe in PROBES}) == Floors(0.3, None)     # no quote vectors
    assert floors_of({}) == Floors(0.0, None)


def test_a_hit_carries_its_best_sentences_cosine_only_when_asked_and_only_with_quote_vectors(
        tmp_path, fake_embedder):
    docs = write_files(tmp_path / "docs", {"a.md": "# Backups\n\nRun pg_dump every night from the backup host. "
                                                  "Keep seven compressed copies of each dump off site.\n"})
    with_quotes, without = tmp_path / "q.db", tmp_path / "n.db"
    ingest([docs], with_quotes, "c", embedder=fake_embedder)
    ingest([docs], without, "c", embedder=fake_embedder, quote_vectors=False)
    with Index(with_quotes, embedder=fake_embedder) as index:
        plain, = index.search("how many backup copies", 1, "c")
        hit, = index.search("how many backup copies", 1, "c", sentences=True)
        stored = index.quote_vectors([hit.chunk_id])
        vectors = np.stack(list(quote_blobs.unpack(stored.blobs[hit.chunk_id], stored.dim).values()))
        expected = float(np.max(vectors @ fake_embedder.embed(["how many backup copies"])[0]))
    assert plain.sentence_cosine is None and "sentence_cosine" not in plain.to_dict()      # `docindex search`
    assert len(vectors) == 2 and hit.sentence_cosine is not None
    assert abs(hit.sentence_cosine - expected) < 1e-2          # float16 vectors
    with Index(without, embedder=fake_embedder) as index:
        hit, = index.search("how many backup copies", 1, "c", sentences=True)
        assert hit.sentence_cosine is None and collection_floors(index, "c").sentence is None

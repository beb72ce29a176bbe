"""Snapshot.load's rows (ids, document ids, collection slices) equal the row-by-row query it replaced.

The rows are read one group_concat per collection and parsed by numpy (issue 14: open at 1M
chunks); the reference here is the plain `ORDER BY c.collection, c.id` query, one Python tuple
per chunk, over collections ingested interleaved (so each collection's ids are not contiguous),
with names whose byte order differs from their case-insensitive order, and a chunk without a vector.
"""
from __future__ import annotations

import sqlite3

import numpy as np

from docindex import ann, ann_build, snapshot, store
from docindex.index import Index
from docindex.ingest import ingest

from .conftest import write_files


def reference(conn: sqlite3.Connection) -> tuple[list[int], list[int], dict[str, tuple[int, int]]]:
    rows = conn.execute("SELECT c.id, c.collection, c.doc_id FROM chunks c JOIN vectors v ON v.chunk_id = c.id "
                        "ORDER BY c.collection, c.id").fetchall()
    slices: dict[str, tuple[int, int]] = {}
    for at, (_, name, _) in enumerate(rows):
        start, _ = slices.get(name, (at, at))
        slices[name] = (start, at + 1)
    return [r[0] for r in rows], [r[2] for r in rows], slices


def test_rows_equal_the_row_by_row_query(tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    for round_ in range(3):
        for name in ("beta", "Alpha", "gamma", "Zeta"):
            docs = write_files(tmp_path / name, {     # each round adds files to the collection's folder
                f"{name}{round_}-{i}.md": f"# {name} {round_} {i}\n\n" + "\n\n".join(
                    f"## Part {p}\n\n{name} part {p} of file {i} in round {round_}. Each part says enough about itself, in a sentence of its own, to stand alone as a chunk of the index." for p in range(3))
                for i in range(2)})
            ingest([docs], db, name, embedder=fake_embedder)
    conn = sqlite3.connect(db)
    try:
        with conn:
            conn.execute("DELETE FROM vectors WHERE chunk_id = (SELECT min(id) FROM chunks WHERE collection = 'gamma')")
        ids, doc_ids, slices = snapshot._read_rows(conn)
        want_ids, want_docs, want_slices = reference(conn)
    finally:
        conn.close()
    assert ids.dtype == np.int64 and doc_ids.dtype == np.int64
    assert ids.tolist() == want_ids and doc_ids.tolist() == want_docs
    assert slices == want_slices and list(slices) == ["Alpha", "Zeta", "beta", "gamma"]
    assert len(ids) > 60 and any(np.diff(ids[slices["beta"][0]:slices["beta"][1]]) > 1)


def test_an_index_without_chunks_loads_empty(tmp_path, fake_embedder):
    db = tmp_path / "empty.db"
    conn, _ = store.open_for_ingest(db)
    conn.close()
    with Index(db, embedder=fake_embedder) as index:
        assert index.search("anything", k=3) == []
        assert index._snapshot is not None and len(index._snapshot.ids) == 0 and index._snapshot.slices == {}


def test_with_search_files_the_rows_come_from_the_indexes_and_equal_the_reference(tmp_path, fake_embedder,
                                                                                   monkeypatch):
    """Above the threshold the rows are read from chunks_by_collection and chunks_by_doc alone
    and equal the exact reader's (rows joined to their vectors)."""
    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, "20")
    db = tmp_path / "index.db"
    for name, files in (("big", 12), ("other", 3)):
        docs = write_files(tmp_path / name, {f"{name}{i}.md": f"# {name} {i}\n\n" + "\n\n".join(
            f"## Part {p}\n\n{name} part {p} of file {i}. Each part says enough about itself, in a sentence of its own, to stand alone as a chunk of the index." for p in range(3)) for i in range(files)})
        ingest([docs], db, name, embedder=fake_embedder)
    with Index(db, embedder=fake_embedder) as fast, Index(db, embedder=fake_embedder, exact=True) as exact:
        assert fast._snapshot is not None and exact._snapshot is not None
        assert set(fast._snapshot.anns) == {"big"} and not exact._snapshot.anns
        for field in ("ids", "doc_ids", "id_order"):
            assert np.array_equal(getattr(fast._snapshot, field), getattr(exact._snapshot, field)), field
        assert fast._snapshot.slices == exact._snapshot.slices
    # A version written with a chunk that has no vector: the files hold the joined rows, the
    # indexes' ids disagree with their digest, and the reader takes the rows joined to a vector.
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("DELETE FROM vectors WHERE chunk_id = (SELECT max(id) FROM chunks WHERE collection = 'big')")
    version = store.bump_index_version(conn)
    assert ann_build.write(conn, db, version, changed="big") is not None
    conn.execute("COMMIT")
    want_ids, want_docs, want_slices = reference(conn)
    with Index(db, embedder=fake_embedder) as reader:
        snap = reader._snapshot
        assert snap is not None and set(snap.anns) == {"big"}
        assert snap.ids.tolist() == want_ids and snap.doc_ids.tolist() == want_docs and snap.slices == want_slices
    # Rows changed behind the files' back (no new version): their digest disagrees, nothing of them is used.
    with conn:
        conn.execute("DELETE FROM chunks WHERE id = (SELECT min(id) FROM chunks WHERE collection = 'big')")
        want_ids, want_docs, want_slices = reference(conn)
    conn.close()
    with Index(db, embedder=fake_embedder) as fallen_back:
        snap = fallen_back._snapshot
        assert snap is not None and not snap.anns
        assert snap.ids.tolist() == want_ids and snap.doc_ids.tolist() == want_docs and snap.slices == want_slices

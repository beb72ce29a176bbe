"""Quote vectors: ingest embeds each chunk's quotable sentences once (docindex/quotable.py),
stores them with the chunk, replaces and drops them with it, and serves them by chunk id.
An index made before the table existed reads as "none stored" and gains it at its next ingest."""
from __future__ import annotations

import sqlite3

import numpy as np

from docindex import quotable, quote_blobs, store
from docindex.index import Index
from docindex.ingest import ingest

from .conftest import write_files

GUIDE = """\
# Guide

## Install

Run the installer with **sudo** on a fresh machine. It takes about two minutes.

- The daemon listens on port 8080 by default.
- Logs go to `/var/log/frob` unless you set `FROB_LOG`.

```sh
frob --install
```
"""

FAQ = """\
# FAQ

Only toasters with at least two slots and a serial port are supported.
"""


def _rows(db) -> dict[int, tuple[str, bytes | None]]:
    conn = sqlite3.connect(db)
    try:
        return {i: (text, blob) for i, text, blob in conn.execute(
            "SELECT c.id, c.text, q.data FROM chunks c LEFT JOIN quote_vectors q ON q.chunk_id = c.id")}
    finally:
        conn.close()


def test_ingest_stores_the_engines_own_sentences_with_their_vectors(tmp_path, fake_embedder):
    db = tmp_path / "i.db"
    ingest([write_files(tmp_path / "docs", {"guide.md": GUIDE, "faq.md": FAQ})], db, "docs", embedder=fake_embedder)
    rows = _rows(db)
    assert rows and any(blob for _text, blob in rows.values())
    for text, blob in rows.values():
        texts = quotable.quotable_texts(text)
        if not texts:
            assert blob is None
            continue
        table = quote_blobs.unpack(blob, fake_embedder.dim)
        assert set(table) == {quote_blobs.quote_key(t) for t in texts}          # exactly the engine's candidates
        expected = fake_embedder.embed(texts)
        got = np.stack([table[quote_blobs.quote_key(t)] for t in texts])
        assert np.abs(got - expected).max() < 2e-3                           # float16 of the same vectors
    assert any("port 8080" in t for text, _ in rows.values() for t in quotable.quotable_texts(text))


def test_vectors_are_replaced_with_their_chunk_and_dropped_with_their_collection(tmp_path, fake_embedder):
    db, docs = tmp_path / "i.db", write_files(tmp_path / "docs", {"guide.md": GUIDE, "faq.md": FAQ})
    ingest([docs], db, "docs", embedder=fake_embedder)
    (docs / "faq.md").write_text(FAQ.replace("two slots", "three slots"))
    ingest([docs], db, "docs", embedder=fake_embedder)
    conn = sqlite3.connect(db)
    orphans = conn.execute("SELECT count(*) FROM quote_vectors WHERE chunk_id NOT IN (SELECT id FROM chunks)")
    assert orphans.fetchone()[0] == 0
    conn.close()
    assert any("three slots" in t for text, blob in _rows(db).values() if blob for t in quotable.quotable_texts(text))
    store.drop_collection(db, "docs")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM quote_vectors").fetchone()[0] == 0
    conn.close()


def test_they_can_be_left_out_and_an_older_index_gains_them_at_its_next_ingest(tmp_path, fake_embedder):
    db, docs = tmp_path / "i.db", write_files(tmp_path / "docs", {"guide.md": GUIDE})
    ingest([docs], db, "docs", embedder=fake_embedder, quote_vectors=False)
    assert not any(blob for _t, blob in _rows(db).values())
    conn = sqlite3.connect(db)
    conn.execute("DROP TABLE quote_vectors")            # as written before the table existed
    conn.commit()
    conn.close()
    with Index(db, embedder=fake_embedder) as index:
        ids = [h.chunk_id for h in index.search("installer port", k=3)]
        stored = index.quote_vectors(ids)
    assert stored.blobs == {} and stored.model == fake_embedder.name and stored.dim == fake_embedder.dim
    store.drop_collection(db, "docs")                   # works without the table too
    ingest([docs], db, "docs", embedder=fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        ids = [h.chunk_id for h in index.search("installer port", k=3)]
        assert set(index.quote_vectors(ids).blobs) == {i for i in ids if quotable.quotable_texts(_rows(db)[i][0])}


def test_pack_and_unpack_round_trip_and_refuse_a_blob_of_another_size():
    texts = ["First sentence here", "Second one"]
    vectors = np.random.default_rng(0).normal(size=(2, 8)).astype(np.float32)
    table = quote_blobs.unpack(quote_blobs.pack(texts, vectors), 8)
    assert np.allclose(table[quote_blobs.quote_key("Second one")], vectors[1], atol=1e-2)
    assert quote_blobs.unpack(quote_blobs.pack(texts, vectors), 7) == {}
    assert quote_blobs.unpack(b"", 8) == {}

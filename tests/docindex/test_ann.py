"""ANN and BM25 postings files beside the index (issue 14): used only for the rows they were written for.

The threshold is forced down (DOCINDEX_ANN_MIN_CHUNKS) so a ~150-chunk
collection gets an ANN file; `Index(exact=True)` is the reference (exact scan,
postings read from SQLite). A file that does not match the index's rows is
never used: the reader falls back to the exact scan and SQLite's postings
(same results, slower to open); the next ingest writes a fresh set.
"""
from __future__ import annotations

import json
import sqlite3
import zlib

import numpy as np
import pytest

from docindex import ann, ann_build, ann_sidecar, phrase_postings, store
from docindex.index import Index
from docindex.ingest import ingest

from .conftest import write_files
from .fakes import HashEmbedder

THRESHOLD = 40
TOPICS = ["replica", "autoscaling", "ingress", "gateway", "checkpoint", "tokenizer", "embedding", "shard",
          "postgres", "vacuum", "index", "cluster", "latency", "citation", "grammar", "snapshot"]
QUERIES = ["replica autoscaling", "vacuum postgres index", "citation grammar", "shard latency cluster",
           "tokenizer embedding snapshot", "gateway ingress checkpoint", "how do replicas scale"]


def big_corpus(root, files: int, *, seed: int):
    rng = np.random.default_rng(seed)
    docs = {}
    for f in range(files):
        sections = []
        for s in range(5):
            words = " ".join(rng.choice(TOPICS, size=12))
            sections.append(f"## Part {s} of {f}\n\nSection {f}-{s} talks about {words}.\n")
        docs[f"doc{f:03d}.md"] = f"# Document {f}\n\n" + "\n".join(sections)
    return write_files(root, docs)


class NoTiesEmbedder(HashEmbedder):
    """The hashing fake plus a small per-text jitter: distinct texts never tie on cosine
    (tied neighbours may come back in either order from either search)."""

    def embed(self, texts: list[str]) -> np.ndarray:
        out = super().embed(texts)
        for row, text in enumerate(texts):
            out[row] += 0.05 * np.random.default_rng(zlib.crc32(text.encode())).standard_normal(self.dim)
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def fake_embedder() -> NoTiesEmbedder:
    return NoTiesEmbedder()


@pytest.fixture
def forced(monkeypatch):
    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, str(THRESHOLD))


@pytest.fixture
def two(tmp_path, fake_embedder, forced):
    """Collection "big" (above the threshold) and "small" (below it)."""
    db = tmp_path / "index.db"
    ingest([big_corpus(tmp_path / "big", 30, seed=1)], db, "big", embedder=fake_embedder)
    ingest([big_corpus(tmp_path / "small", 3, seed=2)], db, "small", embedder=fake_embedder)
    return db


def results(index: Index, query: str, **kwargs) -> list[tuple[int, float, float]]:
    return [(h.chunk_id, round(h.cosine, 5), round(h.bm25, 9)) for h in index.search(query, k=10, **kwargs)]


def test_ann_agrees_with_the_exact_scan(two, fake_embedder):
    with Index(two, embedder=fake_embedder) as fast, Index(two, embedder=fake_embedder, exact=True) as exact:
        assert set(fast._snapshot.anns) == {"big"} and not exact._snapshot.anns
        for query in QUERIES:
            for collection in ("big", "small", None):
                for mode in ("dense", "bm25", "hybrid"):
                    assert results(fast, query, collection=collection, mode=mode) == \
                        results(exact, query, collection=collection, mode=mode), (query, collection, mode)


def test_arrays_files_equal_what_is_read_from_sqlite(two, fake_embedder):
    with Index(two, embedder=fake_embedder) as fast, Index(two, embedder=fake_embedder, exact=True) as exact:
        assert isinstance(fast._snapshot.matrix, np.memmap)
        assert np.array_equal(fast._snapshot.matrix, exact._snapshot.matrix)
        a, b = fast._snapshot.lexical, exact._snapshot.lexical
        assert a.term_index == b.term_index and a.n_docs == b.n_docs
        for name in ("offsets", "rows", "tf", "norm", "chunk_ids"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_below_the_threshold_nothing_is_written(tmp_path, fake_embedder, forced):
    db = tmp_path / "index.db"
    ingest([big_corpus(tmp_path / "small", 3, seed=2)], db, "small", embedder=fake_embedder)
    assert not ann_sidecar.folder(db).exists()
    with Index(db, embedder=fake_embedder) as index:
        assert not index._snapshot.anns


def foreign_write(db, collection: str) -> None:
    """An older docindex (knows nothing of the files) removes a document and bumps the version."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    doc = conn.execute("SELECT id FROM documents WHERE collection = ? LIMIT 1", (collection,)).fetchone()[0]
    store.delete_document(conn, doc)
    store.bump_index_version(conn)
    conn.execute("COMMIT")
    conn.close()


def test_files_of_another_version_are_never_used(two, fake_embedder):
    with Index(two, embedder=fake_embedder) as fast:     # open before the foreign write: hot reload
        assert fast._snapshot.anns
        foreign_write(two, "big")
        with Index(two, embedder=fake_embedder, exact=True) as exact:
            for query in QUERIES:
                assert results(fast, query, collection="big") == results(exact, query, collection="big")
        assert not fast._snapshot.anns      # fell back to the exact scan


@pytest.mark.parametrize("damage", ["truncate-ann", "other-ids", "missing-arrays", "short-vectors", "short-phrases"])
def test_damaged_or_mismatched_files_fall_back_to_exact(two, fake_embedder, damage):
    where = ann_sidecar.folder(two)
    with sqlite3.connect(two) as conn:
        token = ann_sidecar.read_token(conn)
    manifest = json.loads((where / f"{token}.json").read_text())
    if damage == "truncate-ann":
        (where / manifest["collections"]["big"]["file"]).write_bytes(b"\0" * 64)
    elif damage == "other-ids":
        manifest["collections"]["big"]["ids_sha256"] = "0" * 64
        (where / f"{token}.json").write_text(json.dumps(manifest))
    elif damage == "missing-arrays":
        for part in (where / manifest["arrays"]).iterdir():
            part.unlink()
    elif damage == "short-phrases":
        phrase_postings.save(phrase_postings.PhrasePostings(
            {("a", "b"): 0}, np.array([0, 2]), np.zeros(1, np.int32), np.zeros(1)), where / manifest["arrays"])
    else:
        vectors = where / manifest["arrays"] / "vectors.npy"
        np.save(vectors, np.load(vectors)[:-1])
    with Index(two, embedder=fake_embedder) as fast, Index(two, embedder=fake_embedder, exact=True) as exact:
        assert not fast._snapshot.anns and not isinstance(fast._snapshot.matrix, np.memmap)
        for query in QUERIES:
            assert results(fast, query) == results(exact, query)


def test_reingest_writes_a_new_set_and_prunes_the_old(two, tmp_path, fake_embedder):
    where = ann_sidecar.folder(two)
    before = set(p.name for p in where.iterdir())
    with Index(two, embedder=fake_embedder) as reader:
        big = tmp_path / "big"
        (big / "doc000.md").write_text("# Changed\n\nEverything about vacuum now.\n")
        report = ingest([big], two, "big", embedder=fake_embedder)
        after = set(p.name for p in where.iterdir())
        assert report.index_version and not (before & after)      # every old file went, none is half-written
        assert not any(name.endswith(".partial") for name in after)
        assert reader.refresh() and set(reader._snapshot.anns) == {"big"}
        with Index(two, embedder=fake_embedder, exact=True) as exact:
            for query in QUERIES:
                assert results(reader, query) == results(exact, query)


def test_ingesting_another_collection_keeps_the_ann_file(two, tmp_path, fake_embedder):
    with sqlite3.connect(two) as conn:
        token = ann_sidecar.read_token(conn)
    where = ann_sidecar.folder(two)
    kept = json.loads((where / f"{token}.json").read_text())["collections"]["big"]["file"]
    (tmp_path / "small" / "extra.md").write_text("# Extra\n\nA new page about grammar.\n")
    ingest([tmp_path / "small"], two, "small", embedder=fake_embedder)
    with sqlite3.connect(two) as conn:
        new = ann_sidecar.read_token(conn)
    assert new != token
    assert json.loads((where / f"{new}.json").read_text())["collections"]["big"]["file"] == kept
    with Index(two, embedder=fake_embedder) as index:
        assert set(index._snapshot.anns) == {"big"}


def test_drop_writes_the_new_versions_files(two, fake_embedder):
    dropped = ann_build.drop_collection(two, "small")
    assert dropped.index_version is not None
    with Index(two, embedder=fake_embedder) as fast, Index(two, embedder=fake_embedder, exact=True) as exact:
        assert set(fast._snapshot.anns) == {"big"}
        assert fast._snapshot.lexical.n_docs == exact._snapshot.lexical.n_docs
        for query in QUERIES:
            assert results(fast, query) == results(exact, query)


def test_the_threshold_setting_is_checked(monkeypatch):
    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, "lots")
    with pytest.raises(ValueError, match="whole number"):
        ann.min_chunks()
    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, "0")
    with pytest.raises(ValueError, match="at least 1"):
        ann.min_chunks()
    monkeypatch.delenv(ann.MIN_CHUNKS_ENV)
    assert ann.min_chunks() == ann.MIN_CHUNKS_DEFAULT


def test_a_larger_graph_searches_broader(two, fake_embedder):
    """Recall at a fixed ef falls as the graph grows (ann.py): above ann.LARGE vectors, EF_SEARCH_LARGE."""
    import faiss

    assert ann.ef_for(ann.LARGE) == ann.EF_SEARCH < ann.EF_SEARCH_LARGE == ann.ef_for(ann.LARGE + 1)
    with Index(two, embedder=fake_embedder) as index:
        opened = index._snapshot.anns["big"]
        assert faiss.downcast_index(opened._index.index).hnsw.efSearch == ann.EF_SEARCH


IDENTIFIERS = ["crag_search", "max_ongoing_requests", "shard_latency", "utf_8"]


@pytest.fixture
def with_identifiers(tmp_path, fake_embedder, forced, monkeypatch):
    """A collection above the threshold whose text holds identifiers FTS5 splits into phrases,
    some in most chunks, one ("utf_8") in one document only; the phrase floor forced down."""
    monkeypatch.setattr(phrase_postings, "MIN_ROWS", 20)
    rng = np.random.default_rng(3)
    docs = {}
    for f in range(30):
        parts = [f"## Part {s} of {f}\n\nSection {f}-{s} calls {' '.join(rng.choice(IDENTIFIERS[:3], size=3))} "
                 f"about {' '.join(rng.choice(TOPICS, size=8))}; crag search too.\n" for s in range(5)]
        docs[f"doc{f:03d}.md"] = f"# Document {f}\n\n" + "\n".join(parts) + ("\nutf_8 here.\n" if f == 7 else "")
    db = tmp_path / "index.db"
    ingest([write_files(tmp_path / "ids", docs)], db, "big", embedder=fake_embedder)
    return db


def test_common_phrases_come_from_the_search_files_with_fts5s_scores(with_identifiers, fake_embedder):
    queries = ["crag_search fusion", "max_ongoing_requests replica", "shard_latency", "utf_8 text", "crag search"]
    with Index(with_identifiers, embedder=fake_embedder) as fast, \
            Index(with_identifiers, embedder=fake_embedder, exact=True) as exact:
        stored = fast._snapshot.lexical.phrases
        assert {("crag", "search"), ("max", "ongo", "request"), ("shard", "latenc")} <= set(stored.index)
        assert ("utf", "8") not in stored.index        # rarer than MIN_ROWS: FTS5 at query time
        statements: list[str] = []
        fast._conn.set_trace_callback(statements.append)
        for query in queries:
            for mode in ("bm25", "hybrid"):
                assert results(fast, query, mode=mode) == results(exact, query, mode=mode), (query, mode)
        fast._conn.set_trace_callback(None)
        phrase_queries = [s for s in statements if "bm25(chunks_fts)" in s]
        assert phrase_queries and all("utf" in s for s in phrase_queries)   # only the rare one asks FTS5
        for term, tokens in (("crag_search", ("crag", "search")), ("max_ongoing_requests", ("max", "ongo", "request"))):
            rows, values = stored.get(tokens)
            fts5_rows, fts5_values = exact._phrase_scores(term, exact._snapshot)
            assert len(rows) >= 20 and np.array_equal(rows, fts5_rows) and np.array_equal(values, fts5_values)

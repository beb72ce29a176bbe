"""Files that are not (this version of) a docindex index are refused with a clear error."""
from __future__ import annotations

import sqlite3

import pytest

from docindex.errors import NotAnIndex, SchemaMismatch, StoreError
from docindex.index import Index
from docindex.ingest import ingest


@pytest.fixture
def index_db(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    ingest([corpus], db, "docs", embedder=fake_embedder)
    return db


def set_schema_version(db, version: str) -> None:
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
    conn.commit()
    conn.close()


@pytest.mark.parametrize("version, words", [("99", "newer docindex"), ("0", "older docindex")])
def test_another_schema_version_is_refused_by_readers_and_writers(index_db, corpus, fake_embedder, version, words):
    set_schema_version(index_db, version)
    with pytest.raises(SchemaMismatch, match=words):
        Index(index_db, embedder=fake_embedder)
    with pytest.raises(SchemaMismatch, match=words):
        ingest([corpus], index_db, "docs", embedder=fake_embedder, force=True)


def test_a_corrupted_file_is_not_an_index_and_is_left_untouched(tmp_path, corpus, fake_embedder):
    db = tmp_path / "garbage.db"
    db.write_bytes(b"this is not sqlite at all " * 100)
    before = db.read_bytes()
    with pytest.raises(NotAnIndex, match="not a docindex file"):
        Index(db, embedder=fake_embedder)
    with pytest.raises(NotAnIndex):
        ingest([corpus], db, "docs", embedder=fake_embedder)
    assert db.read_bytes() == before


def test_a_foreign_sqlite_database_is_not_an_index_and_is_left_untouched(tmp_path, corpus, fake_embedder):
    db = tmp_path / "foreign.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('format', 'someone-else')")
    conn.commit()
    conn.close()
    before = db.read_bytes()
    with pytest.raises(NotAnIndex, match="another program"):
        Index(db, embedder=fake_embedder)
    with pytest.raises(NotAnIndex):
        ingest([corpus], db, "docs", embedder=fake_embedder)
    assert db.read_bytes() == before


def test_a_missing_file_is_a_store_error_and_is_not_created(tmp_path, fake_embedder):
    with pytest.raises(StoreError, match="no such index file"):
        Index(tmp_path / "nope.db", embedder=fake_embedder)
    assert not (tmp_path / "nope.db").exists()


def test_an_empty_index_searches_to_nothing(tmp_path, fake_embedder):
    db = tmp_path / "empty.db"
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "blank.md").write_text("")
    ingest([tmp_path / "d"], db, "docs", embedder=fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        assert index.is_empty() and index.is_empty("docs")
        assert index.search("anything at all") == []
        assert index.stats()["documents"] == 1 and index.stats()["chunks"] == 0

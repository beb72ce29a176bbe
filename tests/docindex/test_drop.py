"""`docindex drop COLLECTION --db PATH [--dry-run]` (issue 18 item 1): one transaction,
other collections untouched, open readers see it like any other change."""
from __future__ import annotations

import sqlite3

import pytest
from click.testing import CliRunner

from docindex.cli import main
from docindex.errors import CollectionNotFound
from docindex.index import Index
from docindex.ingest import ingest
from docindex.store import drop_collection

from .conftest import write_files


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def two_collections(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    ingest([corpus], db, "mine", embedder=fake_embedder)
    demo = write_files(tmp_path / "demo", {"api.md": "# API\n\nPOST /ask answers a question.\n"})
    ingest([demo], db, "askdocs", embedder=fake_embedder)
    return db


def counts(db, collection):
    with sqlite3.connect(db) as conn:
        ids = "SELECT id FROM chunks WHERE collection = ?"
        return tuple(conn.execute(sql, (collection,)).fetchone()[0] for sql in (
            "SELECT count(*) FROM documents WHERE collection = ?",
            "SELECT count(*) FROM chunks WHERE collection = ?",
            f"SELECT count(*) FROM vectors WHERE chunk_id IN ({ids})",
            "SELECT count(*) FROM chunks_fts WHERE collection = ?"))


def test_drop_removes_one_collection_entirely_and_leaves_the_others(two_collections):
    mine_before = counts(two_collections, "mine")
    result = invoke("drop", "askdocs", "--db", two_collections)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "dropped collection 'askdocs': 1 documents, 1 chunks (index version 3)"
    assert counts(two_collections, "askdocs") == (0, 0, 0, 0)
    assert counts(two_collections, "mine") == mine_before and mine_before[0] == 3
    with sqlite3.connect(two_collections) as conn:     # no orphan vectors or FTS rows anywhere
        assert conn.execute("SELECT count(*) FROM vectors").fetchone()[0] == mine_before[1]
        assert conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0] == mine_before[1]


def test_dry_run_lists_what_would_go_and_leaves_the_file_byte_identical(two_collections):
    before = two_collections.read_bytes()
    result = invoke("drop", "askdocs", "--db", two_collections, "--dry-run")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "would remove  api.md",
        "dry run: would drop collection 'askdocs': 1 documents, 1 chunks; nothing written"]
    assert two_collections.read_bytes() == before


def test_an_unknown_collection_is_one_line_and_exit_1_and_writes_nothing(two_collections):
    before = two_collections.read_bytes()
    result = invoke("drop", "nope", "--db", two_collections)
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines() == [
        f"Error: no collection 'nope' in {two_collections} (collections: askdocs, mine)"]
    assert two_collections.read_bytes() == before


def test_a_missing_index_file_is_one_line_and_creates_nothing(tmp_path):
    result = invoke("drop", "x", "--db", tmp_path / "missing.db")
    assert result.exit_code == 1 and result.stderr.startswith("Error: ") and "no such index file" in result.stderr
    assert "Traceback" not in result.output and not (tmp_path / "missing.db").exists()


def test_an_open_index_sees_the_drop_on_its_next_search(two_collections, fake_embedder):
    with Index(two_collections, embedder=fake_embedder) as index:
        assert index.search("answers a question", k=3, collection="askdocs")
        version = index.version
        dropped = drop_collection(two_collections, "askdocs")
        assert (dropped.documents, dropped.index_version) == (1, version + 1)
        with pytest.raises(CollectionNotFound):
            index.search("answers a question", k=3, collection="askdocs")
        assert index.version == version + 1
        assert {hit.collection for hit in index.search("answers a question TLS", k=5)} == {"mine"}
        assert [c["name"] for c in index.stats()["collections"]] == ["mine"]


def test_a_collection_can_be_ingested_again_after_a_drop(two_collections, tmp_path, fake_embedder):
    drop_collection(two_collections, "askdocs")
    report = ingest([tmp_path / "demo"], two_collections, "askdocs", embedder=fake_embedder)
    assert report.added == 1 and counts(two_collections, "askdocs")[:2] == (1, 1)

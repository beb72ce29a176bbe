"""Ingest behaviour with the hashing fake embedder: formats, re-ingest cases, bad inputs."""
from __future__ import annotations

import os
import sqlite3

import pytest

from docindex.errors import CollectionNotFound, EmbedderMismatch, IngestError, InputError
from docindex.index import Index
from docindex.ingest import ingest

from .conftest import write_files
from .fakes import HashEmbedder
from .pdfgen import write_pdf


def run(paths, db, embedder, collection="docs", **kwargs):
    return ingest([*paths] if isinstance(paths, list) else [paths], db, collection, embedder=embedder, **kwargs)


def sources(db, embedder, collection="docs"):
    with Index(db, embedder=embedder) as index:
        return sorted({c["source"] for c in index.iter_chunks(collection)})


def test_every_format_is_ingested_and_searchable(tmp_path, fake_embedder):
    root = write_files(tmp_path / "mixed", {
        "a.md": "# Alpha\n\nThe alpha module parses markdown.\n",
        "b.txt": "Bravo is a plain text note about tokenizers.\n",
        "c.html": "<html><head><title>Charlie</title></head><body><h1>Charlie</h1>"
                  "<p>Charlie renders hypertext pages.</p></body></html>",
    })
    write_pdf(root / "d.pdf", [["Delta", "Delta explains portable documents."]], outline=[("Delta", 0, 1)],
              title="Delta")
    db = tmp_path / "index.db"
    report = run(root, db, fake_embedder)
    assert (report.added, report.skipped, report.errors) == (4, 0, [])
    with Index(db, embedder=fake_embedder) as index:
        for query, source in [("alpha markdown", "a.md"), ("bravo tokenizers", "b.txt"),
                              ("charlie hypertext", "c.html"), ("delta portable documents", "d.pdf")]:
            top = index.search(query, k=1)[0]
            assert top.source == source and top.bm25 > 0
        pdf = index.get_document(source="d.pdf")
        assert pdf.title == "Delta" and pdf.sections[0].anchor == "delta"
        assert index.get_document(source="c.html").metadata["format"] == "html"


def test_a_second_run_on_unchanged_files_writes_nothing(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    first = run(corpus, db, fake_embedder)
    embedded = fake_embedder.texts
    second = run(corpus, db, fake_embedder)
    assert (first.added, first.index_version) == (3, 1)
    assert (second.added, second.changed, second.removed, second.unchanged) == (0, 0, 0, 3)
    assert second.index_version == 1                   # no bump for a no-op
    assert fake_embedder.texts == embedded               # nothing re-embedded


def test_touched_but_identical_files_are_unchanged(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    run(corpus, db, fake_embedder)
    os.utime(corpus / "tls.md", ns=(1, 1))               # new mtime, same bytes: the hash decides
    report = run(corpus, db, fake_embedder)
    assert (report.changed, report.unchanged) == (0, 3)


def test_changed_files_are_replaced_in_place(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    run(corpus, db, fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        before = index.get_document(source="tls.md")
    (corpus / "tls.md").write_text("# TLS\n\nUse stunnel as the terminator instead.\n")
    report = run(corpus, db, fake_embedder)
    assert (report.changed, report.unchanged, report.changes) == (1, 2, [("change", "tls.md")])
    with Index(db, embedder=fake_embedder) as index:
        after = index.get_document(source="tls.md")
        assert after.doc_id == before.doc_id and after.sha256 != before.sha256
        texts = " ".join(c["text"] for c in index.iter_chunks("docs"))
        assert "stunnel" in texts and "nginx" not in texts
        assert index.search("stunnel terminator", k=1)[0].source == "tls.md"
        assert index.version == 2


def test_files_gone_from_the_paths_are_removed_from_that_collection_only(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    run(corpus, db, fake_embedder)
    run(corpus, db, fake_embedder, collection="other")
    (corpus / "guide" / "search.md").unlink()
    report = run(corpus, db, fake_embedder)
    assert (report.removed, report.changes) == (1, [("remove", "guide/search.md")])
    assert sources(db, fake_embedder) == ["install.md", "tls.md"]
    assert "guide/search.md" in sources(db, fake_embedder, "other")


def test_force_re_embeds_everything(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    run(corpus, db, fake_embedder)
    embedded = fake_embedder.texts
    report = run(corpus, db, fake_embedder, force=True)
    assert (report.changed, report.unchanged, report.index_version) == (3, 0, 2)
    assert fake_embedder.texts == 2 * embedded


def test_dry_run_lists_changes_and_writes_nothing(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    report = run(corpus, db, fake_embedder, dry_run=True)
    assert not db.exists()                               # not even created
    assert sorted(report.changes) == [("add", "guide/search.md"), ("add", "install.md"), ("add", "tls.md")]
    assert report.chunks > 0 and fake_embedder.calls == 0
    run(corpus, db, fake_embedder)
    (corpus / "tls.md").write_text("# TLS\n\nchanged\n")
    (corpus / "install.md").unlink()
    before = db.read_bytes()
    report = run(corpus, db, fake_embedder, dry_run=True)
    assert sorted(report.changes) == [("change", "tls.md"), ("remove", "install.md")]
    assert db.read_bytes() == before
    assert sources(db, fake_embedder) == ["guide/search.md", "install.md", "tls.md"]


def test_unsupported_and_unreadable_files_are_reported_and_skipped(tmp_path, fake_embedder):
    root = write_files(tmp_path / "d", {"good.md": "# Good\n\ntext\n", "bad.md": b"\x00\x00binary",
                                        "ignored.png": b"\x89PNG", ".hidden.md": "# hidden\n"})
    report = run(root, tmp_path / "i.db", fake_embedder)
    assert (report.added, report.skipped) == (1, 2)          # in a folder: reported too; hidden files are not
    assert report.errors[0] == f"{root / 'bad.md'}: binary content"
    assert report.errors[1].startswith(f"{root / 'ignored.png'}: unsupported file type '.png'")
    explicit = run([root / "ignored.png", root / "good.md"], tmp_path / "j.db", fake_embedder)
    assert explicit.skipped == 1 and "unsupported file type '.png'" in explicit.errors[0]


def test_sources_are_relative_to_the_single_root_or_to_the_common_parent(tmp_path, fake_embedder):
    write_files(tmp_path, {"a/x.md": "# X\n\nx\n", "b/y.md": "# Y\n\ny\n"})
    run([tmp_path / "a", tmp_path / "b"], tmp_path / "i.db", fake_embedder)
    assert sources(tmp_path / "i.db", fake_embedder) == ["a/x.md", "b/y.md"]
    run([tmp_path / "a" / "x.md"], tmp_path / "j.db", fake_embedder)
    assert sources(tmp_path / "j.db", fake_embedder) == ["x.md"]


@pytest.mark.parametrize("make_path, message", [
    (lambda tmp: tmp / "missing", "no such file or directory"),
    (lambda tmp: (tmp / "empty").mkdir() or tmp / "empty", "no Markdown, text, HTML or PDF files"),
])
def test_nothing_to_ingest_raises_and_creates_no_file(tmp_path, fake_embedder, make_path, message):
    with pytest.raises(IngestError, match=message):
        run(make_path(tmp_path), tmp_path / "i.db", fake_embedder)
    assert not (tmp_path / "i.db").exists()


def test_an_empty_collection_name_is_rejected(corpus, tmp_path, fake_embedder):
    with pytest.raises(InputError):
        run(corpus, tmp_path / "i.db", fake_embedder, collection="  ")


def test_an_index_refuses_vectors_from_another_model(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    run(corpus, db, fake_embedder)
    with pytest.raises(EmbedderMismatch, match="test-hash"):
        run(corpus, db, HashEmbedder(name="other-model"), force=True)
    with pytest.raises(EmbedderMismatch):
        Index(db, embedder=HashEmbedder(name="other-model"))
    with pytest.raises(EmbedderMismatch):
        Index(db)          # the default MiniLM cannot read a test-hash index either


def test_an_open_index_sees_the_next_ingest_on_its_next_search(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    run(corpus, db, fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        assert index.search("kubernetes operator", k=5, collection="docs")
        with pytest.raises(CollectionNotFound):
            index.search("kubernetes operator", collection="k8s")
        write_files(tmp_path / "k8s", {"operator.md": "# Operator\n\nThe kubernetes operator reconciles.\n"})
        run(tmp_path / "k8s", db, fake_embedder, collection="k8s")
        assert index.version == 2
        top = index.search("kubernetes operator reconciles", k=1, collection="k8s")[0]
        assert (top.source, top.collection) == ("operator.md", "k8s")
        assert not index.refresh()                        # already current


def test_the_index_records_one_version_per_ingest_in_one_transaction(corpus, tmp_path, fake_embedder):
    db = tmp_path / "index.db"
    run(corpus, db, fake_embedder)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert dict(conn.execute("SELECT key, value FROM meta"))["index_version"] == "1"
    fts = conn.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
    vectors = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert fts == vectors == chunks > 0
    conn.close()


def test_front_matter_url_and_title_reach_the_chunks(tmp_path, fake_embedder):
    root = write_files(tmp_path / "d", {
        "page.md": "---\ntitle: Shown Title\nurl: https://docs.example.org/page\n---\n\n## Part\n\nbody text\n"})
    run(root, tmp_path / "i.db", fake_embedder)
    with Index(tmp_path / "i.db", embedder=fake_embedder) as index:
        (chunk,) = index.iter_chunks("docs")
        assert chunk["url"] == "https://docs.example.org/page"
        assert (chunk["doc_title"], chunk["heading_path"], chunk["anchor"]) == (
            "Shown Title", ("Shown Title", "Part"), "part")
        assert index.get_document(source="page.md").metadata["url"] == "https://docs.example.org/page"


def test_an_index_built_by_older_reading_rules_is_read_again_once(tmp_path, fake_embedder):
    """Unchanged files would keep the chunks older rules made: the first ingest after an upgrade
    reads every file again, says so, and records the rules' version; the next one skips them."""
    import sqlite3

    from docindex import store
    from docindex.blocks import READING_VERSION

    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha text\n", "b.md": "# B\n\nbeta text\n"})
    db = tmp_path / "index.db"
    ingest([docs], db, "docs", embedder=fake_embedder)
    with sqlite3.connect(db) as conn:
        assert store.reading_version(store.read_meta(conn), "docs") == READING_VERSION
        conn.execute("DELETE FROM meta WHERE key = ?", (store.READING_KEY + "docs",))   # as before stop 30
    again = ingest([docs], db, "docs", embedder=fake_embedder)
    assert (again.changed, again.unchanged, again.read_again) == (2, 0, 1)
    after = ingest([docs], db, "docs", embedder=fake_embedder)
    assert (after.changed, after.unchanged, after.read_again) == (0, 2, None)

"""A collection's base URL (`docindex ingest --base-url`): checked, stored, kept,
replaced, dropped, and turned into `url#anchor` links on hits and chunks."""
from __future__ import annotations

import sqlite3

import pytest

from docindex import store
from docindex.errors import InputError
from docindex.index import Index
from docindex.ingest import ingest
from docindex.links import check_base_url, chunk_url

from .conftest import write_files
from .test_cli import assert_one_line_error, invoke

BASE = "https://github.com/OWNER/REPO/blob/main/docs/"
FILES = {
    "install.md": "# Install\n\n## Requirements\n\nPython 3.11 and a C compiler are the requirements.\n",
    "guide/tls setup.md": "# TLS\n\nTerminate TLS at a reverse proxy such as nginx or caddy.\n",
    "own.md": "---\nurl: https://elsewhere.example/own-page\n---\n\n# Own\n\nThe page names its own address.\n",
}


@pytest.mark.parametrize("url, why", [
    ("ftp://h.example/docs/", "http:// or https://"),
    ("javascript:alert(1)", "http:// or https://"),
    ("docs/relative", "http:// or https://"),
    ("https://user:secret@h.example/", "user name or password"),
    ("https://user@h.example/", "user name or password"),
    ("https:///no-host", "no host"),
    ("https://h.example/?ref=main", "no query or fragment"),
    ("https://h.example/docs#top", "no query or fragment"),
    ("https://h.example:99999/", "Port out of range"),
    ("https://h.example/a b", "spaces"),
    ("   ", "empty"),
])
def test_a_bad_base_url_is_refused_with_its_reason(url, why):
    with pytest.raises(InputError, match=why):
        check_base_url(url)


def test_a_base_url_is_stored_with_one_trailing_slash():
    assert check_base_url("https://h.example/docs") == "https://h.example/docs/"
    assert check_base_url(" http://h.example:8000/ ") == "http://h.example:8000/"
    assert "secret" not in str(pytest.raises(InputError, check_base_url, "https://u:secret@h/").value)


def test_the_link_is_base_path_and_anchor_unless_front_matter_names_one():
    assert chunk_url(BASE, "guide/tls setup.md", "tls", "{}") == BASE + "guide/tls%20setup.md#tls"
    assert chunk_url(BASE, "install.md", "", {}) == BASE + "install.md"
    assert chunk_url(BASE, "own.md", "own", '{"url": "https://elsewhere.example/p"}') == "https://elsewhere.example/p"
    assert chunk_url(None, "install.md", "install", "{}") is None
    assert chunk_url(None, "own.md", "own", {"url": "https://elsewhere.example/p"}) == "https://elsewhere.example/p"


def _version(db) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'index_version'").fetchone()[0])


def _stored(db, collection: str = "docs") -> str | None:
    with sqlite3.connect(db) as conn:
        return store.read_base_url(conn, collection)


def test_ingest_stores_keeps_and_replaces_the_base_url(tmp_path, fake_embedder):
    docs = write_files(tmp_path / "docs", FILES)
    db = tmp_path / "i.db"
    ingest([docs], db, "docs", embedder=fake_embedder)
    with Index(db, embedder=fake_embedder) as index:
        no_url_hash = index.content_hash("docs")
        assert {c["source"]: c["url"] for c in index.iter_chunks("docs")}["install.md"] is None

    ingest([docs], db, "docs", embedder=fake_embedder, base_url="https://github.com/OWNER/REPO/blob/main/docs")
    assert _stored(db) == BASE
    version = _version(db)
    with Index(db, embedder=fake_embedder) as index:
        links = {(c["source"], c["anchor"]): c["url"] for c in index.iter_chunks("docs")}
        assert links[("install.md", "requirements")] == BASE + "install.md#requirements"
        assert links[("guide/tls setup.md", "tls")] == BASE + "guide/tls%20setup.md#tls"
        assert links[("own.md", "own")] == "https://elsewhere.example/own-page"      # front matter wins
        hits = index.search("requirements compiler", k=5, collection="docs")
        assert hits[0].source == "install.md" and hits[0].url == BASE + "install.md#requirements"
        assert hits[0].to_dict()["url"] == hits[0].url
        linked_hash = index.content_hash("docs")
        assert linked_hash != no_url_hash

        # Without the option the stored URL stays (and nothing moves); a new one replaces it.
        ingest([docs], db, "docs", embedder=fake_embedder)
        assert _stored(db) == BASE and _version(db) == version
        ingest([docs], db, "docs", embedder=fake_embedder, base_url="https://docs.example/v2/")
        assert _stored(db) == "https://docs.example/v2/" and _version(db) == version + 1
        # An open Index sees the new links on its next search (the version moved).
        assert index.search("requirements compiler", k=1, collection="docs")[0].url == \
            "https://docs.example/v2/install.md#requirements"
        assert index.content_hash("docs") not in (linked_hash, no_url_hash)


def test_a_collection_without_a_base_url_keeps_its_old_content_hash(tmp_path, fake_embedder):
    """Indexes written before --base-url: same hash, so no fetch_docs cache or archive ETag moves."""
    import hashlib

    docs = write_files(tmp_path / "docs", FILES)
    db = tmp_path / "i.db"
    ingest([docs], db, "docs", embedder=fake_embedder)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT source, sha256 FROM documents ORDER BY source").fetchall()
    digest = hashlib.sha256()
    for source, sha in rows:
        digest.update(f"{source}\0{sha}\n".encode())
    with Index(db, embedder=fake_embedder) as index:
        assert index.content_hash("docs") == digest.hexdigest()


def test_base_urls_are_per_collection_and_go_with_a_dropped_collection(tmp_path, fake_embedder):
    docs = write_files(tmp_path / "docs", FILES)
    db = tmp_path / "i.db"
    ingest([docs], db, "docs", embedder=fake_embedder, base_url=BASE)
    ingest([docs], db, "mirror", embedder=fake_embedder, base_url="https://mirror.example/")
    assert _stored(db, "docs") == BASE and _stored(db, "mirror") == "https://mirror.example/"
    store.drop_collection(db, "mirror")
    assert _stored(db, "mirror") is None and _stored(db, "docs") == BASE


def test_a_bad_base_url_leaves_the_index_untouched(tmp_path, fake_embedder):
    docs = write_files(tmp_path / "docs", FILES)
    db = tmp_path / "i.db"
    with pytest.raises(InputError):
        ingest([docs], db, "docs", embedder=fake_embedder, base_url="https://u:p@h.example/")
    assert not db.exists()
    ingest([docs], db, "docs", embedder=fake_embedder, base_url=BASE)
    version = _version(db)
    with pytest.raises(InputError):
        ingest([docs], db, "docs", embedder=fake_embedder, base_url="file:///etc/")
    assert _stored(db) == BASE and _version(db) == version


# ---------------------------------------------------------------- the CLI (real embedder: `search` opens with it)

def test_cli_base_url_round_trip_to_search_json(tmp_path):
    import json

    docs = write_files(tmp_path / "docs", FILES)
    db = tmp_path / "cli.db"
    result = invoke("ingest", docs, "--db", db, "-c", "docs", "--base-url", BASE)
    assert result.exit_code == 0, result.output
    found = invoke("search", "requirements compiler", "--db", db, "-c", "docs", "--json", "-k", "1")
    assert found.exit_code == 0, found.output
    assert json.loads(found.output)[0]["url"] == BASE + "install.md#requirements"

    # Re-ingesting without the flag keeps it; a new value replaces it.
    assert invoke("ingest", docs, "--db", db, "-c", "docs").exit_code == 0
    assert _stored(db) == BASE
    assert invoke("ingest", docs, "--db", db, "-c", "docs", "--base-url", "https://docs.example/").exit_code == 0
    found = invoke("search", "requirements compiler", "--db", db, "-c", "docs", "--json", "-k", "1")
    assert json.loads(found.output)[0]["url"] == "https://docs.example/install.md#requirements"


@pytest.mark.parametrize("url, fragment", [
    ("ftp://h.example/", "http:// or https://"),
    ("https://user:secret@h.example/", "user name or password"),
])
def test_cli_bad_base_url_is_one_line_and_writes_nothing(tmp_path, url, fragment):
    docs = write_files(tmp_path / "docs", FILES)
    db = tmp_path / "new.db"
    result = invoke("ingest", docs, "--db", db, "-c", "docs", "--base-url", url)
    assert_one_line_error(result, "--base-url: invalid base URL")
    assert fragment in result.stderr and "secret" not in result.stderr
    assert not db.exists()

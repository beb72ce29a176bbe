"""docindex/index_copy.py: an index copied with the search files its version names, the SQLite file last."""
from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from docindex import ann, ann_sidecar, index_copy
from docindex.index import Index
from docindex.ingest import ingest

from .conftest import write_files

THRESHOLD = 20


def corpus(root, files: int, words: str):
    return write_files(root, {f"f{i}.md": f"# File {i}\n\n" + "\n\n".join(
        f"## Part {p}\n\n{words} part {p} of file {i}. Each part says enough about itself, in a sentence of its own, to stand alone as a chunk of the index." for p in range(3)) for i in range(files)})


@pytest.fixture
def source(tmp_path, fake_embedder, monkeypatch):
    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, str(THRESHOLD))
    db = tmp_path / "src" / "index.db"
    db.parent.mkdir()
    ingest([corpus(tmp_path / "docs", 10, "replica autoscaling")], db, "big", embedder=fake_embedder)
    return db


def token_of(db):
    with sqlite3.connect(db) as conn:
        return ann_sidecar.read_token(conn)


def hits(db, embedder, query="replica part 2"):
    with Index(db, embedder=embedder) as index:
        assert index._snapshot is not None
        return set(index._snapshot.anns), [(h.chunk_id, round(h.fusion, 6), round(h.cosine, 5)) for h in index.search(query, k=5)]


def test_the_copy_carries_the_search_files_and_is_served_by_them(source, tmp_path, fake_embedder):
    dst = tmp_path / "dst" / "copy.db"
    token = index_copy.copy_index(source, dst, immutable=True)
    assert token is not None and token == token_of(source)
    assert sorted(p.name for p in ann_sidecar.folder(dst).iterdir()) == \
        sorted(p.name for p in ann_sidecar.folder(source).iterdir())
    assert not list(dst.parent.glob("*.partial"))
    anns, found = hits(dst, fake_embedder)
    assert anns == {"big"} and (anns, found) == hits(source, fake_embedder)


def test_a_newer_version_replaces_the_older_files(source, tmp_path, fake_embedder):
    dst = tmp_path / "dst" / "copy.db"
    first = index_copy.copy_index(source, dst)
    ingest([corpus(tmp_path / "docs", 12, "replica autoscaling")], source, "big", embedder=fake_embedder)
    second = index_copy.copy_index(source, dst)
    assert first != second
    names = {p.name for p in ann_sidecar.folder(dst).iterdir()}
    assert f"{second}.json" in names and not any(first in name for name in names)
    assert hits(dst, fake_embedder)[0] == {"big"}


def test_files_pruned_during_the_copy_make_it_start_again(source, tmp_path, monkeypatch):
    real, calls = index_copy._copy_files, []

    def pruned_once(src, dst, token):
        calls.append(token)
        if len(calls) == 1:
            raise FileNotFoundError(f"{src}/{token}.json")
        real(src, dst, token)

    monkeypatch.setattr(index_copy, "_copy_files", pruned_once)
    dst = tmp_path / "dst" / "copy.db"
    assert index_copy.copy_index(source, dst) == calls[-1] and len(calls) == 2
    assert dst.is_file() and not dst.with_name("copy.db.partial").exists()


def test_files_that_never_appear_fail_in_one_line_and_leave_no_copy(source, tmp_path):
    for entry in ann_sidecar.folder(source).glob("*.arrays"):
        entry.rename(entry.with_name("moved-away"))
    dst = tmp_path / "dst" / "copy.db"
    with pytest.raises(index_copy.CopyError, match="kept changing during 2 attempts"):
        index_copy.copy_index(source, dst, attempts=2)
    assert not dst.exists() and not dst.with_name("copy.db.partial").exists()


def test_below_the_threshold_only_the_sqlite_file_is_copied(tmp_path, fake_embedder):
    db = tmp_path / "small.db"
    ingest([corpus(tmp_path / "docs", 2, "tiny")], db, "small", embedder=fake_embedder)
    dst = tmp_path / "dst" / "copy.db"
    assert index_copy.copy_index(db, dst) is None
    assert dst.is_file() and not ann_sidecar.folder(dst).exists()
    assert hits(dst, fake_embedder) == hits(db, fake_embedder)


def test_the_command_line_says_what_it_did_or_one_line_why_not(source, tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "docindex.index_copy", *map(str, args)],
                              capture_output=True, text=True)

    ok = run("--immutable", source, tmp_path / "out" / "copy.db")
    assert ok.returncode == 0 and "with its search files v" in ok.stdout, ok.stderr
    missing = run(tmp_path / "nope.db", tmp_path / "out2.db")
    assert missing.returncode == 1 and missing.stderr.strip() == f"Error: no index file at {tmp_path / 'nope.db'}"
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all" * 100)
    junk = run(tmp_path / "junk.db", tmp_path / "out3.db")
    assert junk.returncode == 1 and junk.stderr.startswith("Error: ") and len(junk.stderr.splitlines()) == 1
    assert not (tmp_path / "out3.db").exists()

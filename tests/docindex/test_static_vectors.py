"""MiniLM's static token vectors: built from the shipped model, cached, and close enough to rank."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from docindex import static_vectors
from docindex.embedder import MODEL_DIM
from docindex.minilm import default_embedder


def test_the_first_build_returns_what_later_loads_return(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is cached as float16: the run that builds it must rank with those values too."""
    monkeypatch.setenv("DOCINDEX_CACHE_DIR", str(tmp_path))
    built = np.linspace(-1, 1, 7 * MODEL_DIM, dtype=np.float32).reshape(7, MODEL_DIM) / 3
    monkeypatch.setattr(static_vectors, "build_table", lambda model: built)
    first = static_vectors.load_table()
    assert first.dtype == np.float32 and not np.array_equal(first, built)     # float16 rounds these
    assert np.array_equal(static_vectors.load_table(), first)


def test_the_cached_table_covers_the_vocabulary_and_is_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    table = static_vectors.load_table()                     # cached by an earlier run (or built now, once)
    path = static_vectors.table_path()
    assert table.shape == (30522, MODEL_DIM) and table.dtype == np.float32 and path.is_file()
    stamp = path.stat().st_mtime_ns
    monkeypatch.setattr(static_vectors, "build_table", lambda *a, **k: pytest.fail("rebuilt a cached table"))
    assert np.array_equal(static_vectors.load_table(), table) and path.stat().st_mtime_ns == stamp


def test_an_unreadable_cache_file_is_rebuilt_atomically(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCINDEX_CACHE_DIR", str(tmp_path))
    path = static_vectors.table_path()
    path.write_bytes(b"not a numpy file")
    small = np.ones((4, MODEL_DIM), dtype=np.float32)
    monkeypatch.setattr(static_vectors, "build_table", lambda model: small)
    assert np.array_equal(static_vectors.load_table(), small)
    assert np.array_equal(np.load(path), small.astype(np.float16))
    assert [p.name for p in tmp_path.iterdir()] == [path.name]          # no temporary file left


def test_static_vectors_rank_like_minilm_on_a_small_set() -> None:
    static = static_vectors.static_embedder()
    question = "How do I limit the size of a request body?"
    sentences = ["Bodies larger than max_body_bytes are refused with HTTP 413.",
                 "The web page highlights the cited span when a citation is opened.",
                 "Bananas are rich in potassium."]
    vectors = static.embed([question, *sentences])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert static.name != default_embedder().name          # an index can never mistake them for MiniLM's
    cosines = vectors[1:] @ vectors[0]
    assert int(np.argmax(cosines)) == 0 and int(np.argmin(cosines)) == 2
    assert np.all(static.embed([""]) == 0)

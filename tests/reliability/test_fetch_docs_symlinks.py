"""fetch_docs against a cache someone has planted symlinks in (what
tests/mcp/test_fetch_docs.py does not cover: hostile *names* are covered
there): nothing is written, replaced or deleted outside the cache root."""
from __future__ import annotations

from pathlib import Path

import pytest

from docindex.fetch_docs import safe_segment, write_collection_tree
from tests.mcp.test_fetch_docs import chunk

CHUNKS = [chunk(1, "../../a.md", 0, "intro", ["Intro"], "body one"),
          chunk(2, "b/../../../etc/passwd", 0, "x", ["X"], "body two")]


def _outside(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("precious")
    return outside, {"keep.txt": "precious"}


def _contents(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in directory.rglob("*") if p.is_file()}


def test_a_collection_dir_symlinked_outside_is_refused(tmp_path: Path) -> None:
    outside, before = _outside(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "docs").symlink_to(outside, target_is_directory=True)
    with pytest.raises(Exception) as raised:
        write_collection_tree(CHUNKS, cache_root=cache, collection="docs", content_hash="abc123")
    assert "outside" in str(raised.value)
    assert _contents(outside) == before


@pytest.mark.parametrize("planted", ["target", "sibling"])
def test_symlinked_trees_inside_the_collection_are_neither_followed_nor_deleted(tmp_path: Path, planted: str) -> None:
    outside, before = _outside(tmp_path)
    cache = tmp_path / "cache"
    collection_dir = cache / "docs"
    collection_dir.mkdir(parents=True)
    name = safe_segment("abc123") if planted == "target" else "0ld0ld0ld0ld0ld0"
    (collection_dir / name).symlink_to(outside, target_is_directory=True)
    result = write_collection_tree(CHUNKS, cache_root=cache, collection="docs", content_hash="abc123")
    assert result.path.resolve().is_relative_to(cache.resolve())
    assert _contents(outside) == before                 # nothing written into or removed from it
    assert sorted(_contents(result.path)) and all(".." not in p for p in _contents(result.path))

"""The fetch_docs tree writer on crafted chunks: layout, frontmatter, caching, and path safety."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from docindex.fetch_docs import (
    MAX_SEGMENT_BYTES,
    safe_segment,
    source_dir_segments,
    write_collection_tree,
)


def chunk(doc_id: int, source: str, ordinal: int, anchor: str, heading_path: list[str], text: str, **extra):
    return {
        "chunk_id": doc_id * 1000 + ordinal,
        "doc_id": doc_id,
        "source": source,
        "doc_title": extra.pop("doc_title", heading_path[0] if heading_path else source),
        "anchor": anchor,
        "heading_path": heading_path,
        "level": len(heading_path),
        "ordinal": ordinal,
        "text": text,
        "url": extra.pop("url", None),
    }


HOSTILE_NAMES = [
    "../../../../etc/passwd",
    "/etc/shadow",
    "..",
    ".",
    "",
    "a\x00b/../../c",
    "C:\\Windows\\system32\\evil.md",
    "\\\\server\\share\\x.md",
    "x" * 5000 + ".md",
    "é" * 300,
    "..\u202e/../gpj.exe",
    "CON.md",
    ".hidden/.git/config",
    "line\nbreak\r\ttab.md",
    "a/" * 200 + "deep.md",
    "~/.ssh/authorized_keys",
    "$(rm -rf ~)`x`.md",
    "日本語/ドキュメント.md",
]


def files_under(root: Path) -> list[Path]:
    return [Path(dirpath) / f for dirpath, _dirs, fs in os.walk(root) for f in fs]


def snapshot_outside(base: Path, inside: Path) -> set[Path]:
    return {p for p in files_under(base) if not p.resolve().is_relative_to(inside.resolve())}


def test_tree_has_one_file_per_section_with_frontmatter(tmp_path: Path):
    chunks = [
        chunk(1, "guide/install.md", 0, "installation", ["Installation"], "Install it."),
        chunk(1, "guide/install.md", 1, "requirements", ["Installation", "Requirements"], "Python 3.11.",
              url="https://example.org/install#requirements"),
        chunk(2, "faq.md", 0, "faq", ["FAQ"], "Questions."),
    ]
    result = write_collection_tree(chunks, cache_root=tmp_path, collection="docs", content_hash="abc123")

    assert result.sections == 3 and not result.up_to_date
    assert result.path.is_relative_to(tmp_path / "docs")
    install = next(d for d in result.tree if d.source == "guide/install.md")
    assert install.dir == "guide/install"
    assert [s.anchor for s in install.sections] == ["installation", "requirements"]
    text = (result.path / install.sections[1].file).read_text()
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    assert meta == {
        "title": "Requirements",
        "source": "guide/install.md",
        "anchor": "requirements",
        "url": "https://example.org/install#requirements",
        "heading_path": ["Installation", "Requirements"],
    }
    assert body.strip() == "Python 3.11."
    assert "url" not in yaml.safe_load((result.path / install.sections[0].file).read_text().split("---\n")[1])
    assert "guide/install/000-installation.md" in (result.path / "INDEX.md").read_text()


def test_split_section_is_rejoined_without_its_overlap(tmp_path: Path):
    first = "Paragraph one is here.\n\nParagraph two overlaps the next chunk."
    second = "Paragraph two overlaps the next chunk.\n\nParagraph three ends it."
    chunks = [
        chunk(1, "a.md", 0, "long", ["Long"], first),
        chunk(1, "a.md", 1, "long", ["Long"], second),
    ]
    result = write_collection_tree(chunks, cache_root=tmp_path, collection="c", content_hash="h1")
    body = (result.path / result.tree[0].sections[0].file).read_text().split("---\n", 2)[2]
    assert body.count("Paragraph two overlaps") == 1
    assert body.strip().endswith("Paragraph three ends it.")
    assert result.sections == 1


def test_unchanged_hash_reuses_the_tree_and_force_rewrites_it(tmp_path: Path):
    chunks = [chunk(1, "a.md", 0, "a", ["A"], "text")]
    first = write_collection_tree(chunks, cache_root=tmp_path, collection="c", content_hash="h1")
    marker = first.path / "a" / "000-a.md"
    mtime = marker.stat().st_mtime_ns

    def must_not_be_read():
        raise AssertionError("chunks were read although the tree is up to date")
        yield

    again = write_collection_tree(must_not_be_read(), cache_root=tmp_path, collection="c", content_hash="h1")
    assert again.up_to_date and again.path == first.path and again.tree == first.tree
    assert marker.stat().st_mtime_ns == mtime

    forced = write_collection_tree(chunks, cache_root=tmp_path, collection="c", content_hash="h1", force=True)
    assert not forced.up_to_date and forced.path == first.path and marker.exists()


def test_new_hash_writes_a_new_tree_and_prunes_the_old_one(tmp_path: Path):
    old = write_collection_tree([chunk(1, "a.md", 0, "a", ["A"], "v1")], cache_root=tmp_path, collection="c", content_hash="h1")
    new = write_collection_tree([chunk(1, "a.md", 0, "a", ["A"], "v2")], cache_root=tmp_path, collection="c", content_hash="h2")
    assert new.path != old.path and not old.path.exists()
    assert "v2" in (new.path / "a" / "000-a.md").read_text()
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [new.path.name]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_safe_segment_cannot_escape_or_overflow(name: str):
    segment = safe_segment(name)
    assert segment and segment not in (".", "..")
    assert "/" not in segment and "\\" not in segment and "\x00" not in segment
    assert not segment.startswith(".")
    assert len(segment.encode()) <= MAX_SEGMENT_BYTES
    for part in source_dir_segments(name):
        assert part and not part.startswith(".") and "/" not in part


def test_truncated_names_stay_distinct():
    assert safe_segment("x" * 500 + "a") != safe_segment("x" * 500 + "b")


def test_hostile_sources_and_headings_stay_inside_the_cache(tmp_path: Path):
    cache = tmp_path / "cache"
    chunks = []
    for i, name in enumerate(HOSTILE_NAMES):
        chunks.append(chunk(i + 1, name, 0, name, [name, "---\nevil: true\n---"], f"body {i}"))
        chunks.append(chunk(i + 1, name, 1, "../" + name, [name], f"second {i}"))
    result = write_collection_tree(chunks, cache_root=cache, collection="../../escape\x00", content_hash="../h")

    assert snapshot_outside(tmp_path, cache) == set()
    assert result.path.resolve().is_relative_to(cache.resolve())
    assert result.sections == 2 * len(HOSTILE_NAMES)
    written = files_under(result.path)
    assert len(written) == 2 * len(HOSTILE_NAMES) + 2  # + INDEX.md and the manifest
    for document in result.tree:
        for section in document.sections:
            text = (result.path / section.file).read_text()
            meta = yaml.safe_load(text.split("---\n", 2)[1])
            assert meta["source"] == document.source  # the frontmatter keeps the real name, escaped
            assert "evil" not in meta


def test_colliding_names_get_distinct_paths(tmp_path: Path):
    chunks = [
        chunk(1, "a.md", 0, "x", ["X"], "one"),
        chunk(2, "a.txt", 0, "x", ["X"], "two"),
        chunk(3, "A.md", 0, "x", ["X"], "three"),
        chunk(4, "a/000-x.md.md", 0, "x", ["X"], "four"),
        chunk(5, "INDEX.md", 0, "x", ["X"], "five"),
    ]
    result = write_collection_tree(chunks, cache_root=tmp_path, collection="c", content_hash="h")
    files = [s.file for d in result.tree for s in d.sections]
    assert len({f.casefold() for f in files}) == 5
    bodies = sorted((result.path / f).read_text().split("---\n", 2)[2].strip() for f in files)
    assert bodies == sorted(["one", "two", "three", "four", "five"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sources=st.lists(st.text(min_size=0, max_size=120), min_size=1, max_size=4),
    heading=st.text(max_size=200),
)
def test_any_names_stay_inside_the_cache(tmp_path_factory, sources, heading):
    base = tmp_path_factory.mktemp("fuzz")
    cache = base / "cache"
    chunks = [chunk(i + 1, s, 0, heading, [heading], "t") for i, s in enumerate(sources)]
    result = write_collection_tree(chunks, cache_root=cache, collection=heading, content_hash="h")
    assert snapshot_outside(base, cache) == set()
    assert len(files_under(result.path)) == len(sources) + 2


def test_a_damaged_tree_is_replaced(tmp_path: Path):
    chunks = [chunk(1, "a.md", 0, "a", ["A"], "text")]
    first = write_collection_tree(chunks, cache_root=tmp_path, collection="c", content_hash="h1")
    (first.path / ".docindex-tree").write_text("{not json")
    (first.path / "a" / "000-a.md").unlink()
    again = write_collection_tree(chunks, cache_root=tmp_path, collection="c", content_hash="h1")
    assert not again.up_to_date and (again.path / "a" / "000-a.md").is_file()


def test_concurrent_writers_of_the_same_content_converge_on_one_tree(tmp_path: Path):
    from concurrent.futures import ThreadPoolExecutor

    chunks = [chunk(d, f"doc{d}.md", 0, "s", ["S"], "text " * 50) for d in range(1, 30)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(
            lambda _: write_collection_tree(chunks, cache_root=tmp_path, collection="c", content_hash="h1"), range(4)))
    assert len({r.path for r in results}) == 1
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == [results[0].path.name]
    assert len(files_under(results[0].path)) == 29 + 2


def test_an_unwritable_cache_is_a_store_error_naming_the_directory(tmp_path: Path):
    from docindex.errors import StoreError
    from docindex.mcp.tools import IndexService, _fetch

    class OneCollection:
        def refresh(self) -> bool:
            return False

        def collections(self):
            return [type("Info", (), {"name": "c"})()]

        def content_hash(self, collection: str) -> str:
            return "h"

        def iter_chunks(self, collection: str):
            return iter([chunk(1, "a.md", 0, "a", ["A"], "text")])

    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    service = IndexService(OneCollection(), db_path=tmp_path / "x.db", default_collection=None, cache_root=blocker / "fetch_docs")
    with pytest.raises(StoreError, match="cannot write the docs tree under .*not-a-dir"):
        _fetch(service, None, force=False)

"""The doc-tree archive's format and its safe unpacking (docindex/tree_archive.py),
and the endpoint cache's folder names (docindex/mcp/endpoint.py)."""
from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from docindex.mcp.endpoint import EndpointError, archive_url, collection_folder
from docindex.tree_archive import UnsafeArchive, pack_tree, unpack_tree


def _tree(root: Path) -> Path:
    (root / "a" / "b").mkdir(parents=True)
    (root / "INDEX.md").write_text("# index\n")
    (root / "a" / "b" / "s.md").write_text("---\ntitle: S\n---\ntext\n")
    return root


def _tar(*members: tuple[tarfile.TarInfo, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return buffer.getvalue()


def _file(name: str, data: bytes = b"x", size: int | None = None) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data) if size is None else size
    return info, data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, b""


def test_pack_is_deterministic_and_round_trips(tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree")
    (tmp_path / "outside").write_text("secret")
    (root / "link.md").symlink_to(tmp_path / "outside")
    data = pack_tree(root)
    assert data == pack_tree(root)                          # same tree, same bytes, same hash
    unpack_tree(data, tmp_path / "out")
    assert (tmp_path / "out" / "a" / "b" / "s.md").read_text() == "---\ntitle: S\n---\ntext\n"
    assert not (tmp_path / "out" / "link.md").exists()      # links are never packed


@pytest.mark.parametrize("member", [
    _file("/etc/passwd"), _file("../escape.md"), _file("a/../../escape.md"), _file("a//b.md"), _file("./a.md"),
    _link("a.md", "/etc/passwd"), _link("b.md", "INDEX.md", tarfile.LNKTYPE), _file("a\\..\\b.md"),
], ids=["absolute", "dotdot", "inner-dotdot", "empty-part", "dot", "symlink", "hardlink", "backslash"])
def test_unsafe_members_are_refused_and_nothing_stays(tmp_path: Path, member: tuple[tarfile.TarInfo, bytes]) -> None:
    with pytest.raises(UnsafeArchive):
        unpack_tree(_tar(_file("INDEX.md"), member), tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_size_count_duplicates_and_garbage_are_refused(tmp_path: Path) -> None:
    big = _tar(_file("a.md", b"x" * 600), _file("b.md", b"y" * 600))
    with pytest.raises(UnsafeArchive, match="more than 1000 bytes"):
        unpack_tree(big, tmp_path / "o1", max_bytes=1000)
    with pytest.raises(UnsafeArchive, match="more than 1 members"):
        unpack_tree(big, tmp_path / "o2", max_members=1)
    with pytest.raises(UnsafeArchive, match="twice"):
        unpack_tree(_tar(_file("a.md"), _file("a.md")), tmp_path / "o3")
    with pytest.raises(UnsafeArchive, match="not a readable"):
        unpack_tree(gzip.compress(b"not a tar at all" * 100), tmp_path / "o4")
    with pytest.raises(UnsafeArchive, match="not a readable"):
        unpack_tree(b"\x1f\x8b broken", tmp_path / "o5")
    assert list(tmp_path.iterdir()) == []


def test_collections_that_fold_alike_get_distinct_folders(tmp_path: Path) -> None:
    url = archive_url("http://127.0.0.1:8000/ask")
    folders = {collection_folder(tmp_path, url, name) for name in ("p/q", "p_q", "p q", None)}
    assert len(folders) == 4 and all(f.parent == tmp_path / "127.0.0.1_8000" for f in folders)


def test_archive_url_from_the_ask_endpoint_or_the_service() -> None:
    assert archive_url("http://h:1/ask") == archive_url("http://h:1/ask/") == "http://h:1/ask/archive"
    assert archive_url("https://h/base") == "https://h/base/ask/archive"
    with pytest.raises(EndpointError):
        archive_url("file:///etc/passwd")

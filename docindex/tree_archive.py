"""A fetch_docs tree as one tar.gz, and back, safely.

`pack_tree` is what a deployed service sends (`GET /ask/archive`): the tree
fetch_docs wrote, regular files and directories only, in sorted order with
fixed owners, modes and times, so the same tree always packs to the same
bytes. `unpack_tree` is what `docindex serve-mcp --endpoint` does with them:
the archive comes from the network, so nothing in it is trusted:

- every member name is relative, has no `..`, empty, `.` or NUL part, and is
  at most `MAX_NAME_BYTES`; links, devices and FIFOs are refused;
- the members' sizes are checked before any byte is written (the total at
  most `max_bytes`, at most `max_members` of them), and the compressed input
  is bounded by the caller before it gets here;
- files are created with O_EXCL | O_NOFOLLOW under a destination this
  process created itself, each path checked to resolve inside it.

Any violation raises `UnsafeArchive` and nothing of it stays on disk.
"""
from __future__ import annotations

import gzip
import io
import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath

from .errors import DocindexError

MAX_NAME_BYTES = 1024
DEFAULT_MAX_BYTES = 256 * 1024 * 1024        # unpacked
DEFAULT_MAX_MEMBERS = 200_000


class UnsafeArchive(DocindexError):
    """The archive is damaged, too big, or names a path it may not."""


def pack_tree(root: Path) -> bytes:
    """The tree under `root` as deterministic tar.gz bytes (regular files and directories only)."""
    buffer = io.BytesIO()
    # mtime=0 in the gzip header too: the same tree gives the same bytes, hence the same hash.
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            info = tarfile.TarInfo(path.relative_to(root).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            if path.is_dir():
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.size, info.mode = path.stat().st_size, 0o644
                with path.open("rb") as f:
                    tar.addfile(info, f)
    return buffer.getvalue()


def _checked_name(name: str) -> PurePosixPath:
    if "\x00" in name or len(name.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        raise UnsafeArchive(f"archive member name refused: {name[:80]!r}")
    path = PurePosixPath(name)
    if path.is_absolute() or name.startswith("/") or "\\" in name:
        raise UnsafeArchive(f"archive member has an absolute path: {name[:80]!r}")
    if any(part in ("", ".", "..") for part in name.rstrip("/").split("/")):
        raise UnsafeArchive(f"archive member leaves its folder or names nothing: {name[:80]!r}")
    return path


def _members(data: bytes, max_bytes: int, max_members: int) -> list[tarfile.TarInfo]:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members: list[tarfile.TarInfo] = []
            total = 0
            for info in tar:                    # headers only: sizes are checked before extraction
                if len(members) >= max_members:
                    raise UnsafeArchive(f"archive has more than {max_members} members")
                _checked_name(info.name)
                if not (info.isreg() or info.isdir()):
                    raise UnsafeArchive(f"archive member is not a plain file or folder: {info.name[:80]!r}")
                total += info.size
                if total > max_bytes:
                    raise UnsafeArchive(f"archive unpacks to more than {max_bytes} bytes")
                members.append(info)
            return members
    except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as e:
        raise UnsafeArchive(f"not a readable tar.gz archive: {e}") from None


def unpack_tree(data: bytes, dest: Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
                max_members: int = DEFAULT_MAX_MEMBERS) -> None:
    """Unpack `data` into `dest`, which must not exist yet (it is created here)."""
    members = _members(data, max_bytes, max_members)
    dest.mkdir(mode=0o755)
    root = dest.resolve()
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for info in members:
                target = root.joinpath(*_checked_name(info.name).parts)
                if not target.parent.resolve().is_relative_to(root):
                    raise UnsafeArchive(f"archive member leaves its folder: {info.name[:80]!r}")
                if info.isdir():
                    target.mkdir(mode=0o755, parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                source = tar.extractfile(info)
                if source is None:
                    raise UnsafeArchive(f"archive member has no data: {info.name[:80]!r}")
                fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "wb") as out:
                    shutil.copyfileobj(source, out)
    except BaseException as e:
        shutil.rmtree(dest, ignore_errors=True)
        if isinstance(e, FileExistsError):
            raise UnsafeArchive("archive names one file twice") from None
        if isinstance(e, (tarfile.TarError, EOFError, gzip.BadGzipFile)):
            raise UnsafeArchive(f"not a readable tar.gz archive: {e}") from None
        raise

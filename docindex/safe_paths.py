"""Names and writes that stay inside a tree, whatever the names they are built from.

Document sources and headings come from whoever wrote the documents, so
nothing here trusts them: every path segment is sanitized (no separators,
NUL, control characters, `.`/`..`, leading dots, reserved device names),
capped in bytes and made unique within its directory; directory depth is
capped; every destination is resolved and checked to lie inside the tree
before a byte is written, and files are created with O_EXCL | O_NOFOLLOW.

Used by fetch_docs (the tree of a collection) and mcp/endpoint (a pulled tree).
"""
from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from pathlib import Path

# NAME_MAX is 255 bytes on Linux filesystems; stay far below so that a
# uniqueness suffix and a ".md" extension always fit.
MAX_SEGMENT_BYTES = 80
# A hostile source like "a/a/a/.../a" must not build a path past PATH_MAX.
MAX_SOURCE_DEPTH = 8

_UNSAFE_CHARS = re.compile(r"[^\w.\-+=,@~()]+", re.UNICODE)
_WINDOWS_RESERVED = {
    "con", "prn", "aux", "nul",
    *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10)),
}


class UnsafePathError(RuntimeError):
    """A computed destination fell outside the tree: a bug in sanitizing, never written."""


def safe_segment(name: str, *, fallback: str = "_", max_bytes: int = MAX_SEGMENT_BYTES) -> str:
    """One file or directory name that cannot escape, hide, or overflow.

    Keeps letters and digits of any script (NFC), `.-_+=,@~()`; everything
    else becomes `_`. A name that had to be truncated gets a short hash of
    the original so two long names sharing a prefix stay distinct.
    """
    original = name
    name = unicodedata.normalize("NFC", name)
    name = "".join(ch for ch in name if unicodedata.category(ch)[0] != "C")  # NUL, controls, bidi overrides
    name = _UNSAFE_CHARS.sub("_", name).strip("_")
    name = name.lstrip(".")  # no ".", "..", or hidden files
    if not name:
        name = fallback
    if name.split(".")[0].lower() in _WINDOWS_RESERVED:
        name = "_" + name
    encoded = name.encode("utf-8")
    if len(encoded) > max_bytes:
        digest = hashlib.sha256(original.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        keep = encoded[: max_bytes - len(digest) - 1].decode("utf-8", "ignore").rstrip("._-")
        name = f"{keep or '_'}-{digest}"
    return name


def source_dir_segments(source: str) -> list[str]:
    """Directory segments for a document source path ("a/b/c.md" -> ["a", "b", "c"]).

    Absolute paths, drive letters, `..` and empty segments are dropped, so the
    document always lands inside the tree; the extension of the last segment
    is dropped because the document becomes a directory of sections.
    """
    parts = [p for p in re.split(r"[\\/]+", source) if p not in ("", ".", "..")]
    if parts and re.fullmatch(r"[A-Za-z]:", parts[0]):
        parts = parts[1:]
    if parts:
        stem, dot, ext = parts[-1].rpartition(".")
        if dot and stem and ext.isalnum() and len(ext) <= 8:
            parts[-1] = stem
    parts = parts or ["document"]
    if len(parts) > MAX_SOURCE_DEPTH:
        # Keep the leaf names readable; fold the excess into one segment.
        parts = parts[: MAX_SOURCE_DEPTH - 1] + ["_".join(parts[MAX_SOURCE_DEPTH - 1 :])]
    return [safe_segment(p, fallback="document") for p in parts]


class _Namespace:
    """Names already used per directory, compared case-insensitively (case-folding filesystems exist).

    Shared directories (a source's parent folders) may be reused; a document's
    own directory and every file get a name nothing else in that directory has.
    """

    _SHARED, _OWNED = "shared", "owned"

    def __init__(self) -> None:
        self._taken: dict[tuple[str, ...], dict[str, str]] = {}

    def shared_dir(self, parent: tuple[str, ...], name: str) -> str:
        taken = self._taken.setdefault(parent, {})
        if taken.get(name.casefold()) == self._SHARED:
            return name
        return self._claim(taken, name, "", self._SHARED)

    def unique(self, parent: tuple[str, ...], name: str, suffix: str = "") -> str:
        return self._claim(self._taken.setdefault(parent, {}), name, suffix, self._OWNED)

    @staticmethod
    def _claim(taken: dict[str, str], name: str, suffix: str, kind: str) -> str:
        candidate, n = name, 1
        while (candidate + suffix).casefold() in taken:
            n += 1
            candidate = f"{name}~{n}"
        taken[(candidate + suffix).casefold()] = kind
        return candidate + suffix


def _contained(root: Path, relative: Path) -> Path:
    """`root / relative`, refusing anything that resolves outside `root`."""
    destination = (root / relative).resolve()
    if not destination.is_relative_to(root):
        raise UnsafePathError(f"refusing to write outside the tree: {relative!s}")
    return destination


def _write_file(root: Path, relative: Path, text: str) -> None:
    destination = _contained(root, relative)
    destination.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(destination, flags, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)

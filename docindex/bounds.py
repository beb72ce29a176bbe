"""Bounds on what one file may cost ingest: which files are read, how much, how long a block is.

A file is read only if it is a regular file (a FIFO blocks forever, /dev/zero
never ends) no larger than the size bound, checked on the open file before
reading; the read stops one byte past the bound, so a file that grows
meanwhile is refused rather than read whole. Text is cut into pieces of a
bounded length before the chunker sees it (cut_text, cut_code), so a paragraph
with no sentence end costs no more memory than many short ones.
"""
from __future__ import annotations

import os
import stat as stat_module
import zlib
from pathlib import Path


class UnreadableFile(Exception):
    """The file cannot be read as its format says (reported, then skipped)."""

    group = ""      # a bulk kind (discover.Skipped.group): many such files are reported in one line


REDIRECT_GROUP = "redirect page"    # html_reader finds them; reported like the discovery's bulk skips
SOURCE_LISTING_GROUP = "source listing"
COPY_GROUP = "copy of the pages"    # ingest finds them (copies.py): a PDF or text file repeating the HTML pages


class NotADocument(UnreadableFile):
    """The file reads, but holds no document of its own (an HTML redirect page): skipped, reported by kind."""

    def __init__(self, reason: str, group: str) -> None:
        super().__init__(reason)
        self.group = group


DEFAULT_MAX_FILE_BYTES = 20_000_000         # a 20 MB Markdown file is ~20,000 chunks
MAX_BLOCK_CHARS = 8_000                     # ~2,000 tokens: far above a real paragraph
MAX_HEADING_CHARS = 500                     # a heading is repeated in every chunk of its section
MAX_PDF_TEXT_CHARS = 32_000_000
_READ_STEP = 1 << 20

_FILE_KINDS = [(stat_module.S_ISFIFO, "a FIFO"), (stat_module.S_ISCHR, "a character device"),
               (stat_module.S_ISBLK, "a block device"), (stat_module.S_ISSOCK, "a socket"),
               (stat_module.S_ISLNK, "a symbolic link"), (stat_module.S_ISDIR, "a directory")]


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO", "a character device", …)."""
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


def too_large(size: int, max_bytes: int) -> str:
    return f"{size / 1e6:.1f} MB, over the {max_bytes / 1e6:g} MB limit (--max-file-mb)"


def read_regular_file(path: Path, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of `path` if it is a regular file of at most `max_bytes`; else UnreadableFile.

    Opened without blocking (a FIFO would wait forever for a writer) and without
    following a final symbolic link (the caller resolved links it allows); the
    type and size are checked on the open file, and the read stops one byte
    past the bound, so a file that grows meanwhile is refused, not read whole.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise UnreadableFile("became a symbolic link while ingesting") from None
        raise UnreadableFile(exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat_module.S_ISREG(info.st_mode):
            raise UnreadableFile(f"not a regular file ({file_kind(info.st_mode)})")
        if info.st_size > max_bytes:
            raise UnreadableFile(too_large(info.st_size, max_bytes))
        parts: list[bytes] = []
        remaining = max_bytes + 1
        while remaining > 0:
            part = os.read(fd, min(remaining, _READ_STEP))
            if not part:
                break
            parts.append(part)
            remaining -= len(part)
        if remaining <= 0:
            raise UnreadableFile(f"grew past the {max_bytes / 1e6:g} MB limit while being read (--max-file-mb)")
        return b"".join(parts)
    except OSError as exc:
        raise UnreadableFile(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def gunzip(data: bytes, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The content of a gzip file (Debian compresses every larger page under /usr/share/doc),
    decompressed in steps and refused one byte past `max_bytes`: a small file that inflates
    to gigabytes (a gzip bomb) costs no more memory than the size bound allows."""
    inflate = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    parts: list[bytes] = []
    size = 0
    pending = data
    try:
        while pending and not inflate.eof:
            part = inflate.decompress(pending, _READ_STEP)
            size += len(part)
            if size > max_bytes:
                raise UnreadableFile(f"decompresses to over the {max_bytes / 1e6:g} MB limit (--max-file-mb)")
            parts.append(part)
            pending = inflate.unconsumed_tail
    except zlib.error as exc:
        raise UnreadableFile(f"not a valid gzip file ({exc})") from None
    if not inflate.eof:
        raise UnreadableFile("not a valid gzip file (truncated)")
    return b"".join(parts)


_SENTENCE_BREAKS = ("\n", ". ", "! ", "? ", "。", "！", "？", "; ")
_SPACE_BREAKS = (" ", "\t")


def cut_text(text: str, max_chars: int) -> list[str]:
    """`text` in pieces of at most `max_chars`, cut after the last sentence end in the
    second half of each window, else after the last space there, else anywhere."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > max_chars:
        low, high = start + max_chars // 2, start + max_chars
        cut = _last_break(text, low, high, _SENTENCE_BREAKS) or _last_break(text, low, high, _SPACE_BREAKS) or high
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def _last_break(text: str, low: int, high: int, separators: tuple[str, ...]) -> int:
    best = -1
    for sep in separators:
        found = text.rfind(sep, low, high)
        if found >= 0:
            best = max(best, found + len(sep))
    return best if best > low else 0


def cut_code(code: str, max_chars: int) -> list[str]:
    lines = code.split("\n")
    opener = closer = "```"
    if lines and lines[0].lstrip().startswith(("```", "~~~")):
        opener = lines.pop(0).strip()[:max_chars // 4]
        fence = opener[0] * (len(opener) - len(opener.lstrip(opener[0])))
        closer = fence
        if lines and lines[-1].strip() and set(lines[-1].strip()) == {fence[0]}:
            lines.pop()
    room = max(max_chars - len(opener) - len(closer) - 2, 16)
    pieces: list[str] = []
    current: list[str] = []
    used = 0
    for line in lines:
        for part in ([line] if len(line) <= room else cut_text(line, room)):
            if current and used + len(part) + 1 > room:
                pieces.append("\n".join(current))
                current, used = [], 0
            current.append(part)
            used += len(part) + 1
    if current:
        pieces.append("\n".join(current))
    return [f"{opener}\n{piece}\n{closer}" for piece in pieces]

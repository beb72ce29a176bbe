"""One file read and chunked without touching the index: what ingest does per file,
here or in a `--ray` worker (docindex/ingest_ray.py runs exactly `read_file`).

`read_file` gives a `FileResult`: a document to write, nothing new, or why the
file was skipped. A `Prepare` hook (ingest's `prepare`) does this elsewhere and
hands back each document's vectors as `Embedded`; both make vectors with
`embed_in_slices`.
"""
from __future__ import annotations

import hashlib
import os
import stat as stat_module
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np

from .bounds import UnreadableFile, file_kind, read_regular_file, too_large
from .chunking import Chunk, chunk_blocks
from .discover import Candidate
from .embedder import Embedder
from .extract import document_stem, extract

EMBED_MAX_TEXTS = 1024      # texts per embed call: one huge file is embedded in slices


def embed_in_slices(embedder: Embedder, texts: list[str]) -> np.ndarray:
    """`texts`' vectors, embedded EMBED_MAX_TEXTS at a time; a (0, dim) array for none."""
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    return np.concatenate([embedder.embed(texts[start:start + EMBED_MAX_TEXTS])
                           for start in range(0, len(texts), EMBED_MAX_TEXTS)])


@dataclass
class Pending:
    candidate: Candidate
    sha256: str
    size: int
    mtime_ns: int
    title: str
    metadata: dict[str, Any]
    chunks: list[Chunk]
    doc_id: int | None          # set when replacing a known document



@dataclass
class FileResult:
    """What reading one file gave: a document to write (`pending`), nothing new
    (`unchanged`, with `new_stat` when it was touched), or why it was skipped (`error`)."""
    candidate: Candidate
    known: tuple[int, str, int, int] | None      # (doc_id, sha256, size, mtime_ns) of the indexed version
    pending: Pending | None = None
    unchanged: bool = False
    new_stat: tuple[int, int] | None = None     # (size, mtime_ns) to remember for identical content
    error: str | None = None
    group: str = ""             # the skip's bulk kind, if it has one (reported in one line from a few files on)


class Embedded(NamedTuple):
    """A document's chunk vectors made elsewhere, with their quote-vector blobs if made there too."""
    vectors: np.ndarray
    quotes: list[bytes | None] | None = None


class Prepare(Protocol):
    """Reads, chunks and embeds the candidates elsewhere (docindex/ingest_ray.py); yields one
    (result, embedded) per candidate, in the candidates' order (embedded None: embed here)."""

    def __call__(self, candidates: list[Candidate], known: dict[str, tuple[int, str, int, int]], *, force: bool,
                 max_bytes: int) -> Iterable[tuple[FileResult, Embedded | None]]: ...


def read_file(candidate: Candidate, known: tuple[int, str, int, int] | None, count_tokens: Callable[[str], int],
              *, force: bool, max_bytes: int) -> FileResult:
    """One file, read and chunked without touching the index: type and size checked by stat
    before anything is read (a file skipped here keeps its previous version in the collection,
    if it had one). Pure, so `--ray` workers run exactly this (docindex/ingest_ray.py)."""
    try:
        stat = os.lstat(candidate.read_path)
        if not stat_module.S_ISREG(stat.st_mode):      # swapped since discovery
            raise UnreadableFile(f"not a regular file ({file_kind(stat.st_mode)})")
        if stat.st_size > max_bytes:
            raise UnreadableFile(too_large(stat.st_size, max_bytes))
        if known and not force and (stat.st_size, stat.st_mtime_ns) == (known[2], known[3]):
            return FileResult(candidate, known, unchanged=True)          # fast path: no read, no hash
        data = read_regular_file(candidate.read_path, max_bytes)
        sha256 = hashlib.sha256(data).hexdigest()
        if known and not force and sha256 == known[1]:                   # touched but identical
            return FileResult(candidate, known, unchanged=True, new_stat=(stat.st_size, stat.st_mtime_ns))
        extracted = extract(candidate.path, data, max_bytes)
        del data
    except (UnreadableFile, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return FileResult(candidate, known, error=f"{candidate.path}: {reason}", group=getattr(exc, "group", ""))
    title = extracted.title or document_stem(candidate.path)
    chunks = chunk_blocks(extracted.blocks, title, count_tokens)
    return FileResult(candidate, known, pending=Pending(
        candidate, sha256, stat.st_size, stat.st_mtime_ns, title, extracted.metadata, chunks,
        known[0] if known else None))

"""Ingest: files → chunks → vectors → one SQLite transaction.

Per file, SHA-256 decides: unchanged files are skipped (size + mtime equal to
the recorded ones skip even the hashing), changed files are re-chunked in
place (their doc_id is kept), files no longer under the given paths are
removed from the collection. Everything a run writes is one transaction, so a
run killed at any point leaves the previous index as it was; readers in
other processes see the old index until the commit, then the new one (the
index version is bumped in the same commit).

The filesystem is treated as hostile (discover.py, bounds.py): links leaving
the given paths are not followed, only regular files are read, each within a
size bound checked before reading, and every file not ingested is reported in
`IngestReport.errors` ("PATH: reason"), never a reason to stop the run.
"""
from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import ann_build, quotable, store
from .blocks import READING_VERSION
from .bounds import DEFAULT_MAX_FILE_BYTES
from .chunking import Chunk
from .copies import COPY_GROUP, COPY_REASON, COPY_SHARE, CopyCheck, is_copy_format, is_page
from .discover import Candidate, NothingToIngest, Skipped, discover, skip_lines
from .embedder import MODEL_DIM, MODEL_NAME, Embedder
from .errors import InputError, StoreError
from .ingest_read import Embedded, FileResult, Pending, Prepare, embed_in_slices, read_file
from .links import check_base_url
from .minilm import default_embedder
from .textsearch import index_text

if TYPE_CHECKING:
    from rich.progress import Progress

EMBED_FLUSH_CHUNKS = 256    # embed and write once this many chunks are pending
# Chunks embedded at once while ingesting, one ORT thread each (queries use one in
# all): one per usable core, at most 8.
_USABLE_CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
INGEST_WORKERS = max(1, min(8, _USABLE_CORES))


@dataclass
class IngestReport:
    added: int = 0
    changed: int = 0
    removed: int = 0
    skipped: int = 0                # reported files: not a document, outside the paths, too large, unreadable
    unchanged: int = 0
    chunks: int = 0                 # chunks written (or that would be, in a dry run)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)    # "PATH: reason" per skip; a bulk kind in one line (skip_lines)
    skips: list[Skipped] = field(default_factory=list)     # the discovery's and the reading's, until reported
    changes: list[tuple[str, str]] = field(default_factory=list)   # ("add" | "change" | "remove", source)
    dry_run: bool = False
    index_version: int | None = None
    read_again: int | None = None   # the older reading rules' version when every file was read again

    def summary(self) -> str:
        counts = (f"{self.added} added, {self.changed} changed, {self.removed} removed, "
                  f"{self.unchanged} unchanged, {self.skipped} skipped")
        if self.dry_run:
            return f"dry run: {counts}; {self.chunks} chunks would be written; nothing written ({self.seconds:.1f} s)"
        version = f" (index version {self.index_version})" if self.index_version is not None else ""
        return f"{counts}; {self.chunks} chunks in {self.seconds:.1f} s{version}"


def ingest(
    paths: list[Path],
    db: Path,
    collection: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    progress: bool = False,
    embedder: Embedder | None = None,
    follow_external_links: bool = False,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    prepare: Prepare | None = None,
    base_url: str | None = None,
    quote_vectors: bool = True,
) -> IngestReport:
    """Bring `collection` in `db` in line with the files under `paths`. `base_url`, when
    given, replaces the collection's stored one (links.py); None keeps it. `quote_vectors`:
    also embed each chunk's quotable sentences (docindex/quotable.py), so the extractive
    engine scores them without running the model per answer (about twice the ingest
    time, and ~4 KB a chunk: KNOWN_LIMITATIONS.md).

    Raises NothingToIngest (an IngestError, with `.skipped`) when no file can be
    ingested; then nothing is written and the collection is left as it was.
    """
    started = time.perf_counter()
    collection = _checked_collection(collection)
    base_url = None if base_url is None else check_base_url(base_url)
    if max_file_bytes < 1:
        raise InputError(f"the file size limit must be positive, not {max_file_bytes} bytes")
    db = Path(db)
    report = IngestReport(dry_run=dry_run)
    candidates, skipped = discover([Path(p) for p in paths], follow_external_links=follow_external_links)
    report.skipped += len(skipped)
    report.skips.extend(skipped)

    if dry_run:
        conn = None
        meta: dict[str, str] = {}
        if db.exists():
            conn, meta = store.open_existing(db)
    else:
        conn, meta = store.open_for_ingest(db)
    try:
        if not dry_run:
            assert conn is not None     # opened for ingest above: only a dry run may have no index
            _begin(conn, db)     # from here on, what we read is what we write against
            meta = store.read_meta(conn)
        model = _LazyEmbedder(embedder)
        store.check_embedder(meta, model.name, model.dim, db)
        known = _known_documents(conn, collection) if conn is not None else {}
        read_by = store.reading_version(meta, collection)
        if known and read_by != READING_VERSION:
            report.read_again = read_by or 1    # older rules (1: before they were recorded): read every file
            force = True
        writer = _Writer(conn, collection, model, report, dry_run, quote_vectors=quote_vectors)
        search_files: str | None = None     # this version's ANN/postings files (ann_sidecar.py)
        try:
            _run(candidates, known, writer, report, force=force, progress=progress, max_bytes=max_file_bytes,
                 prepare=prepare)
            if not dry_run:
                assert conn is not None     # opened for ingest above: only a dry run may have no index
                store.set_reading_version(conn, collection, READING_VERSION)
                content_changed = bool(report.added or report.changed or report.removed)
                url_changed = base_url is not None and store.set_base_url(conn, collection, base_url)
                if content_changed or url_changed:
                    if report.chunks:
                        store.record_embedder(conn, model.name, model.dim)
                    report.index_version = store.bump_index_version(conn)
                    search_files = ann_build.write(conn, db, report.index_version,
                                                   changed=collection if content_changed else None)
                else:
                    report.index_version = int(meta.get("index_version", 0))
                conn.execute("COMMIT")
                if content_changed or url_changed:
                    ann_build.prune(db, search_files, report.index_version)
        except BaseException:
            if conn is not None and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        if conn is not None:
            conn.close()
    report.errors.extend(skip_lines(report.skips))     # a bulk kind in one line, wherever it was found
    report.errors.sort()        # by path: the discovery's skips and the reading's together
    report.seconds = time.perf_counter() - started
    return report


def _checked_collection(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise InputError("collection name must not be empty")
    if len(name) > 200 or any(ch in name for ch in "\x00\n\r"):
        raise InputError(f"invalid collection name {name!r}")
    return name


def _begin(conn: sqlite3.Connection, db: Path) -> None:
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise StoreError(f"{db}: another ingest is writing this index ({exc})") from None


def _known_documents(conn: sqlite3.Connection, collection: str) -> dict[str, tuple[int, str, int, int]]:
    rows = conn.execute(
        "SELECT source, id, sha256, size, mtime_ns FROM documents WHERE collection = ?", (collection,)
    )
    return {source: (doc_id, sha, size, mtime) for source, doc_id, sha, size, mtime in rows}


# ---------------------------------------------------------------- the run

def _run(candidates: list[Candidate], known: dict[str, tuple[int, str, int, int]], writer: _Writer,
         report: IngestReport, *, force: bool, progress: bool, max_bytes: int, prepare: Prepare | None = None) -> None:
    bar = _progress_bar() if progress else None
    with bar or nullcontext():
        task = bar.add_task("ingesting", total=len(candidates)) if bar else None
        if prepare is None:     # the local path: read, chunk here; embedded by the writer in batches
            results: Iterable[tuple[FileResult, Embedded | None]] = (
                (read_file(c, known.get(c.source), writer.embedder.count_tokens, force=force, max_bytes=max_bytes),
                 None) for c in candidates)
        else:                   # e.g. `--ray`: read, chunked and embedded elsewhere, in candidate order
            results = prepare(candidates, known, force=force, max_bytes=max_bytes)
        check = (CopyCheck() if any(is_copy_format(c.path) for c in candidates)     # shingling pages costs
                 and any(is_page(c.path) for c in candidates) else None)            # time: only with both
        held: list[tuple[FileResult, Embedded | None]] = []     # PDFs and text files, until the pages are read
        unchanged_pages: list[int] = []
        for result, vectors in results:
            if bar:
                assert task is not None     # added with the bar
                bar.update(task, description=_short(result.candidate.source))
            path = result.candidate.path
            if check is not None and result.pending is not None and is_copy_format(path):
                held.append((result, vectors))
            else:
                record(result, writer, report, vectors)
                if check is not None and is_page(path):
                    if result.pending is not None:
                        check.add_pages(chunk.text for chunk in result.pending.chunks)
                    elif result.unchanged and result.known:
                        unchanged_pages.append(result.known[0])
            if bar:
                assert task is not None     # added with the bar
                bar.advance(task)
        if check is not None and held:
            check.add_pages(store.chunk_texts(writer.conn, unchanged_pages) if writer.conn is not None else [])
            for result, vectors in held:
                _record_unless_copy(result, vectors, check, writer, report)
        writer.flush()
        seen = {c.source for c in candidates}
        for source, (doc_id, *_rest) in sorted(known.items()):
            if source not in seen:
                writer.remove(doc_id)
                report.removed += 1
                report.changes.append(("remove", source))


def _record_unless_copy(result: FileResult, vectors: Embedded | None, check: CopyCheck, writer: _Writer,
                        report: IngestReport) -> None:
    """A held PDF or text file: skipped (and its older version removed) when it repeats the pages (copies.py)."""
    assert result.pending is not None
    share = check.share(chunk.text for chunk in result.pending.chunks)
    if share is None or share < COPY_SHARE:
        record(result, writer, report, vectors)
        return
    report.skipped += 1
    report.skips.append(Skipped(result.candidate.path, COPY_REASON.format(share=share), COPY_GROUP))
    if result.known:
        writer.remove(result.known[0])
        report.removed += 1
        report.changes.append(("remove", result.candidate.source))


def record(result: FileResult, writer: _Writer, report: IngestReport, vectors: Embedded | None = None) -> None:
    """Count `result` in the report and hand it to the writer (embedded there unless `vectors` are given)."""
    candidate, known = result.candidate, result.known
    if result.error is not None:
        report.skipped += 1
        report.skips.append(Skipped(candidate.path, result.error.removeprefix(f"{candidate.path}: "), result.group))
        return
    if result.unchanged:
        report.unchanged += 1
        if result.new_stat is not None and known:
            writer.update_stat(known[0], *result.new_stat, str(candidate.path))
        return
    assert result.pending is not None
    if known:
        report.changed += 1
        report.changes.append(("change", candidate.source))
    else:
        report.added += 1
        report.changes.append(("add", candidate.source))
    if vectors is None:
        writer.add(result.pending)
    else:
        writer.write_embedded(result.pending, vectors)


class _LazyEmbedder:
    """The given embedder, or the default one loaded on first use: a no-op run never loads a model."""

    def __init__(self, embedder: Embedder | None) -> None:
        self._embedder = embedder
        self.name = embedder.name if embedder else MODEL_NAME
        self.dim = embedder.dim if embedder else MODEL_DIM

    def _get(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder(threads=1, workers=INGEST_WORKERS)
        return self._embedder

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._get().embed(texts)

    def count_tokens(self, text: str) -> int:
        return self._get().count_tokens(text)


class _Writer:
    """Buffers parsed documents; embeds them together (similar lengths batch well), then writes."""

    def __init__(self, conn: sqlite3.Connection | None, collection: str, embedder: Embedder,
                 report: IngestReport, dry_run: bool, *, quote_vectors: bool = True) -> None:
        self.conn = conn
        self.quote_vectors = quote_vectors
        self.collection = collection
        self.embedder = embedder
        self.report = report
        self.dry_run = dry_run
        self.pending: list[Pending] = []
        self.pending_chunks = 0

    def add(self, item: Pending) -> None:
        if self.dry_run:
            self.report.chunks += len(item.chunks)
            return
        self.pending.append(item)
        self.pending_chunks += len(item.chunks)
        if self.pending_chunks >= EMBED_FLUSH_CHUNKS:
            self.flush()

    def write_embedded(self, item: Pending, embedded: Embedded) -> None:
        """Write a document whose chunks were embedded elsewhere (`--ray`), in call order; its
        quote vectors are made here unless they were made there."""
        self.flush()            # anything still pending was read first, so it is written first
        if self.dry_run:
            self.report.chunks += len(item.chunks)
            return
        quotes = embedded.quotes if embedded.quotes is not None else self._quotes(item.chunks)
        self._write(item, embedded.vectors, quotes if self.quote_vectors else None)
        self.report.chunks += len(item.chunks)

    def flush(self) -> None:
        if not self.pending:
            return
        chunks = [chunk for item in self.pending for chunk in item.chunks]
        vectors = self._embed([chunk.embed_text for chunk in chunks])
        quotes = self._quotes(chunks)       # every pending chunk's sentences in the same few embed calls
        offset = 0
        for item in self.pending:
            count = len(item.chunks)
            self._write(item, vectors[offset:offset + count], quotes and quotes[offset:offset + count])
            offset += count
        self.report.chunks += offset
        self.pending.clear()
        self.pending_chunks = 0

    def _embed(self, texts: list[str]) -> np.ndarray:
        return embed_in_slices(self.embedder, texts)

    def _quotes(self, chunks: list[Chunk]) -> list[bytes | None] | None:
        """Each chunk's quote-vector blob (quotable.chunk_blobs), or None when they are not made."""
        return quotable.chunk_blobs([c.text for c in chunks], self._embed,
                                    [c.section for c in chunks]) if self.quote_vectors else None

    def _write(self, item: Pending, vectors: np.ndarray, quotes: list[bytes | None] | None) -> None:
        assert self.conn is not None    # only a dry run has no index, and it writes nothing
        fields: dict[str, Any] = dict(source=item.candidate.source, path=str(item.candidate.path),
                                      sha256=item.sha256, size=item.size, mtime_ns=item.mtime_ns, title=item.title,
                                      metadata=item.metadata)
        if item.doc_id is None:
            doc_id = store.insert_document(self.conn, collection=self.collection, **fields)
        else:   # keep the doc_id stable across changes: clients may hold it
            doc_id = item.doc_id
            store.delete_chunks(self.conn, doc_id)
            store.update_document(self.conn, doc_id, **fields)
        rows = [(c.ordinal, c.level, c.anchor, c.heading_path, c.text, index_text(c.embed_text))
                for c in item.chunks]
        store.insert_chunks(self.conn, doc_id, self.collection, rows, vectors, quotes)

    def update_stat(self, doc_id: int, size: int, mtime_ns: int, path: str) -> None:
        if not self.dry_run:
            assert self.conn is not None    # only a dry run has no index
            store.update_stat(self.conn, doc_id, size, mtime_ns, path)

    def remove(self, doc_id: int) -> None:
        if not self.dry_run:
            assert self.conn is not None    # only a dry run has no index
            store.delete_document(self.conn, doc_id)


def _progress_bar() -> Progress:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=Console(stderr=True), transient=True)


def _short(source: str, width: int = 40) -> str:
    return source if len(source) <= width else "…" + source[-(width - 1):]


__all__ = ["IngestReport", "NothingToIngest", "discover", "ingest", "skip_lines"]

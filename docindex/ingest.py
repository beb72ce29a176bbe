"""Ingest: files → chunks → vectors → one SQLite transaction.

Per file, SHA-256 decides: unchanged files are skipped (size + mtime equal to
the recorded ones skip even the hashing), changed files are re-chunked in
place (their doc_id is kept), files no longer under the given paths are
removed from the collection. Everything a run writes is one transaction, so a
run killed at any point leaves the previous index as it was; readers in
other processes see the old index until the commit, then the new one (the
index version is bumped in the same commit).
"""
from __future__ import annotations

import os
import sqlite3
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from . import store
from .chunking import Chunk, chunk_blocks
from .embedder import MODEL_DIM, MODEL_NAME, Embedder
from .minilm import default_embedder
from .errors import IngestError, InputError, StoreError
from .hashing import sha256_file
from .extract import READERS, UnreadableFile, extract, supported
from .textsearch import index_text

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
    skipped: int = 0                # reported files: unsupported type or unreadable
    unchanged: int = 0
    chunks: int = 0                 # chunks written (or that would be, in a dry run)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    changes: list[tuple[str, str]] = field(default_factory=list)   # ("add" | "change" | "remove", source)
    dry_run: bool = False
    index_version: int | None = None

    def summary(self) -> str:
        counts = (f"{self.added} added, {self.changed} changed, {self.removed} removed, "
                  f"{self.unchanged} unchanged, {self.skipped} skipped")
        if self.dry_run:
            return f"dry run: {counts}; {self.chunks} chunks would be written; nothing written ({self.seconds:.1f} s)"
        version = f" (index version {self.index_version})" if self.index_version is not None else ""
        return f"{counts}; {self.chunks} chunks in {self.seconds:.1f} s{version}"


@dataclass(frozen=True)
class _Candidate:
    path: Path          # absolute
    source: str         # relative to the ingest base, '/'-separated


@dataclass
class _Pending:
    candidate: _Candidate
    sha256: str
    size: int
    mtime_ns: int
    title: str
    metadata: dict
    chunks: list[Chunk]
    doc_id: int | None          # set when replacing a known document


def ingest(
    paths: list[Path],
    db: Path,
    collection: str,
    *,
    dry_run: bool = False,
    force: bool = False,
    progress: bool = False,
    embedder: Embedder | None = None,
) -> IngestReport:
    """Bring `collection` in `db` in line with the files under `paths`."""
    started = time.perf_counter()
    collection = _checked_collection(collection)
    db = Path(db)
    report = IngestReport(dry_run=dry_run)
    candidates = discover([Path(p) for p in paths], report)

    if dry_run:
        conn = None
        meta: dict[str, str] = {}
        if db.exists():
            conn, meta = store.open_existing(db)
    else:
        conn, meta = store.open_for_ingest(db)
    try:
        if not dry_run:
            _begin(conn, db)     # from here on, what we read is what we write against
            meta = store.read_meta(conn)
        model = _LazyEmbedder(embedder)
        store.check_embedder(meta, model.name, model.dim, db)
        known = _known_documents(conn, collection) if conn is not None else {}
        writer = _Writer(conn, collection, model, report, dry_run)
        try:
            _run(candidates, known, writer, report, force=force, progress=progress)
            if not dry_run:
                if report.added or report.changed or report.removed:
                    if report.chunks:
                        store.record_embedder(conn, model.name, model.dim)
                    report.index_version = store.bump_index_version(conn)
                else:
                    report.index_version = int(meta.get("index_version", 0))
                conn.execute("COMMIT")
        except BaseException:
            if conn is not None and conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        if conn is not None:
            conn.close()
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


# ---------------------------------------------------------------- discovery

def discover(paths: list[Path], report: IngestReport) -> list[_Candidate]:
    """Supported files under `paths`, with their source names; raises IngestError if none."""
    if not paths:
        raise IngestError("no paths given")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise IngestError(f"{missing[0]}: no such file or directory")
    roots = [p.resolve() for p in paths]
    base = roots[0] if len(roots) == 1 and roots[0].is_dir() else Path(
        os.path.commonpath([r if r.is_dir() else r.parent for r in roots]))
    found: dict[Path, _Candidate] = {}
    for root in roots:
        if root.is_file():
            if supported(root):
                found.setdefault(root, _Candidate(root, root.relative_to(base).as_posix()))
            else:
                report.skipped += 1
                report.errors.append(f"{root}: unsupported file type {root.suffix or '(none)'!r}"
                                     f" (supported: {', '.join(sorted(READERS))})")
            continue
        for folder, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                path = Path(folder, name)
                if supported(path):     # os.walk lists directories apart: no stat needed here
                    found.setdefault(path, _Candidate(path, path.relative_to(base).as_posix()))
    if not found:
        if report.errors:
            raise IngestError(report.errors[0])
        raise IngestError(f"no Markdown, text, HTML or PDF files under {', '.join(map(str, paths))}")
    return sorted(found.values(), key=lambda c: c.source)


def _known_documents(conn: sqlite3.Connection, collection: str) -> dict[str, tuple[int, str, int, int]]:
    rows = conn.execute(
        "SELECT source, id, sha256, size, mtime_ns FROM documents WHERE collection = ?", (collection,)
    )
    return {source: (doc_id, sha, size, mtime) for source, doc_id, sha, size, mtime in rows}


# ---------------------------------------------------------------- the run

def _run(candidates: list[_Candidate], known: dict, writer: "_Writer", report: IngestReport,
         *, force: bool, progress: bool) -> None:
    bar = _progress_bar() if progress else None
    with bar or nullcontext():
        task = bar.add_task("ingesting", total=len(candidates)) if bar else None
        for candidate in candidates:
            if bar:
                bar.update(task, description=_short(candidate.source))
            _visit(candidate, known.get(candidate.source), writer, report, force=force)
            if bar:
                bar.advance(task)
        writer.flush()
        seen = {c.source for c in candidates}
        for source, (doc_id, *_rest) in sorted(known.items()):
            if source not in seen:
                writer.remove(doc_id)
                report.removed += 1
                report.changes.append(("remove", source))


def _visit(candidate: _Candidate, known: tuple | None, writer: "_Writer", report: IngestReport,
           *, force: bool) -> None:
    try:
        stat = candidate.path.stat()
        if known and not force and (stat.st_size, stat.st_mtime_ns) == (known[2], known[3]):
            report.unchanged += 1          # fast path: no read, no hash
            return
        sha256 = sha256_file(candidate.path)
        if known and not force and sha256 == known[1]:
            report.unchanged += 1          # touched but identical: remember the new stat
            writer.update_stat(known[0], stat.st_size, stat.st_mtime_ns, str(candidate.path))
            return
        extracted = extract(candidate.path)
    except (UnreadableFile, OSError) as exc:
        report.skipped += 1
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        report.errors.append(f"{candidate.path}: {reason}")
        return
    title = extracted.title or candidate.path.stem
    chunks = chunk_blocks(extracted.blocks, title, writer.embedder.count_tokens)
    if known:
        report.changed += 1
        report.changes.append(("change", candidate.source))
    else:
        report.added += 1
        report.changes.append(("add", candidate.source))
    writer.add(_Pending(candidate, sha256, stat.st_size, stat.st_mtime_ns, title,
                        extracted.metadata, chunks, known[0] if known else None))


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

    def embed(self, texts: list[str]):
        return self._get().embed(texts)

    def count_tokens(self, text: str) -> int:
        return self._get().count_tokens(text)


class _Writer:
    """Buffers parsed documents; embeds them together (similar lengths batch well), then writes."""

    def __init__(self, conn: sqlite3.Connection | None, collection: str, embedder: Embedder,
                 report: IngestReport, dry_run: bool) -> None:
        self.conn = conn
        self.collection = collection
        self.embedder = embedder
        self.report = report
        self.dry_run = dry_run
        self.pending: list[_Pending] = []
        self.pending_chunks = 0

    def add(self, item: _Pending) -> None:
        if self.dry_run:
            self.report.chunks += len(item.chunks)
            return
        self.pending.append(item)
        self.pending_chunks += len(item.chunks)
        if self.pending_chunks >= EMBED_FLUSH_CHUNKS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        texts = [chunk.embed_text for item in self.pending for chunk in item.chunks]
        vectors = self.embedder.embed(texts)
        offset = 0
        for item in self.pending:
            count = len(item.chunks)
            self._write(item, vectors[offset:offset + count])
            offset += count
        self.report.chunks += offset
        self.pending.clear()
        self.pending_chunks = 0

    def _write(self, item: _Pending, vectors) -> None:
        fields = dict(source=item.candidate.source, path=str(item.candidate.path), sha256=item.sha256,
                      size=item.size, mtime_ns=item.mtime_ns, title=item.title, metadata=item.metadata)
        if item.doc_id is None:
            doc_id = store.insert_document(self.conn, collection=self.collection, **fields)
        else:   # keep the doc_id stable across changes: clients may hold it
            doc_id = item.doc_id
            store.delete_chunks(self.conn, doc_id)
            store.update_document(self.conn, doc_id, **fields)
        rows = [(c.ordinal, c.level, c.anchor, c.heading_path, c.text, index_text(c.embed_text))
                for c in item.chunks]
        store.insert_chunks(self.conn, doc_id, self.collection, rows, vectors)

    def update_stat(self, doc_id: int, size: int, mtime_ns: int, path: str) -> None:
        if not self.dry_run:
            store.update_stat(self.conn, doc_id, size, mtime_ns, path)

    def remove(self, doc_id: int) -> None:
        if not self.dry_run:
            store.delete_document(self.conn, doc_id)


def _progress_bar():
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description:<40}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), console=Console(stderr=True), transient=True)


def _short(source: str, width: int = 40) -> str:
    return source if len(source) <= width else "…" + source[-(width - 1):]


__all__ = ["IngestReport", "discover", "ingest"]

"""Write a collection as a tree of markdown files, one per section.

Agents that read files with their own tools (cat, grep, an editor) get the
whole collection on disk: one directory per source document, one file per
section, each with YAML frontmatter (title, source, anchor, url, heading
path), plus an `INDEX.md` outline at the top.

The names come from document sources and headings, i.e. from whoever wrote
the documents, so nothing here trusts them (safe_paths.py holds the rules):

- every path segment is sanitized (no separators, NUL, control characters,
  `.`/`..`, leading dots, reserved device names), capped in bytes, and made
  unique within its directory;
- directory depth is capped;
- every destination is resolved and checked to lie inside the tree before a
  byte is written, and files are created with O_EXCL | O_NOFOLLOW inside a
  fresh temporary directory this process made itself.

Layout: `<cache_root>/<collection>/<contentHash[:16]>/...`. A tree is built in
a temporary sibling directory and renamed into place, so a reader never sees
half a tree, and several server processes writing the same collection at once
converge on one directory (the loser of the rename race discards its copy).
The path changes exactly when the content does; older trees are pruned.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .safe_paths import (  # noqa: F401  (source_dir_segments, UnsafePathError: re-exported)
    MAX_SEGMENT_BYTES,
    UnsafePathError,
    _contained,
    _Namespace,
    _write_file,
    safe_segment,
    source_dir_segments,
)

log = logging.getLogger(__name__)

MANIFEST_NAME = ".docindex-tree"
INDEX_NAME = "INDEX.md"
_TMP_PREFIX = ".tmp-"
_OLD_PREFIX = ".old-"

@dataclass(frozen=True)
class TreeSection:
    """One section file, relative to the tree root."""

    title: str
    anchor: str
    level: int
    file: str

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "anchor": self.anchor, "level": self.level, "file": self.file}


@dataclass(frozen=True)
class TreeDocument:
    source: str
    title: str
    dir: str
    sections: tuple[TreeSection, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "title": self.title,
            "dir": self.dir,
            "sections": [s.to_dict() for s in self.sections],
        }


@dataclass(frozen=True)
class FetchResult:
    """What `fetch_docs` returns to the client."""

    path: Path
    content_hash: str
    sections: int
    tree: tuple[TreeDocument, ...]
    up_to_date: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "contentHash": self.content_hash,
            "sections": self.sections,
            "upToDate": self.up_to_date,
            "tree": [d.to_dict() for d in self.tree],
        }


# --------------------------------------------------------------------------
# Content


def _join_overlapping(previous: str, following: str, max_overlap: int = 4000) -> str:
    """Concatenate two consecutive chunks of one section, dropping the repeated overlap."""
    limit = min(len(previous), len(following), max_overlap)
    for size in range(limit, 19, -1):  # shorter overlaps are coincidences, not chunk overlap
        if previous.endswith(following[:size]):
            return previous + following[size:]
    return previous.rstrip() + "\n\n" + following.lstrip()


@dataclass
class _Section:
    source: str
    doc_title: str
    anchor: str
    heading_path: tuple[str, ...]
    level: int
    ordinal: int
    url: str | None
    texts: list[str] = field(default_factory=list)

    @property
    def title(self) -> str:
        return self.heading_path[-1] if self.heading_path else self.doc_title or self.source

    def body(self) -> str:
        text = ""
        for part in self.texts:
            text = _join_overlapping(text, part) if text else part
        return text


def _group_sections(chunks: Iterable[Mapping[str, Any]]) -> dict[tuple[int, str], list[_Section]]:
    """Chunks grouped into sections, keyed by (doc_id, source), in reading order."""
    documents: dict[tuple[int, str], dict[str, _Section]] = {}
    ordered = sorted(chunks, key=lambda c: (str(c["source"]), int(c["doc_id"]), int(c["ordinal"])))
    for chunk in ordered:
        key = (int(chunk["doc_id"]), str(chunk["source"]))
        sections = documents.setdefault(key, {})
        anchor = str(chunk.get("anchor") or "")
        section = sections.get(anchor)
        if section is None:
            section = sections[anchor] = _Section(
                source=str(chunk["source"]),
                doc_title=str(chunk.get("doc_title") or ""),
                anchor=anchor,
                heading_path=tuple(str(h) for h in chunk.get("heading_path") or ()),
                level=int(chunk.get("level") or 0),
                ordinal=int(chunk["ordinal"]),
                url=chunk.get("url") or None,
            )
        section.texts.append(str(chunk.get("text") or ""))
    return {key: list(sections.values()) for key, sections in documents.items()}


class _FrontmatterDumper(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML is untyped here: SafeDumper is Any
    """Double-quotes any string with a line break or control character, so a
    heading like "---\\nevil: true" stays one escaped line and cannot end the
    frontmatter block early for a line-based reader."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    risky = any(ch in "\r\n\x85\u2028\u2029" or unicodedata.category(ch)[0] == "C" for ch in value)
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"' if risky else None)


_FrontmatterDumper.add_representer(str, _represent_str)


def _frontmatter(section: _Section) -> str:
    fields: dict[str, Any] = {
        "title": section.title,
        "source": section.source,
        "anchor": section.anchor,
    }
    if section.url:
        fields["url"] = section.url
    fields["heading_path"] = list(section.heading_path)
    dumped: str = yaml.dump(fields, Dumper=_FrontmatterDumper, allow_unicode=True, sort_keys=False, width=10**6)
    return "---\n" + dumped + "---\n\n"


# --------------------------------------------------------------------------
# Writing


def _inline(text: str, limit: int = 120) -> str:
    """Document text made safe for one markdown line: no line breaks or controls, no link or code syntax."""
    flat = " ".join("".join(" " if unicodedata.category(ch)[0] == "C" else ch for ch in text).split())
    flat = flat.replace("`", "'").replace("[", "(").replace("]", ")")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _render_index(collection: str, content_hash: str, tree: Iterable[TreeDocument]) -> str:
    """The outline agents read first: documents, then their sections, each with its file."""
    lines = [f"# {_inline(collection)}", "", f"Content hash: `{content_hash}`", ""]
    for document in tree:
        lines.append(f"- **{_inline(document.title)}** (`{_inline(document.source, 200)}`) → `{document.dir}/`")
        for section in document.sections:
            indent = "  " * max(1, section.level)
            lines.append(f"{indent}- [{_inline(section.title)}](<{section.file}>) `#{_inline(section.anchor)}`")
    return "\n".join(lines) + "\n"


def _build_tree(root: Path, collection: str, content_hash: str,
                chunks: Iterable[Mapping[str, Any]]) -> tuple[TreeDocument, ...]:
    """Write every section file under `root` (a fresh directory); return the title tree."""
    names = _Namespace()
    names.unique((), INDEX_NAME)
    names.unique((), MANIFEST_NAME)
    documents: list[TreeDocument] = []
    for (_doc_id, source), sections in _group_sections(chunks).items():
        parent: tuple[str, ...] = ()
        segments = source_dir_segments(source)
        for segment in segments[:-1]:
            parent = parent + (names.shared_dir(parent, segment),)
        parent = parent + (names.unique(parent, segments[-1]),)
        doc_dir = Path(*parent)
        written: list[TreeSection] = []
        for index, section in enumerate(sections):
            stem = safe_segment(f"{index:03d}-{section.anchor or 'section'}", max_bytes=MAX_SEGMENT_BYTES - 3)
            filename = names.unique(parent, stem, ".md")
            relative = doc_dir / filename
            _write_file(root, relative, _frontmatter(section) + section.body().rstrip() + "\n")
            written.append(TreeSection(section.title, section.anchor, section.level, relative.as_posix()))
        title = sections[0].doc_title if sections and sections[0].doc_title else source
        documents.append(TreeDocument(source, title, doc_dir.as_posix(), tuple(written)))
    tree = tuple(documents)
    _write_file(root, Path(INDEX_NAME), _render_index(collection, content_hash, tree))
    return tree


def _written_tree(directory: Path, content_hash: str) -> tuple[TreeDocument, ...] | None:
    """The title tree of a complete tree for `content_hash` in `directory`, else None."""
    try:
        manifest = json.loads((directory / MANIFEST_NAME).read_text(encoding="utf-8"))
        if manifest.get("contentHash") != content_hash:
            return None
        return tuple(
            TreeDocument(
                source=d["source"],
                title=d["title"],
                dir=d["dir"],
                sections=tuple(TreeSection(**s) for s in d["sections"]),
            )
            for d in manifest["tree"]
        )
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return None  # missing or damaged: rewrite it


def _prune_siblings(collection_dir: Path, keep: str) -> None:
    """Remove older trees and stale temporaries; a reader of an old path loses it (documented)."""
    for entry in collection_dir.iterdir():
        if entry.name == keep or not entry.is_dir() or entry.is_symlink():
            continue
        if entry.name.startswith(_TMP_PREFIX) and _is_fresh(entry):
            continue  # another process is writing it right now
        shutil.rmtree(entry, ignore_errors=True)


def _is_fresh(path: Path, seconds: float = 600.0) -> bool:
    try:
        return time.time() - path.stat().st_mtime < seconds
    except OSError:
        return False


def write_collection_tree(
    chunks: Iterable[Mapping[str, Any]],
    *,
    cache_root: Path,
    collection: str,
    content_hash: str,
    force: bool = False,
) -> FetchResult:
    """Write (or reuse) the markdown tree of one collection under `cache_root`.

    `chunks` are dicts with chunk_id, doc_id, source, doc_title, anchor,
    heading_path, level, ordinal, text, url (as `Index.iter_chunks` yields
    them); it is only consumed when the tree must be (re)written.
    """
    cache_root = cache_root.resolve()
    collection_dir = _contained(cache_root, Path(safe_segment(collection, fallback="collection")))
    version = safe_segment(content_hash[:16] or "empty", fallback="empty")
    target = collection_dir / version

    if not force and (tree := _written_tree(target, content_hash)) is not None:
        return FetchResult(target, content_hash, sum(len(d.sections) for d in tree), tree, up_to_date=True)

    # Past this point an existing tree is either forced out or damaged (no valid manifest).
    replace = force or target.exists()
    collection_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=collection_dir)).resolve()
    try:
        tree = _build_tree(staging, collection, content_hash, chunks)
        manifest_text = json.dumps(
            {"contentHash": content_hash, "collection": collection, "tree": [d.to_dict() for d in tree]},
            ensure_ascii=False,
        )
        _write_file(staging, Path(MANIFEST_NAME), manifest_text)
        os.chmod(staging, 0o755)  # mkdtemp makes 0700; the tree is for other tools to read
        _swap_into_place(staging, target, replace=replace)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    _prune_siblings(collection_dir, keep=version)
    log.info("fetch_docs wrote %s (%d documents)", target, len(tree))
    return FetchResult(target, content_hash, sum(len(d.sections) for d in tree), tree, up_to_date=False)


def _swap_into_place(staging: Path, target: Path, *, replace: bool) -> None:
    """Rename the finished tree to its content-addressed name.

    If the name is taken and `replace` is false, another process has just
    written the same content there: ours is discarded (the caller removes
    `staging`). With `replace`, the existing tree is moved aside first.
    """
    try:
        os.rename(staging, target)
        return
    except OSError:
        if not target.exists():
            raise
    if not replace:
        return
    aside = target.with_name(f"{_OLD_PREFIX}{target.name}-{os.getpid()}")
    try:
        os.rename(target, aside)
    except FileNotFoundError:
        pass
    try:
        os.rename(staging, target)
    except OSError:
        # Another process put a tree there in between: it has the same content.
        if not target.exists():
            raise
    shutil.rmtree(aside, ignore_errors=True)

"""Which files an ingest reads, with the filesystem treated as hostile.

- A symbolic link is followed only when its target stays inside the ingested
  roots (the paths given, resolved): `notes/passwd.txt -> /etc/passwd` is not
  read. `follow_external_links=True` (`--follow-external-links`) lifts that.
  A link to a folder inside the roots is not followed (its files are ingested
  under their own path); one outside is walked only with that flag, once.
  A file is read once, however many names reach it: a link to a file that is
  ingested under its own path is skipped (`drop_aliases`).
- Only regular files are read: FIFOs, devices and sockets are skipped (a FIFO
  would block the run forever, `/dev/zero` never ends).
- Hidden files and folders (a leading ".") are left out silently; every other
  file that is not ingested is reported as skipped, with its reason.
- In a Sphinx HTML build (a folder with `searchindex.js` or `objects.inv`), its
  `_sources/` (every page's reST or Markdown source again, as `.txt`) and
  `_modules/` (the project's source code, highlighted by sphinx.ext.viewcode)
  are skipped, one line each, and so is `_static/` (the theme: fsspec's was 27
  lines of fonts and scripts, most of them links outside the build): pointed at
  the build, a user wants its pages, and the copies took the pages' places
  (pytest's docs: `parametrize.rst.txt` above `parametrize.html`). Named as a
  path of their own, they are ingested. So are its
  generated `genindex*.html`, `*modindex.html` and `search.html` (lists of links).
- For the same reason a `.txt` file beside an HTML page of the same name
  (`git-stash.txt` and `git-stash.html`: git-doc ships each manual page as its
  AsciiDoc source and as the page built from it) is skipped: the page is read.
  Asked 16 questions on git-doc, the sources took the pages' places and their
  markup was quoted ("NAME ---- git-bisect - Use binary search…"). A `.txt`
  named as a path is read. A PDF beside the HTML build of the same name
  (texinfo's `octave.pdf` beside `octave.html/`) is skipped the same way: GNU
  Octave's PDF was 42 % of its chunks and 2 of the 4 passages for most questions.
- Skips of one bulk kind (one unsupported type, or text sources beside their
  pages) are reported in one line per kind from GROUPED_FROM files on
  (`skip_lines`): a manual's 190 images were 190 lines that hid the one line
  that mattered. The count in the summary is still every file.

The size bound and the read itself are in bounds.py; discovery only decides
what is a candidate, so nothing here opens a file.
"""
from __future__ import annotations

import os
import re
import stat as stat_module
from dataclasses import dataclass
from pathlib import Path

from .bounds import COPY_GROUP, REDIRECT_GROUP, file_kind
from .errors import IngestError
from .extract import COMPRESSED, READERS, supported, type_name

NOTHING = "no Markdown, text, HTML or PDF files"
SPHINX_BUILD_MARKERS = ("searchindex.js", "objects.inv")
SPHINX_GENERATED = re.compile(r"(?:genindex(?:-[^/]*)?|[a-z]*-?modindex|search)\.html?", re.IGNORECASE)
SPHINX_GENERATED_REASON = ("Sphinx's generated index or search page, links only (the pages it links are ingested; "
                           "name the file to ingest it)")
SPHINX_COPIES = {
    "_sources": "Sphinx's copy of the pages' sources (the built pages are ingested; name the folder to ingest it)",
    "_modules": "Sphinx's highlighted source code, not pages (name the folder to ingest it)",
    "_static": "Sphinx's theme files: styles, scripts, fonts, images, not pages (name the folder to ingest it)",
}


@dataclass(frozen=True)
class Candidate:
    path: Path          # absolute, as found (a link inside the roots keeps its own name)
    source: str         # relative to the ingest base, '/'-separated
    read_path: Path     # what is opened: `path`, or the resolved target of an allowed link


TEXT_SOURCE = "the text source of {page} beside it (the page is ingested; name the file to ingest it)"
PDF_COPY = "the PDF of the HTML {build} beside it (the pages are ingested; name the file to ingest it)"
PAGE_SUFFIXES = (".html", ".htm")
TEXT_SOURCE_GROUP = "text source"
ALIAS_GROUP = "link to a file read under another name"
GROUPED_FROM = 4
"""Skips of one kind (`Skipped.group`) reported in one line from this many files on."""


@dataclass(frozen=True)
class Skipped:
    path: Path
    reason: str
    group: str = ""     # a bulk kind ("type .gif", "text source"): reported as one line from GROUPED_FROM on

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def skip_lines(skipped: list[Skipped]) -> list[str]:
    """What a report says about `skipped`: "PATH: reason" per file, except a group of
    GROUPED_FROM or more files, said once where its first file was ("N files …: reason, e.g. PATH")."""
    groups: dict[str, list[Skipped]] = {}
    for skip in skipped:
        if skip.group:
            groups.setdefault(skip.group, []).append(skip)
    lines: list[str] = []
    for skip in skipped:
        members = groups.get(skip.group, [])
        if len(members) < GROUPED_FROM:
            lines.append(str(skip))
        elif skip is members[0]:
            lines.append(_grouped(members))
    return lines


def _grouped(members: list[Skipped]) -> str:
    first = members[0]
    under = Path(os.path.commonpath([m.path.parent for m in members]))
    if first.group == TEXT_SOURCE_GROUP:
        return (f"{len(members)} .txt files under {under}: each the text source of the HTML page of the same "
                f"name beside it (the pages are ingested; name a file to ingest it), e.g. {first.path}")
    if first.group in _EACH:    # each member's reason names its own target or share: the first one's as an example
        return f"{len(members)} files under {under}: each {_EACH[first.group]}, e.g. {first.path}: {first.reason}"
    return f"{len(members)} files under {under}: {first.reason}, e.g. {first.path}"


_EACH = {
    ALIAS_GROUP: "a link to a file that is read under another name",
    COPY_GROUP: "a PDF or text file whose text is mostly in the pages ingested with it "
                "(name a file alone to ingest it)",
    REDIRECT_GROUP: "a redirect page (a refresh to another page, no text of its own)",
}


def text_source(name: str, names: set[str]) -> str | None:
    """The HTML page beside a `.txt` file of the same name (`git-stash.html` for `git-stash.txt`), or None."""
    lowered = name.lower()
    for suffix in (".txt", ".txt" + COMPRESSED):
        if lowered.endswith(suffix):
            stem = name[:-len(suffix)]
            return next((page for ext in PAGE_SUFFIXES for page in (stem + ext, stem + ext + COMPRESSED)
                         if page in names), None)
    return None


def pdf_copy_of(name: str, names: set[str]) -> list[str]:
    """What a PDF may be a copy of: the page or folder names beside it of its HTML build
    (`octave.html/` or `octave.html` for `octave.pdf`; `manual_html/`, `manual-html/`), in order;
    the caller checks which exist and what they are. A plain `manual/` beside `manual.pdf` is left
    to the content check (copies.py): by name alone it may be anything."""
    lowered = name.lower()
    for suffix in (".pdf", ".pdf" + COMPRESSED):
        if lowered.endswith(suffix):
            stem = name[:-len(suffix)]
            return [other for other in (stem + ".html", stem + ".htm", stem + "_html", stem + "-html")
                    if other in names]
    return []


def _holds_pages(folder: Path) -> bool:
    """True when `folder` itself holds an HTML page (an index.html, or any .html/.htm file)."""
    try:
        with os.scandir(folder) as entries:
            return any(e.name.lower().endswith(PAGE_SUFFIXES) for e in entries if not e.name.startswith("."))
    except OSError:
        return False


class NothingToIngest(IngestError):
    """No file under the paths can be ingested; `skipped` says why for each file seen."""

    def __init__(self, message: str, skipped: list[Skipped]) -> None:
        super().__init__(message)
        self.skipped = skipped


def discover(paths: list[Path], *, follow_external_links: bool = False) -> tuple[list[Candidate], list[Skipped]]:
    """Candidates under `paths` (sorted by source) and the files skipped, with reasons.

    Raises IngestError for no paths or a missing one, NothingToIngest when no
    candidate is left.
    """
    if not paths:
        raise IngestError("no paths given")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise IngestError(f"{missing[0]}: no such file or directory")
    roots = [p.resolve() for p in paths]
    base = roots[0] if len(roots) == 1 and roots[0].is_dir() else Path(
        os.path.commonpath([r if r.is_dir() else r.parent for r in roots]))
    walk = _Walk(roots, base, follow_external_links)
    for root in roots:
        mode = os.stat(root).st_mode
        if stat_module.S_ISDIR(mode):
            walk.folder(root)
        else:   # named explicitly: the user chose it, links included
            walk.file(root, root, mode)
    walk.drop_aliases()
    skipped = sorted(walk.skipped, key=lambda s: str(s.path))
    if not walk.found:
        where = ", ".join(map(str, paths))
        if skipped:
            more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
            raise NothingToIngest(f"{NOTHING} to ingest under {where}: skipped {skipped[0]}{more}", skipped)
        raise NothingToIngest(f"{NOTHING} under {where}", [])
    return sorted(walk.found.values(), key=lambda c: c.source), skipped


class _Walk:
    def __init__(self, roots: list[Path], base: Path, follow_external_links: bool) -> None:
        self.roots = roots
        self.base = base
        self.follow = follow_external_links
        self.found: dict[Path, Candidate] = {}
        self.skips: dict[Path, Skipped] = {}    # by path: nested roots report a file once
        self.walked: set[Path] = set()          # external folders already walked (link cycles)

    def inside(self, target: Path) -> bool:
        return any(target == root or target.is_relative_to(root) for root in self.roots)

    def folder(self, folder: Path) -> None:
        stack = [folder]
        while stack:
            current = stack.pop()
            try:
                with os.scandir(current) as entries:
                    names = sorted(e.name for e in entries if not e.name.startswith("."))
            except OSError as exc:
                self.skip(current, exc.strerror or str(exc))
                continue
            present = set(names)
            sphinx = any(marker in present for marker in SPHINX_BUILD_MARKERS)
            subfolders = [sub for name in names if not self.source_or_copy(current / name, present)
                          and not (sphinx and self.sphinx_generated(current / name))
                          and (sub := self.entry(current / name)) is not None]
            stack.extend(reversed([sub for sub in subfolders if not self.sphinx_copy(sub)]))

    def sphinx_copy(self, folder: Path) -> bool:
        """True (and reported) for a Sphinx build's _sources/, _modules/ or _static/ under a walked folder."""
        reason = SPHINX_COPIES.get(folder.name)
        if reason is None or not any((folder.parent / marker).is_file() for marker in SPHINX_BUILD_MARKERS):
            return False
        self.skip(folder, reason)
        return True

    def sphinx_generated(self, path: Path) -> bool:
        """True (and reported) for a Sphinx build's genindex.html, py-modindex.html or search.html: the
        CMake docs' genindex.html was 120 chunks of term lists, found for "ccache" before any page."""
        if not SPHINX_GENERATED.fullmatch(path.name) or not path.is_file():
            return False
        self.skip(path, SPHINX_GENERATED_REASON)
        return True

    def source_or_copy(self, path: Path, names: set[str]) -> bool:
        """True (and reported) for a `.txt` file beside the HTML page built from it, or a PDF beside
        the HTML build of the same name (module docstring)."""
        page = text_source(path.name, names)
        if page is not None and path.is_file():
            self.skip(path, TEXT_SOURCE.format(page=page), TEXT_SOURCE_GROUP)
            return True
        for other in pdf_copy_of(path.name, names) if path.is_file() else []:
            build = path.parent / other
            if build.is_file() and other.lower().endswith(PAGE_SUFFIXES):
                self.skip(path, PDF_COPY.format(build=f"page {build}"))
                return True
            if build.is_dir() and not build.is_symlink() and _holds_pages(build):
                self.skip(path, PDF_COPY.format(build=f"pages in {build}/"))
                return True
        return False

    def entry(self, path: Path) -> Path | None:
        """Classify one directory entry; returns a folder to walk, or None."""
        try:
            mode = os.lstat(path).st_mode
            if not stat_module.S_ISLNK(mode):
                if stat_module.S_ISDIR(mode):
                    return path
                self.file(path, path, mode)
                return None
            target = Path(os.path.realpath(path))
            mode = os.stat(path).st_mode
        except OSError as exc:
            self.skip(path, "broken symbolic link" if os.path.islink(path) else exc.strerror or str(exc))
            return None
        if stat_module.S_ISDIR(mode):
            if self.inside(target):
                self.skip(path, f"link to a folder inside the ingested paths ({target}); not followed")
                return None
            if not self.follow:
                self.skip(path, f"link to {target}, outside the ingested paths (--follow-external-links follows it)")
                return None
            if target in self.walked:
                return None
            self.walked.add(target)
            return path
        if not self.follow and not self.inside(target):
            self.skip(path, f"link to {target}, outside the ingested paths (--follow-external-links follows it)")
            return None
        self.file(path, target, mode)
        return None

    def file(self, path: Path, read_path: Path, mode: int) -> None:
        if not stat_module.S_ISREG(mode):
            self.skip(path, f"not a regular file ({file_kind(mode)})")
        elif not supported(path):
            self.skip(path, f"unsupported file type {type_name(path)!r} "
                            f"(supported: {', '.join(sorted(READERS))}, each also gzip-compressed as {COMPRESSED})",
                      f"type {type_name(path)}")
        else:
            self.found.setdefault(path, Candidate(path, path.relative_to(self.base).as_posix(), read_path))

    def drop_aliases(self) -> None:
        """A file reached by more than one name is read once: a link to a file ingested under its own
        path (Apache's manual: 1,857 links in its translations to the English pages; Exim's `ch14.html`
        to `ch-main_configuration.html`) is skipped, and of two links to one file outside the paths
        the first by name is read. Each copy had been one more document saying the same thing."""
        owner = {Path(os.path.realpath(c.path)): c.path for c in self.found.values() if c.path == c.read_path}
        for path, candidate in sorted(self.found.items()):
            if candidate.path == candidate.read_path:
                continue
            first = owner.setdefault(candidate.read_path, path)
            if first != path:
                del self.found[path]
                self.skip(path, f"a link to {candidate.read_path}, read as {first}", ALIAS_GROUP)

    @property
    def skipped(self) -> list[Skipped]:
        return list(self.skips.values())

    def skip(self, path: Path, reason: str, group: str = "") -> None:
        self.skips.setdefault(path, Skipped(path, reason, group))


__all__ = ["Candidate", "NothingToIngest", "Skipped", "discover", "skip_lines"]

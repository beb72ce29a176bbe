"""Turn files into a flat list of blocks: headings, paragraphs, code.

Every format goes through the same chunker, so every reader only has to say
where headings are and which text must not be split (code): Markdown
(markdown_reader.py, MDX through mdx.py), HTML (html_reader.py),
reStructuredText (rst.py), AsciiDoc (asciidoc.py, also a `.txt` that is AsciiDoc),
PDF (pdf.py) and plain text (here). Readers raise
`UnreadableFile` with a one-line reason; ingest reports it and moves on.

Memory per file is bounded (bounds.py): only regular files within the size
bound are read, a PDF's text stops at MAX_PDF_TEXT_CHARS, and every block is
cut to MAX_BLOCK_CHARS (headings to MAX_HEADING_CHARS) before chunking.
"""
from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from pathlib import Path

from . import bounds
from .asciidoc import looks_like_asciidoc, parse_asciidoc
from .blocks import Block, BlockKind, Extracted
from .bounds import UnreadableFile
from .html_reader import parse_html
from .markdown_reader import parse_markdown
from .mdx import mdx_to_markdown
from .rst import looks_like_rst, parse_rst

__all__ = ["Block", "BlockKind", "Extracted", "UnreadableFile", "extract", "parse_html", "parse_markdown",
           "parse_pdf", "READERS", "COMPRESSED", "document_stem", "reader_suffix", "supported", "type_name"]

# ---------------------------------------------------------------- plain text

def parse_text(text: str) -> Extracted:
    """Plain text: paragraphs between blank lines; a `.txt` that is AsciiDoc (git's manual pages
    and their include files) is read as AsciiDoc (asciidoc.py), one that is reStructuredText
    (lighttpd's module documents) as reST (rst.py). A paragraph's first line underlined ("Title" over
    "-----", or also overlined) is a heading, levels in the order the underline characters first
    appear, as plain-text documents write them: lighttpd's performance.txt has no reST directive, and
    its "lighttpd configuration tuning for low-memory systems" over a row of dashes was quoted whole."""
    if looks_like_asciidoc(text):
        return parse_asciidoc(text)
    if looks_like_rst(text):
        return parse_rst(text)
    blocks: list[Block] = []
    styles: dict[tuple[str, bool], int] = {}
    for paragraph in re.split(r"\n[ \t]*\n", text):
        lines = paragraph.strip("\n").splitlines()
        title, rest = _underlined(lines)
        if title is not None:
            blocks.append(Block("heading", title[0], styles.setdefault(title[1], len(styles) + 1)))
        body = "\n".join(rest).strip("\n")
        if body.strip():
            blocks.append(Block("para", body))
    first = blocks[0] if blocks else None
    return Extracted(first.text if first and first.kind == "heading" and first.level == 1 else None, blocks)


_UNDERLINE = re.compile(r"^([=\-~^*#+])\1{2,}[ \t]*$")
MAX_TITLE_CHARS = 120


def _underlined(lines: list[str]) -> tuple[tuple[str, tuple[str, bool]] | None, list[str]]:
    """A plain-text title at the top of a paragraph ((text, its adornment style), the lines after it),
    or (None, the lines): a line of text over a row of one of = - ~ ^ * # + (3 or more), or between two
    equal such rows."""
    def is_title(line: str, rule: str) -> bool:
        """A sentence or a statement over a row of another length is text over a separator (valgrind's
        FAQ: "Don't feel bad: almost everyone gets it wrong at first." over 72 dashes), not a title."""
        text = line.strip()
        return bool(text) and not line[:1].isspace() and len(text) <= MAX_TITLE_CHARS \
            and not _UNDERLINE.match(text) \
            and (not text.endswith((".", "!", "?", ";", "{", "}")) or abs(len(rule.strip()) - len(text)) <= 2)
    if len(lines) >= 3 and _UNDERLINE.match(lines[0]) and lines[2].strip() == lines[0].strip() \
            and is_title(lines[1].strip(), lines[0]):
        return (lines[1].strip(), (lines[0].strip()[0], True)), lines[3:]
    if len(lines) >= 2 and _UNDERLINE.match(lines[1]) and is_title(lines[0], lines[1]):
        return (lines[0].strip(), (lines[1].strip()[0], False)), lines[2:]
    return None, lines


# ---------------------------------------------------------------- PDF

def parse_pdf(data: bytes) -> Extracted:
    """docindex/pdf.py: title from metadata or the cover's largest text, outline headings at
    their own nesting, front matter under a heading of its own, running headers/footers dropped."""
    from .pdf import parse_pdf as parse

    return parse(data)


# ---------------------------------------------------------------- bounds

def bounded_blocks(blocks: list[Block], max_chars: int = bounds.MAX_BLOCK_CHARS) -> list[Block]:
    """Blocks no longer than `max_chars`: long paragraphs cut at a sentence end or a space,
    long code cut on lines and fenced again, long headings shortened."""
    out: list[Block] = []
    for block in blocks:
        if block.kind == "heading":
            if len(block.text) > bounds.MAX_HEADING_CHARS:
                block = Block("heading", block.text[:bounds.MAX_HEADING_CHARS].rstrip() + "…", block.level)
            out.append(block)
        elif len(block.text) <= max_chars:
            out.append(block)
        elif block.kind == "code":
            out.extend(Block("code", piece) for piece in bounds.cut_code(block.text, max_chars))
        else:
            out.extend(Block("para", piece) for piece in bounds.cut_text(block.text, max_chars))
    return out


# ---------------------------------------------------------------- dispatch

def _decode(data: bytes, declared: str | None = None) -> str:
    """UTF-8, or the `declared` charset (an HTML page's own) when the bytes are not UTF-8. A page that
    declares UTF-8 and holds stray bytes that are not (Bacula's manual: a Latin-1 no-break space, 0xA0, in
    the navigation of 48 of its 114 pages, refused whole until stop 44) is read as UTF-8 with each stray
    byte read as Windows-1252, the legacy default browsers fall back to."""
    if b"\x00" in data[:8192]:
        raise UnreadableFile("binary content")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if declared is not None:
        try:
            if codecs.lookup(declared).name == "utf-8":
                return data.decode("utf-8-sig", errors=_STRAY_BYTES)
            return data.decode(declared)
        except (LookupError, UnicodeDecodeError):
            pass
    raise UnreadableFile("not UTF-8 text")


def _stray_bytes_as_cp1252(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return error.object[error.start:error.end].decode("cp1252", errors="replace"), error.end


_STRAY_BYTES = "docindex-stray-bytes-as-cp1252"
codecs.register_error(_STRAY_BYTES, _stray_bytes_as_cp1252)


_DECLARED_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?\s*([\w.:-]+)", re.IGNORECASE)


def _decode_html(data: bytes) -> str:
    """A page as UTF-8, or in the charset its `<meta>` declares when it is not UTF-8 (older generators'
    ISO-8859-1 and windows-1252 pages were refused whole); undeclared, not UTF-8: refused as before."""
    declared = _DECLARED_CHARSET.search(data[:4096])
    return _decode(data, declared.group(1).decode("ascii") if declared else None)


READERS: dict[str, tuple[str, Callable[[bytes], Extracted]]] = {
    ".md": ("markdown", lambda data: parse_markdown(_decode(data))),
    ".markdown": ("markdown", lambda data: parse_markdown(_decode(data))),
    ".mdx": ("mdx", lambda data: parse_markdown(mdx_to_markdown(_decode(data)), indented_code=False)),
    ".txt": ("text", lambda data: parse_text(_decode(data))),
    ".rst": ("rst", lambda data: parse_rst(_decode(data))),
    **dict.fromkeys((".adoc", ".asciidoc", ".asc"), ("asciidoc", lambda data: parse_asciidoc(_decode(data)))),
    ".html": ("html", lambda data: parse_html(_decode_html(data))),
    ".htm": ("html", lambda data: parse_html(_decode_html(data))),
    ".pdf": ("pdf", parse_pdf),
}


COMPRESSED = ".gz"
"""A reader's suffix followed by this (page.md.gz, page.html.gz) is read gzip-decompressed."""


def _uncompressed(path: Path) -> Path:
    """The name a file's reader goes by: page.md for page.md.gz, the path itself otherwise."""
    path = Path(path)
    return path.with_suffix("") if path.suffix.lower() == COMPRESSED else path


def reader_suffix(path: Path) -> str:
    """The suffix that picks the reader: ".md" for page.md and for page.md.gz; "" when none does."""
    suffix = _uncompressed(path).suffix.lower()
    return suffix if suffix in READERS else ""


def type_name(path: Path) -> str:
    """How a skip names a file's type: ".docx", ".yaml.gz", "(none)"."""
    inner = _uncompressed(path)
    if inner != Path(path) and inner.suffix:
        return inner.suffix + Path(path).suffix
    return Path(path).suffix or "(none)"


def supported(path: Path) -> bool:
    return bool(reader_suffix(path))


def document_stem(path: Path) -> str:
    """A file's name without its type: "run" for run.md and for run.md.gz (the fallback title)."""
    return _uncompressed(path).stem


def extract(path: Path, data: bytes | None = None, max_bytes: int = bounds.DEFAULT_MAX_FILE_BYTES) -> Extracted:
    """Read one file (or parse `data`, its bytes already read); raises UnreadableFile
    with a one-line reason. Reading goes through `bounds.read_regular_file`; a .gz file
    is decompressed within the same size bound (`bounds.gunzip`)."""
    entry = READERS.get(reader_suffix(Path(path)))
    if entry is None:
        raise UnreadableFile(f"unsupported file type {type_name(Path(path))!r}")
    inner = Path(document_stem(Path(path))).suffix.lower()
    if entry[0] == "text" and inner in (".rst", ".md"):     # Sphinx's page.rst.txt, page.md.txt: their sources
        entry = READERS[inner]
    fmt, reader = entry
    if data is None:
        data = bounds.read_regular_file(Path(path), max_bytes)
    if _uncompressed(path) != Path(path):
        data = bounds.gunzip(data, max_bytes)
    try:
        extracted = reader(data)
    except UnreadableFile:
        raise
    except MemoryError:
        raise UnreadableFile("out of memory parsing it") from None
    except Exception as exc:  # a parser bug on one file must not stop the run
        raise UnreadableFile(f"{type(exc).__name__}: {exc}") from None
    extracted.blocks = bounded_blocks(extracted.blocks)
    extracted.metadata.setdefault("format", fmt)
    return extracted

"""Turn files into a flat list of blocks: headings, paragraphs, code.

Every format goes through the same chunker, so every reader only has to say
where headings are and which text must not be split (code). Readers raise
`UnreadableFile` with a one-line reason; ingest reports it and moves on.

Memory per file is bounded (bounds.py): only regular files within the size
bound are read, a PDF's text stops at MAX_PDF_TEXT_CHARS, and every block is
cut to MAX_BLOCK_CHARS (headings to MAX_HEADING_CHARS) before chunking.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import bounds, markdown_html
from .blocks import Block, BlockKind, Extracted
from .bounds import UnreadableFile
from .mdx import mdx_to_markdown, without_comments
from .rst import parse_rst

__all__ = ["Block", "BlockKind", "Extracted", "UnreadableFile", "extract", "parse_html", "parse_markdown",
           "parse_pdf", "READERS", "supported"]

# ---------------------------------------------------------------- markdown

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_QUOTE = re.compile(r"^ {0,3}(?:>[ \t]?)+")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.S)


# What a Markdown renderer never shows: HTML comments (Node.js's API docs carry their version
# history in `<!-- YAML … -->` blocks: 15 % of its chunks held one) and link reference
# definitions (`[v8]: https://v8.dev/`, whole chunks of URLs). A reference link reads as its text.
_LINK_DEFINITION = re.compile(r"^ {0,3}\[(?!\^)[^\]]+\]:\s*\S")     # not a footnote's "[^1]: …"
_REFERENCE_LINK = re.compile(r"(!?)\[([^\]]+)\]\[[^\]]*\]")
_CODE_SPAN = re.compile(r"(`+).+?\1")


def _reference_links_as_text(line: str) -> str:
    """`[text][ref]` and `[text][]` → `text` (code spans in the text kept; the text may wrap onto
    the next line), never inside a code span (`a[i][j]`): the spans are masked while links are found."""
    masked = _CODE_SPAN.sub(lambda m: "\0" * len(m.group()), line)
    out, at = [], 0
    for link in _REFERENCE_LINK.finditer(masked):
        out += [line[at:link.start()], line[link.start(2):link.end(2)]]
        at = link.end()
    return "".join(out) + line[at:]


def parse_markdown(text: str) -> Extracted:
    metadata: dict = {}
    match = _FRONT_MATTER.match(text)
    if match:
        metadata = _front_matter(match.group(1))
        text = text[match.end():]
    blocks: list[Block] = []
    para: list[str] = []
    code: list[str] | None = None
    fence = ""

    def flush() -> None:
        if any(line.strip() for line in para):
            text = markdown_html.without_inline_tags("\n".join(para))
            blocks.append(Block("para", _reference_links_as_text(text).strip("\n")))
        para.clear()

    in_comment = False
    html: list[str] | None = None
    code_quoted = False
    for line in text.splitlines():
        # A blockquote's content is Markdown too (a "> **Note**" box may hold a fenced example): read
        # without its markers, so "> ```console" opens code; code opened outside a quote keeps its "> ".
        quote = _QUOTE.match(line) if code is None or code_quoted else None
        if quote:
            line = line[quote.end():]
        if html is not None:
            if markdown_html.continues_block(html, line):
                html.append(line)
                continue
            blocks.extend(_html_blocks(html))
            html = None
        if code is not None:
            code.append(line)
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and set(stripped) <= {fence[0]}:
                blocks.append(Block("code", "\n".join(code)))
                code = None
            continue
        if in_comment or "<!--" in line:
            line, in_comment = without_comments(line, in_comment, "<!--", "-->")
            if not line.strip():
                continue                        # a line that was only comment
        if _LINK_DEFINITION.match(line):
            continue
        if fence_match := _FENCE.match(line):
            flush()
            fence = fence_match.group(1)
            code, code_quoted = [line], bool(quote)
            continue
        if markdown_html.starts_block(line):
            flush()
            html = [line]
            continue
        if not quote and (heading := _ATX.match(line)):
            flush()
            blocks.append(Block("heading", clean_inline(heading.group(2) or ""), len(heading.group(1))))
            continue
        if not quote and _SETEXT.match(line) and len(para) == 1 and para[0].strip() and not _is_list_item(para[0]):
            level = 1 if line.strip().startswith("=") else 2
            blocks.append(Block("heading", clean_inline(para[0].strip()), level))
            para.clear()
            continue
        if not line.strip():
            flush()
            continue
        para.append(line)
    if code is not None:  # unterminated fence: keep it as code anyway
        blocks.append(Block("code", "\n".join(code)))
    if html is not None:
        blocks.extend(_html_blocks(html))
    flush()
    title = metadata.get("title") if isinstance(metadata.get("title"), str) else None
    if title is None:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1 and b.text), None)
    return Extracted(title, blocks, metadata)


def _html_blocks(lines: list[str]) -> list[Block]:
    """Raw HTML in Markdown (docindex/markdown_html.py)."""
    return _parse_html("\n".join(lines), drop_chrome=False).blocks


def _is_list_item(line: str) -> bool:
    return bool(re.match(r"^\s*([-*+]|\d+[.)])\s", line))


def _front_matter(raw: str) -> dict:
    import yaml

    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError:
        return {}
    if not isinstance(data, dict):
        return {}
    # Only JSON-friendly scalars survive (the metadata column is JSON).
    return {str(k): v for k, v in data.items() if isinstance(v, (str, int, float, bool))}


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"\*\*|\*|~~|`|(?<!\w)__?|__?(?!\w)")   # snake_case keeps its "_"
_HTML_TAG = re.compile(r"<[^>]+>")


def clean_inline(text: str) -> str:
    """Heading text as a reader sees it: links, code spans, emphasis and tags removed."""
    text = _LINK.sub(r"\1", text)
    text = _HTML_TAG.sub("", text)
    text = _EMPHASIS.sub("", text)
    return " ".join(text.split())


# ---------------------------------------------------------------- plain text

def parse_text(text: str) -> Extracted:
    paragraphs = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text)]
    return Extracted(None, [Block("para", p) for p in paragraphs if p.strip()])


# ---------------------------------------------------------------- HTML

_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "button", "form"}
_BLOCK = {
    "p", "div", "section", "article", "main", "li", "ul", "ol", "table", "tr", "td", "th",
    "blockquote", "dl", "dt", "dd", "header", "footer", "nav", "aside", "figure",
    "figcaption", "details", "summary", "hr", "body", "html",
}


_PERMALINKS = "a.headerlink, a.hash-link, a.anchor-link, .viewcode-link, .viewcode-back"   # + Sphinx "[source]"
# Page chrome that documentation generators put around the text: navigation bars, sidebars,
# footers, search boxes. Kept, each became a chunk of its own ("Prev | Up | Home | Next",
# "Next topic: copy — Shallow and deep copy operations", "Part of the git(1) suite") whose
# heading path matches any question about its page: 17 % of the PostgreSQL manual's chunks
# and 17 % of the Python docs' were such bodies under 100 characters.
_CHROME = ", ".join((
    "nav", "footer", "[role=navigation]", "[role=search]", "[role=contentinfo]", "[role=banner]",
    "div.navheader", "div.navfooter",                   # DocBook (the PostgreSQL manual)
    "div.sphinxsidebar", "div.related", "div.footer",   # Sphinx (the Python docs)
    "div#footer",                                       # AsciiDoc (git's manual pages)
    "dialog", "[role=dialog]", "[role=alertdialog]",    # modals: search boxes, keyboard-shortcut tables
))

# Link-dense blocks: navigation whatever a generator calls it (menus, breadcrumbs, "on this page"
# and "see also" link lists, language bars of links).
_LINK_BLOCKS = "div, ul, ol, dl, table, p"
LINK_DENSITY = 0.75     # share of a block's visible characters inside links at which it is navigation
MIN_LINKS = 3


def _link_dense(tree: Any) -> list[Any]:
    """The outermost blocks of `tree` that are navigation by link density (no heading or code inside)."""
    found: list[Any] = []
    ids: set[int] = set()
    for node in tree.css(_LINK_BLOCKS):
        if _inside(node, ids) or node.css_first("h1, h2, h3, h4, h5, h6, pre") is not None:
            continue
        links = node.css("a")
        if len(links) < MIN_LINKS:
            continue
        total = _visible(node.text(deep=True))
        if total and sum(_visible(a.text(deep=True)) for a in links) >= LINK_DENSITY * total:
            found.append(node)
            ids.add(node.mem_id)
    return found


def _inside(node: Any, ids: set[int]) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id in ids:
            return True
        parent = parent.parent
    return False


def _visible(text: str | None) -> int:
    return sum(not c.isspace() for c in text or "")


def parse_html(text: str) -> Extracted:
    """Headings, paragraphs and code of an HTML page, without its chrome (`_CHROME`); a page
    that is nothing but chrome (a site map inside a <nav>) keeps it rather than lose its text."""
    extracted = _parse_html(text, drop_chrome=True)
    if not any(b.kind != "heading" for b in extracted.blocks):
        return _parse_html(text, drop_chrome=False)
    return extracted


def _parse_html(text: str, *, drop_chrome: bool) -> Extracted:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(text)
    for permalink in tree.css(_PERMALINKS):     # Sphinx/MkDocs "¶", Docusaurus "#", "[source]": not text
        permalink.decompose()
    if drop_chrome:
        for chrome in tree.css(_CHROME):
            if chrome.parent is not None:       # not inside chrome already removed
                chrome.decompose()
        for navigation in _link_dense(tree):
            navigation.decompose()
    title_node = tree.css_first("title")
    blocks: list[Block] = []
    buffer: list[str] = []

    def flush() -> None:
        joined = " ".join("".join(buffer).split())
        if joined:
            blocks.append(Block("para", joined))
        buffer.clear()

    def walk(node) -> None:
        for child in node.iter(include_text=True):
            tag = child.tag
            if tag == "-text":
                buffer.append(child.text(deep=False) or "")
            elif tag in _SKIP or tag == "-comment":
                continue
            elif tag in _HEADINGS:
                flush()
                heading = " ".join((child.text(deep=True, separator=" ") or "").split())
                blocks.append(Block("heading", heading, _HEADINGS[tag]))
            elif tag == "pre":
                flush()
                code = (child.text(deep=True) or "").strip("\n")
                if code.strip():
                    blocks.append(Block("code", f"```\n{code}\n```"))
            elif tag == "br":
                buffer.append("\n")
            elif tag == "table" and (table := markdown_html.markdown_table(child)):
                flush()
                blocks.append(Block("para", table))
            elif tag in _BLOCK:
                flush()
                walk(child)
                flush()
            else:
                walk(child)

    root = tree.body or tree.root
    if root is not None:
        walk(root)
    flush()
    title = " ".join(title_node.text().split()) if title_node is not None else ""
    if not title:
        title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), "")
    return Extracted(title or None, blocks)


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

def _decode(data: bytes) -> str:
    if b"\x00" in data[:8192]:
        raise UnreadableFile("binary content")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableFile("not UTF-8 text") from None


READERS: dict[str, tuple[str, Callable[[bytes], Extracted]]] = {
    ".md": ("markdown", lambda data: parse_markdown(_decode(data))),
    ".markdown": ("markdown", lambda data: parse_markdown(_decode(data))),
    ".mdx": ("mdx", lambda data: parse_markdown(mdx_to_markdown(_decode(data)))),
    ".txt": ("text", lambda data: parse_text(_decode(data))),
    ".rst": ("rst", lambda data: parse_rst(_decode(data))),
    ".html": ("html", lambda data: parse_html(_decode(data))),
    ".htm": ("html", lambda data: parse_html(_decode(data))),
    ".pdf": ("pdf", parse_pdf),
}


def supported(path: Path) -> bool:
    return path.suffix.lower() in READERS


def extract(path: Path, data: bytes | None = None) -> Extracted:
    """Read one file (or parse `data`, its bytes already read); raises UnreadableFile
    with a one-line reason. Reading goes through `bounds.read_regular_file`."""
    entry = READERS.get(Path(path).suffix.lower())
    if entry is None:
        raise UnreadableFile(f"unsupported file type {Path(path).suffix or '(none)'!r}")
    fmt, reader = entry
    if data is None:
        data = bounds.read_regular_file(Path(path))
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

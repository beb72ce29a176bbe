"""What every reader produces: a title and a flat list of blocks.

Kept apart from the readers (markdown_reader.py, html_reader.py, extract.py, pdf.py) so that
each reader depends on these types, not on the other readers (no extract <-> pdf import cycle).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

BlockKind = Literal["heading", "para", "code"]

READING_VERSION = 57
"""The version of the rules that turn a file into chunks and quotable sentences (the readers,
chunking.py, quotable.py). Ingest records it per collection and reads every file again when
an index was built by other rules, as if with --force: unchanged files would otherwise keep
the chunks older rules made. 2: stop 30 (page chrome, tiny sections, Markdown comments,
reStructuredText, MDX, table rows, terms). 3: stop 31 (HTML dialogs and Sphinx's "[source]" links are
not text; Markdown tables are embedded as plain rows; a lead-in with nothing after it has no
quote vector). 4: stop 32 (raw HTML and blockquotes in Markdown read as a renderer shows them; HTML
data tables and list items read as Markdown tables and items; "e.g."/"i.e." end no sentence). 5: stop 33
(Markdown's indented code is code unless a list item or MkDocs block holds it; every piece of a long table
keeps its header row, and no row is carried into the next chunk as overlap; reStructuredText directives the
reader does not know keep their term and description; mdBook's menu bar and titles set as text are not quoted).
6: stop 34 (a DocBook block's title, `<p class="title">`, is a bold line of its own, never quoted).
8: stop 37 (an HTML paragraph that is one bold run, and a Sphinx rubric, are such labels; a label over a
short code block is quoted with it). 10: stop 37 (a field list's entry with an empty description is not
quoted; 9 was a chunking rule tried and reverted the same stop, so indexes built by it are read again).
11: stop 37 (a Sphinx field list's term and its one-paragraph body are one paragraph). 12: stop 39 (AsciiDoc:
`.adoc`, `.asciidoc`, `.asc`, and a `.txt` that reads as AsciiDoc, asciidoc.py; "eg." and "ie." end no
sentence; a sentence stopping on "with", "type"… right over code is quoted with it, quotable.DANGLING_LEAD_INS;
a sentence continued after "…)" or '…"' keeps the bracket or quote: "json_extract(X,P1,P2,...) extracts"; an SQL
statement ended by ";" is no term for the paragraph after it). 13: stop 40 (a picture's short caption,
HTML's <figcaption> or DocBook's `div.caption`, is a label: never quoted, no term). 14: stop 40 (a page of
nothing but links keeps its headings only; a block holding a paragraph of prose is not navigation as a whole).
15: stop 40 (HTML: a page with no text outside its chrome keeps its headings only; skip links are not text;
a quote keeps bracketed content, "[1, 20]" as "(1, 20)", and drops only footnote-like "[7]"). 16: stop 40
(a block of nothing but pagination links, "« Previous Next »", is not text). 17: stop 40 (an HTML heading's,
label's or table cell's inline elements are joined as written: “Red Eye Removal”, not “ Red Eye Removal ”).
18-27: stops 40-42 (their commits say which rule each). 28: stop 43 (the PyData and Book themes' "On this
page" label is chrome; read again as text from 32). 29: stop 43 (a plain-text paragraph's underlined or
overlined first line is a heading). 30: stop 43 (a field line, "Grammar: …", between a term and its text does
not end the term). 31: stop 43 (a term's description in lower case is quoted with it, and a "Default: …" line
after it too). 32: stop 43 (28's rule taken back: it moved each pandas page's title out of its first chunk
and cost rankings). 33: stop 44 (value fields under a heading, "Default: 25" under
"MAIL_PORT", are quoted with the heading's name). 34: stop 44 (a code comment wrapped over lines is one
comment). 35: stop 44 (a value field that ends a sentence, and one under a Sphinx version note, are named by
the heading too; "Default::"). 36: stop 44 (a sentence with a menu path, "… Actions → Stock Split… .",
is no signature term). 37: stop 44 (an HTML page declaring UTF-8 with stray
non-UTF-8 bytes is read, each stray byte as Windows-1252). 38: stop 44 (a sentence a code block interrupts is
quoted whole, the code inline). 39: stop 44 (a number over its text in a list of codes or options is
its term: "413: Request too large", "-4: …"). 40: stop 44 (a lead-in right over code carries the code, not the
items after it). 41: stop 44 (a DocBook admonition drawn as a table reads as its label and its text). 42: stop 45 (a
DocBook table of contents, div.toc, is chrome even where it carries a line of description per entry). 43: stop 45
(Pallets' "Changelog" toggle over version notes is chrome). 44: stop 45 (a paragraph stopping on "by", "with"… over
a list goes on in its items; "b; and c", not "b; and; c"). 45: stop 45 (script-driven widgets: a body-level banner,
asides holding a form control, hidden platform choices but the default, LibreOffice's "Related Topics";
html_widgets.py). 46: stop 45 (a table cell "#" or "*" before its text is no list marker; a stop with no word
before it ends no sentence: "? (question mark) matches …"; a layout table's head row is one label). 47: stop 45 (an
interactive session, ">>> " or "$ ", split over <pre>s with nothing between them is one code block). 48: stop 47
(LaTeX2HTML: its div.navigation, "Next: … Up: … Previous: … Index", is chrome; its "4#4" math placeholders are
not text). 49: stop 48 (the paragraph a "See also" line heads is no quotable sentence). 50: stop 49 (a quote
keeps a signature's parameter stars: "Cleaner(**kw)", not "Cleaner(kw)"). 51: stop 50 (a quote keeps its brackets
unless they read as a citation: "obj[key]", "Optional[str]", not "obj(key)"; "In[4]" is still "In(4)"). 52: stop 51
(a list item's later sentences lead with the option its head names: "css_class: Set CSS class name for the wrapper
<div> tag", quotable_terms.item_label). 53: stop 52 (a line under a "See Also:" label is neither a term of the
text below it nor quoted: toolz' "compose pipe" over the next entry's signature, quotable_terms.see_also_content).
54: stop 53 (a paragraph ending on "the following criteria", with no stop, carries the list under it, as a lead-in
with a colon does: quotable_terms.ends_following; a sentence that only says what the example below it shows is not
quoted without it: quotable_terms.example_caption). 55: stop 55 (openstackdocstheme's byline, licence and "questions?"
are chrome). 56: stop 55 (sphinx_celery's version banner, div.deck, is chrome). 57: stop 58 (what a heading hides
from readers, aria-hidden, is not its text: makeinfo 7's "TOC" link; LinuxDoc-Tools' "Next Previous Contents" links
straight in <body> are pagination; a definition list's lower-case texts are no term lines, so its quotes and their
stored vectors change: quotable_terms.DESCRIPTIONS_END_TERMS; a page that is one <pre> of prose, Vim's help, is
read as text: html_pre.py, and so is a DocBook literallayout that is its page; RDoc's "click to toggle source" and
hidden method sources are chrome)."""


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str
    level: int = 0          # 1-6 for headings


@dataclass
class Extracted:
    title: str | None                       # None: the caller falls back to the file name
    blocks: list[Block]
    metadata: dict[str, Any] = field(default_factory=dict)


def code_block(lines: list[str]) -> Block:
    """Source lines as one fenced code block, leading and trailing blank lines dropped (the readers of
    formats whose code is a run of lines: reST's literal blocks, AsciiDoc's listing blocks)."""
    code = "\n".join(lines).strip("\n")
    return Block("code", f"```\n{code}\n```")

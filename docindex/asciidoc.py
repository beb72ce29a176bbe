"""AsciiDoc → blocks: section titles as headings, listing and literal blocks as code, labeled lists
as term and description, markup as a reader sees it.

Before stop 39 a `.adoc` file was not ingested at all ("unsupported file type"), and AsciiDoc kept
as `.txt` (git's manual pages and their include files) was read as plain text: answers quoted its
markup ("NAME ---- git-bisect - Use binary search…", "((files-in-gitignore-are-tracked)) I asked
Git…"). This is not Asciidoctor: it reads what documentation sources use and leaves the rest as text.

* Section titles: `= Title` … `====== Title`, and the older two-line form (a title underlined with
  `=`, `-`, `~`, `^` or `+` to within two characters of its length: levels 1-5 in that order).
* Delimited blocks: listing `----` and literal `....` are code; example `====`, sidebar `****`,
  quote `____` and open `--` blocks are read for their content; comments `////` and passthrough
  `++++` are not text; a table `|===` becomes a Markdown table, as HTML and reST tables do.
* A paragraph marked `[source]`, `[listing]` or `[literal]`, and an indented one, is code.
* Labeled lists (`term::`, `term:::`, `term;;`): the term is a paragraph of its own and its
  description (the rest of the line, or the lines under it) the next, as in the reST reader.
* Not text: attribute entries (`:name: value`, kept to replace `{name}`), block attribute lines
  and anchors (`[verse]`, `[[id]]`), comment lines, `include::`/`ifdef::`/`endif::`/`image::` lines,
  list continuations (`+`). A block title (`.Title`) is a bold label, never quoted (sentences.is_label).
* Inline: `linkgit:git-add[1]` → git-add(1), `link:url[text]` and `url[text]` → text, `<<id,text>>`
  → text, index terms `((term))` → term and `(((…)))` → nothing, emphasis (`'text'`, `_text_`,
  `*text*`) → text, `+text+` → `text`, and the built-in attributes (`{litdd}` → --).

A `.txt` file is read so only when it `looks_like_asciidoc` (two kinds of AsciiDoc markup or more);
any other stays plain text.
"""
from __future__ import annotations

import re

from .blocks import Block, Extracted, code_block

_SECTION = re.compile(r"^(={1,6})\s+(\S.{0,300}?)(?:\s+=+)?\s*$")
_UNDERLINE = re.compile(r"^([=\-~^+])\1+\s*$")
UNDERLINE_LEVELS = {"=": 1, "-": 2, "~": 3, "^": 4, "+": 5}
_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|\|={3,})\s*$")
CODE_DELIMITERS, DROPPED_DELIMITERS = ("-", "."), ("/", "+")
_ATTRIBUTE_ENTRY = re.compile(r"^:([\w-]+)!?:(?:\s+(.*))?$")
_BLOCK_ATTRIBUTES = re.compile(r"^\[\[?[^\]]*\]\]?\s*$")
_CODE_STYLE = re.compile(r"^\[(source|listing|literal)\b")
_DIRECTIVE = re.compile(r"^(include|ifdef|ifndef|ifeval|endif|image|video|audio|toc)::")
_BLOCK_TITLE = re.compile(r"^\.([^.\s].*)$")
_LABELED = re.compile(r"^(\S.{0,200}?)(:{2,4}|;;)(?:\s+(.*))?$")
_RST_DIRECTIVE = re.compile(r"^\.\.\s+[\w:-]+::")
_LIST_ITEM = re.compile(r"^\s*(?:[*\-]+|\.+|\d+\.)\s+\S")
BUILTIN_ATTRIBUTES = {"litdd": "--", "caret": "^", "tilde": "~", "plus": "+", "empty": "", "nbsp": " ",
                      "zwsp": "", "startsb": "[", "endsb": "]", "vbar": "|", "amp": "&", "lt": "<", "gt": ">",
                      "apos": "'", "quot": '"', "sp": " ", "backslash": "\\", "two-colons": "::"}

_INLINE = [
    (re.compile(r"linkgit:([\w.-]+)\[(\w*)\]"), lambda m: f"{m.group(1)}({m.group(2)})" if m.group(2) else m.group(1)),
    (re.compile(r"(?:link|xref|mailto):([^\s\[]{1,500})\[([^\]]{0,500})\]"), lambda m: m.group(2) or m.group(1)),
    (re.compile(r"(https?://[^\s\[<>]{1,500})\[([^\]]{0,500})\]"), lambda m: m.group(2) or m.group(1)),
    (re.compile(r"<<([^,<>\n]{1,200})(?:,\s*([^<>\n]{1,200}))?>>"), lambda m: m.group(2) or m.group(1)),
    (re.compile(r"[ \t]*\(\(\([^)\n]{0,200}\)\)\)"), lambda m: ""),
    (re.compile(r"\(\(([^()\n]{1,200})\)\)"), lambda m: m.group(1)),
    (re.compile(r"\[\[\[?[\w:.-]{1,200}(?:,[^\]\n]{0,200})?\]\]\]?|anchor:[\w:.-]{1,200}\[[^\]\n]{0,200}\]"),
     lambda m: ""),
    (re.compile(r"(?:kbd|btn|pass|menu):[^\s\[]{0,200}\[([^\]]{0,500})\]"), lambda m: m.group(1)),
    (re.compile(r"\*\*(\S(?:[^*\n]{0,300}?\S)?)\*\*|__(\S(?:[^_\n]{0,300}?\S)?)__"),
     lambda m: m.group(1) or m.group(2)),
    (re.compile(r"(?<![\w*\\])\*(\S(?:[^*\n]{0,300}?\S)?)\*(?![\w*])"), lambda m: m.group(1)),
    (re.compile(r"(?<![\w\\])_(\S(?:[^_\n]{0,300}?\S)?)_(?!\w)"), lambda m: m.group(1)),
    (re.compile(r"(?<![\w'\\])'(\S(?:[^'\n]{0,300}?\S)?)'(?![\w'])"), lambda m: m.group(1)),
    (re.compile(r"`\+([^`\n]{1,300}?)\+`|(?<![\w+\\])\+(\S(?:[^+\n]{0,300}?\S)?)\+(?![\w+])"),
     lambda m: f"`{m.group(1) or m.group(2)}`"),
    (re.compile(r"\\([*_'+{#\[])"), lambda m: m.group(1)),
]
_ATTRIBUTE_REFERENCE = re.compile(r"(?<!\\)\{([\w-]+)\}")


def clean_inline(text: str, attributes: dict[str, str]) -> str:
    """AsciiDoc inline markup as a reader sees it (module docstring)."""
    text = _ATTRIBUTE_REFERENCE.sub(lambda m: attributes.get(m.group(1), m.group(0)), text)
    for pattern, replace in _INLINE:
        text = pattern.sub(replace, text)
    return text


def _underlines(title: str, line: str) -> bool:
    """Whether `line` underlines `title` as a two-line section title does (to within two characters)."""
    return bool(_UNDERLINE.match(line)) and abs(len(title.rstrip()) - len(line.rstrip())) <= 2


def looks_like_asciidoc(text: str) -> bool:
    """Whether a `.txt` file is AsciiDoc: two kinds of its markup or more (a title underlined to its
    length, `term::` lines, `linkgit:`/`link:`/`<<xref>>`, `include::`-style lines, delimited blocks,
    block attribute lines, attribute entries), one of them not plain text's own: an underlined title
    and `-----` rules are how plain text files are written too."""
    lines = text.splitlines()[:400]
    if any(_RST_DIRECTIVE.match(line) for line in lines):
        return False                                        # reStructuredText: `.. code-block:: python`
    kinds = {
        "underlined title": any(a.strip() and _underlines(a, b) for a, b in zip(lines, lines[1:])),
        "labeled list": sum(bool(m and m.group(3) is None and "://" not in line)
                            for line in lines for m in [_LABELED.match(line)]) >= 2,
        "macro": bool(re.search(r"linkgit:\S+\[|link:\S+\[|<<[\w-]+(,[^>]*)?>>", text)),
        "directive": any(_DIRECTIVE.match(line) for line in lines),
        "delimited": sum(bool(re.match(r"^(-{4,}|\.{4,}|\|===)\s*$", line)) for line in lines) >= 2,
        "block attributes": any(re.match(r"^\[(\[[\w-]+\]|verse|source|listing|literal|NOTE|TIP|WARNING)[^\]]*\]$",
                                         line) for line in lines),
        "attribute entry": any(_ATTRIBUTE_ENTRY.match(line) for line in lines[:40]),
    }
    specific = ("labeled list", "macro", "directive", "block attributes", "attribute entry")
    return sum(kinds.values()) >= 2 and any(kinds[kind] for kind in specific)


def parse_asciidoc(text: str) -> Extracted:
    attributes = dict(BUILTIN_ATTRIBUTES)
    blocks = _blocks(text.expandtabs(8).splitlines(), attributes)
    title = next((b.text for b in blocks if b.kind == "heading" and b.level == 1), None)
    return Extracted(title, blocks)


def _blocks(lines: list[str], attributes: dict[str, str]) -> list[Block]:
    blocks: list[Block] = []
    para: list[str] = []
    code_next = False

    def flush() -> None:
        nonlocal code_next
        if para:
            text = "\n".join(para)
            blocks.append(code_block(para) if code_next else Block("para", clean_inline(text, attributes)))
            para.clear()
            code_next = False

    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if not para and (section := _SECTION.match(line)):
            blocks.append(Block("heading", clean_inline(section.group(2), attributes), len(section.group(1))))
            i += 1
        elif (not para and stripped and not line[0].isspace() and i + 1 < n and _underlines(line, lines[i + 1])
              and not _DELIMITER.match(line) and not _BLOCK_TITLE.match(line) and not _BLOCK_ATTRIBUTES.match(line)):
            blocks.append(Block("heading", clean_inline(stripped, attributes),
                                UNDERLINE_LEVELS[lines[i + 1].strip()[0]]))
            i += 2
        elif _DELIMITER.match(line):
            flush()
            i = _delimited(lines, i, blocks, attributes, code_next)
            code_next = False
        elif not stripped or stripped == "+":
            flush()
            i += 1
        elif line.startswith("//"):
            i += 1                                          # a comment line
        elif not para and (entry := _ATTRIBUTE_ENTRY.match(line)):
            attributes[entry.group(1)] = clean_inline(entry.group(2) or "", attributes)
            i += 1
        elif not para and _BLOCK_ATTRIBUTES.match(line):
            code_next = bool(_CODE_STYLE.match(line))
            i += 1
        elif _DIRECTIVE.match(line):
            i += 1
        elif not para and (caption := _BLOCK_TITLE.match(line)):
            blocks.append(Block("para", f"**{clean_inline(caption.group(1).strip(), attributes)}**"))
            i += 1
        elif not para and line[0].isspace() and not _LIST_ITEM.match(line):
            body, i = _indented(lines, i)                   # an indented paragraph is literal
            blocks.append(code_block(body))
        elif not para and (labeled := _LABELED.match(line)) and "://" not in labeled.group(1):
            blocks.append(Block("para", clean_inline(labeled.group(1).strip(), attributes)))
            i += 1
            if labeled.group(3):
                para.append(labeled.group(3))
            elif i < n and lines[i][:1].isspace() and lines[i].strip():
                body, i = _indented(lines, i)               # the description, indented under its term
                blocks += _blocks(body, attributes)
        else:
            if para and _LIST_ITEM.match(line):
                flush()                                     # each list item is a paragraph of its own
            para.append(line.strip())
            i += 1
    flush()
    return blocks


def _delimited(lines: list[str], i: int, blocks: list[Block], attributes: dict[str, str], code: bool) -> int:
    """Read the delimited block opening at `i`; returns the index after its closing line."""
    fence = lines[i].strip()
    end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), len(lines))
    body = lines[i + 1:end]
    if fence.startswith("|="):
        table = _table(body, attributes)
        blocks += [table] if table else []
    elif fence[0] in CODE_DELIMITERS and fence != "--" or code:
        if any(line.strip() for line in body):
            blocks.append(code_block(body))
    elif fence[0] not in DROPPED_DELIMITERS:
        blocks += _blocks(body, attributes)
    return end + 1


def _table(body: list[str], attributes: dict[str, str]) -> Block | None:
    """A `|===` table as a Markdown table: the first line's cells set the columns."""
    first = next((line for line in body if line.strip()), "")
    columns = max(first.count("|"), 1)
    cells = [clean_inline(cell.strip(), attributes).replace("|", "\\|")
             for line in body if line.strip().startswith("|") for cell in re.split(r"(?<!\\)\|", line)[1:]]
    rows = [cells[k:k + columns] for k in range(0, len(cells), columns)]
    if not rows:
        return None
    out = ["| " + " | ".join(row) + " |" for row in rows]
    out.insert(1, "|" + "---|" * columns)
    return Block("para", "\n".join(out))


def _indented(lines: list[str], i: int) -> tuple[list[str], int]:
    """The indented lines from `i` to the next blank or unindented one, dedented; the index after."""
    start = i
    while i < len(lines) and lines[i].strip() and lines[i][:1].isspace():
        i += 1
    body = lines[start:i]
    indent = min(len(x) - len(x.lstrip()) for x in body)
    return [x[indent:] for x in body], i


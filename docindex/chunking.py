"""Blocks → chunks: one section per heading, long sections split with overlap.

Sizes are in tokenizer tokens, because real markdown (code, URLs) has far
more tokens per word than prose. A chunk's embedded text is its heading path
plus its body and must fit the embedder's window (256 tokens for MiniLM).
Code blocks are never split unless one alone exceeds the window (then on lines, re-fenced).

Chunks stand on their own: a piece of a section shorter than
MIN_CHUNK_CHARS (a lone code fence such as `make run`, a one-line lead-in)
is not cut off from what follows it in the same section. When the next block
does not fit beside it, that block (prose) is cut at a sentence or line
boundary and its head joins the tiny piece; a tiny last piece joins the one
before it when both fit the window. A code block that fits the window is
still never split, so a tiny lead-in before a large code block may stay
alone.

A section whose whole text is tiny (a manual page's NAME line, "LOCK — lock a
table", a one-line SEE ALSO) does not stand alone either: alone, its chunk is
little more than its heading path, which matches any question about the page
(git-cherry-pick's 13-character SEE ALSO ranked third for "What does git
cherry-pick do?"). It leads the next section when that one is a sibling or a
child (the chunk keeps the tiny section's anchor and path, the next heading
stays in the text as a markdown heading line, so a citation lands just above
the text), and otherwise joins the section before it. Every other chunk keeps
the anchor of the section it comes from.

What is embedded and what BM25 scores is `embed_text`: the heading path
(document title › section headings) on its own line, then the body, its
Markdown tables as plain rows (table_rows.py). The stored and displayed
`text` is the body alone, as written; the path is shown separately as `title`.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .chunk_pieces import LIST_MARKER, SENTENCE_END, sentences, wrapped
from .extract import Block
from .slugs import Slugger
from .table_rows import plain_tables, table_lines

MAX_TOKENS = 256        # the embedder's window, special tokens included
OVERLAP_TOKENS = 32     # carried from the end of one piece of a section into the next
MIN_BODY_BUDGET = 48    # a pathological heading path must not leave no room for text
MIN_CHUNK_CHARS = 100   # a piece shorter than this does not stand alone if its neighbours can take it
PATH_SEPARATOR = " › "

TokenCounter = Callable[[str], int]


@dataclass(frozen=True)
class Chunk:
    ordinal: int                    # position in the document, from 0
    level: int                      # heading level of its section; 0 for text before any heading
    anchor: str                     # GitHub-style slug, unique in the document; "" before any heading
    heading_path: tuple[str, ...]   # document title, then the headings above and of the section
    text: str                       # the body shown to readers

    @property
    def title(self) -> str:
        return PATH_SEPARATOR.join(self.heading_path)

    @property
    def section(self) -> str:
        """The heading its text begins under (its heading path's last; "" without one): what names a
        value field at the text's start (quotable.candidates' names)."""
        return self.heading_path[-1] if self.heading_path else ""

    @property
    def embed_text(self) -> str:
        """What the embedder and BM25 see: the heading path gives the body its context."""
        return f"{self.title}\n{plain_tables(self.text)}"


# ---------------------------------------------------------------- sections

@dataclass
class _Section:
    level: int
    anchor: str
    path: tuple[str, ...]
    body: list[Block]


def _sections(blocks: Iterable[Block], doc_title: str) -> list[_Section]:
    slugger = Slugger()
    stack: list[tuple[int, str]] = []
    current = _Section(0, "", (doc_title,), [])
    sections = [current]
    for block in blocks:
        if block.kind != "heading":
            current.body.append(block)
            continue
        while stack and stack[-1][0] >= block.level:
            stack.pop()
        stack.append((block.level, block.text))
        path = tuple(text for _, text in stack)
        if not path or path[0] != doc_title:
            path = (doc_title, *path)
        current = _Section(block.level, slugger.slug(block.text), path, [])
        sections.append(current)
    return sections


def _merge_tiny_sections(sections: list[_Section]) -> list[_Section]:
    """Tiny sections joined to a neighbour (module docstring); sections without text are
    left out, as chunking leaves them out."""
    out: list[_Section] = []
    pending: _Section | None = None         # a tiny section waiting to lead the next one
    for section in (s for s in sections if s.body):
        if pending is not None:
            if section.level >= pending.level:
                section = _Section(pending.level, pending.anchor, pending.path,
                                   pending.body + [_inline_heading(section)] + section.body)
            else:                           # a higher heading ends pending's part of the page
                out.append(_joined_to_previous(out, pending))
            pending = None
        if _is_tiny([(b.text, 0, False) for b in section.body]):
            pending = section
        else:
            out.append(section)
    if pending is not None:
        out.append(_joined_to_previous(out, pending))
    return out


def _joined_to_previous(out: list[_Section], tiny: _Section) -> _Section:
    """`tiny` appended to the last section kept (which then leaves `out`), or alone when none is."""
    if not out:
        return tiny
    before = out.pop()
    return _Section(before.level, before.anchor, before.path, before.body + [_inline_heading(tiny)] + tiny.body)


def _inline_heading(section: _Section) -> Block:
    """A section's heading as a line of the text it joined (never quoted as a sentence)."""
    return Block("para", f"{'#' * max(section.level, 1)} {section.path[-1]}")


# ---------------------------------------------------------------- packing

def chunk_blocks(
    blocks: Iterable[Block],
    doc_title: str,
    count_tokens: TokenCounter,
    *,
    max_tokens: int = MAX_TOKENS,
    overlap_tokens: int = OVERLAP_TOKENS,
) -> list[Chunk]:
    """Split a document's blocks into chunks; sections without text yield none."""
    chunks: list[Chunk] = []
    for section in _merge_tiny_sections(_sections(blocks, doc_title)):
        if not section.body:
            continue
        header = PATH_SEPARATOR.join(section.path)
        # count_tokens includes [CLS] and [SEP]: count them once, for the whole text.
        budget = max(max_tokens - count_tokens(header), MIN_BODY_BUDGET)
        for body in _pack(section.body, budget, overlap_tokens, count_tokens):
            chunks.append(Chunk(len(chunks), section.level, section.anchor, section.path, body))
    return chunks


def _content_tokens(count_tokens: TokenCounter, text: str) -> int:
    return max(count_tokens(text) - 2, 0)


def _pack(body: list[Block], budget: int, overlap: int, count_tokens: TokenCounter) -> list[str]:
    """Greedy packing of whole blocks; oversized blocks are split first."""
    units: list[tuple[str, int, bool]] = []   # (text, tokens, is_code)
    for block in body:
        tokens = _content_tokens(count_tokens, block.text)
        if tokens <= budget:
            units.append((block.text, tokens, block.kind == "code"))
        elif block.kind == "code":
            units.extend((piece, _content_tokens(count_tokens, piece), True)
                         for piece in _split_code(block.text, budget, count_tokens))
        elif (table := table_lines(block.text)) is not None:
            units.extend((piece, tokens, False) for piece, tokens in _split_table(*table, budget, count_tokens))
        else:
            units.extend((piece, tokens, False) for piece, tokens in _split_prose(block.text, budget, count_tokens))

    pieces: list[list[tuple[str, int, bool]]] = []
    current: list[tuple[str, int, bool]] = []
    carried = 0                 # units at the head of `current` repeated from the previous piece
    used = 0
    position = 0
    while position < len(units):
        unit = units[position]
        if current and used + unit[1] > budget:
            if not unit[2] and _is_tiny(current[carried:]):
                head = _head_that_fits(unit[0], budget - used, count_tokens)
                if head is not None:   # the tiny piece takes the head of the next block
                    units[position:position + 1] = list(head)
                    continue
            pieces.append(current)
            current = _overlap_tail(current, overlap, budget - unit[1], count_tokens)
            carried = len(current)
            used = sum(tokens for _, tokens, _ in current)
        current.append(unit)
        used += unit[1]
        position += 1
    if current:
        own = current[carried:]
        if pieces and _is_tiny(own) and sum(t for _, t, _ in pieces[-1] + own) <= budget:
            pieces[-1] = pieces[-1] + own   # a tiny last piece joins the one before it
        else:
            pieces.append(current)
    return ["\n\n".join(text for text, _, _ in piece) for piece in pieces]


def _is_tiny(units: list[tuple[str, int, bool]]) -> bool:
    return sum(len(text) for text, _, _ in units) + 2 * max(len(units) - 1, 0) < MIN_CHUNK_CHARS


def _head_that_fits(text: str, room: int,
                    count_tokens: TokenCounter) -> tuple[tuple[str, int, bool], tuple[str, int, bool]] | None:
    """Cut prose at the last sentence or line boundary whose head fits `room` tokens:
    (head, rest) as units, the original separators kept inside each; None if no head fits."""
    best = None
    table = table_lines(text)
    for boundary in SENTENCE_END.finditer(text):
        head = text[:boundary.start()].strip()
        if not head or LIST_MARKER.search(head) or (table and (
                "\n" not in boundary.group() or head.count("\n") < len(table[0]))):
            continue                        # a table is cut between whole rows, one besides its header at least
        if not table and wrapped(head, text[boundary.end():]):
            continue                        # a hard-wrapped line is not a sentence's end
        tokens = _content_tokens(count_tokens, head)
        if tokens > room:
            break
        best = (head, tokens, boundary.end())
    if best is None:
        return None
    head, tokens, cut = best
    rest = text[cut:].strip()
    if not rest:
        return None
    if table and table[0]:
        rest = "\n".join([*table[0], rest])       # the rest of a table keeps its header
    return (head, tokens, False), (rest, _content_tokens(count_tokens, rest), False)


def _overlap_tail(previous: list[tuple[str, int, bool]], overlap: int, room: int,
                  count_tokens: TokenCounter) -> list[tuple[str, int, bool]]:
    """Trailing prose of the previous piece, at most `overlap` tokens, never code or a table's rows."""
    limit = min(overlap, room)
    if limit <= 0 or not previous:
        return []
    text, tokens, is_code = previous[-1]
    if is_code or table_lines(text) is not None:
        return []
    if tokens <= limit:
        return [(text, tokens, False)]
    tail: list[tuple[str, int, str]] = []
    used = 0
    for sentence, sep in reversed(sentences(text)):
        need = _content_tokens(count_tokens, sentence)
        if used + need > limit:
            break
        tail.insert(0, (sentence, need, sep))
        used += need
    return [(_joined(tail), used, False)] if tail else []


def _split_table(header: list[str], rows: list[str], budget: int,
                 count_tokens: TokenCounter) -> list[tuple[str, int]]:
    """A table too long for one chunk, cut between rows (cut by sentences, its rows ran together
    and were quoted as one garbled sentence), each piece under the table's header: a piece without
    it was rows of bare values ("DELETE — INSERT — If one or more…", SQLite's session.html), and
    the sentence overlap carried into it a garbled row ("| | UPDATE | DELETE | …")."""
    head = "\n".join(header)
    head_tokens = _content_tokens(count_tokens, head) if header else 0
    if head_tokens > budget // 2:                   # a header too big to repeat
        head, head_tokens, rows = "", 0, header + rows
    room = budget - head_tokens
    parts: list[tuple[str, int]] = []
    for row in rows:
        tokens = _content_tokens(count_tokens, row)
        parts.extend([(row, tokens)] if tokens <= room else _split_words(row, room, count_tokens))
    return [(f"{head}\n{text}" if head else text, tokens + head_tokens)
            for text, tokens in _greedy_join(parts, room, "\n")]


def _split_prose(text: str, budget: int, count_tokens: TokenCounter) -> list[tuple[str, int]]:
    """Sentences packed up to the budget; a sentence too long is cut on words, then characters.
    Pieces keep their line breaks: a list's items stay one a line ("…reuse it);\n2. builds…"),
    where joining them with spaces made one sentence of two items."""
    parts: list[tuple[str, int]] = []
    seps: list[str] = []
    for sentence, sep in sentences(text):
        tokens = _content_tokens(count_tokens, sentence)
        if tokens <= budget:
            parts.append((sentence, tokens))
            seps.append(sep)
        else:
            words = _split_words(sentence, budget, count_tokens)
            parts.extend(words)
            seps.extend([sep] + [" "] * (len(words) - 1))
    return _greedy_join(parts, budget, " ", seps)


def _split_words(text: str, budget: int, count_tokens: TokenCounter) -> list[tuple[str, int]]:
    words: list[tuple[str, int]] = []
    for word in text.split():
        tokens = _content_tokens(count_tokens, word)
        if tokens <= budget:
            words.append((word, tokens))
        else:  # one giant "word": a CJK run without spaces, a long URL, base64
            step = max(budget // 2, 1)
            words.extend((piece, _content_tokens(count_tokens, piece))
                         for piece in (word[i:i + step] for i in range(0, len(word), step)))
    return _greedy_join(words, budget, " ")


def _greedy_join(parts: list[tuple[str, int]], budget: int, sep: str,
                 seps: list[str] | None = None) -> list[tuple[str, int]]:
    """Join counted parts up to the budget. BERT's pre-tokenizer splits on whitespace, so the
    tokens of parts joined by whitespace are the sum of their tokens: no re-counting.
    A tiny last group takes parts from the end of the group before it (the last group only
    grows up to MIN_CHUNK_CHARS, the one before only shrinks: both stay within the budget).
    `seps`: each part's own separator before it (default `sep` for all)."""
    separators = seps if seps is not None else [sep] * len(parts)
    groups: list[list[tuple[str, int, str]]] = []
    current: list[tuple[str, int, str]] = []
    used = 0
    for (part, tokens), before_part in zip(parts, separators):
        if current and used + tokens > budget:
            groups.append(current)
            current, used = [], 0
        current.append((part, tokens, before_part))
        used += tokens
    if current:
        groups.append(current)
    if len(groups) > 1:
        before, last = groups[-2], groups[-1]
        while len(before) > 1 and len(_joined(last)) < MIN_CHUNK_CHARS \
                and sum(t for _, t, _ in last) + before[-1][1] <= budget:
            last.insert(0, before.pop())
    return [(_joined(group), sum(t for _, t, _ in group)) for group in groups]


def _joined(group: list[tuple[str, int, str]]) -> str:
    """The group's parts, each after its own separator (none before the first)."""
    return "".join(part if i == 0 else sep + part for i, (part, _, sep) in enumerate(group))


def _split_code(code: str, budget: int, count_tokens: TokenCounter) -> list[str]:
    """Cut an oversized fenced block on lines; every piece is fenced again."""
    lines = code.split("\n")
    opener, closer = "```", "```"
    if lines and lines[0].lstrip().startswith(("```", "~~~")):
        opener = lines.pop(0).strip()
        fence_char = opener[0]
        closer = fence_char * (len(opener) - len(opener.lstrip(fence_char)))
        if lines and lines[-1].strip() and set(lines[-1].strip()) == {fence_char}:
            lines.pop()
    inner_budget = max(budget - _content_tokens(count_tokens, f"{opener}\n{closer}"), 1)
    counted: list[tuple[str, int]] = []
    for line in lines:
        tokens = _content_tokens(count_tokens, line)
        if tokens <= inner_budget:
            counted.append((line, tokens))
        else:   # a single line too long (minified code): cut it on words
            counted.extend(_split_words(line, inner_budget, count_tokens))
    return [f"{opener}\n{piece}\n{closer}" for piece, _ in _greedy_join(counted, inner_budget, "\n")]

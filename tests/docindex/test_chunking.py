from __future__ import annotations

import re

import pytest
from tokenizers import Tokenizer

from docindex.chunking import MAX_TOKENS, chunk_blocks
from docindex.embedder import tokenizer_path
from docindex.extract import parse_markdown
from docindex.slugs import Slugger, slugify


@pytest.fixture(scope="module")
def count_tokens():
    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return lambda text: len(tokenizer.encode(text).ids)


def chunks_of(markdown: str, count_tokens, title: str = "Doc", **kwargs):
    extracted = parse_markdown(markdown)
    return chunk_blocks(extracted.blocks, extracted.title or title, count_tokens, **kwargs)


@pytest.mark.parametrize("heading, slug", [
    ("Hello World", "hello-world"),
    ("C++ & Rust!", "c--rust"),
    ("v0.6.0 — acceptance", "v060--acceptance"),
    ("snake_case and-dash", "snake_case-and-dash"),
    ("染发前的准备", "染发前的准备"),
    ("Ünïcode Straße", "ünïcode-straße"),
    ("  padded  ", "padded"),
])
def test_slugify_follows_github(heading, slug):
    assert slugify(heading) == slug


def test_duplicate_headings_get_github_style_suffixes():
    slugger = Slugger()
    assert [slugger.slug(h) for h in ["Usage", "Usage", "Usage-1", "Usage"]] == [
        "usage", "usage-1", "usage-1-1", "usage-2"]


def body(topic: str) -> str:
    """A section body long enough to stand alone (MIN_CHUNK_CHARS)."""
    return f"The {topic} section explains {topic} in two sentences. Each of them says a little more about {topic}, so that it stands alone."


def test_heading_paths_follow_the_heading_levels(count_tokens):
    chunks = chunks_of(
        f"# Guide\n\n{body('intro')}\n\n## Setup\n\n{body('setup')}\n\n### Linux\n\n{body('linux')}\n\n"
        f"## Usage\n\n{body('usage')}\n", count_tokens)
    assert [(c.anchor, c.heading_path, c.level) for c in chunks] == [
        ("guide", ("Guide",), 1),
        ("setup", ("Guide", "Setup"), 2),
        ("linux", ("Guide", "Setup", "Linux"), 3),
        ("usage", ("Guide", "Usage"), 2),
    ]
    assert chunks[2].title == "Guide › Setup › Linux"
    assert chunks[2].embed_text.startswith("Guide › Setup › Linux\n")


def test_text_before_the_first_heading_gets_an_empty_anchor_and_the_title_path(count_tokens):
    chunks = chunks_of(f"{body('preamble')}\n\n## Details\n\n{body('details')}\n", count_tokens, title="notes")
    assert (chunks[0].anchor, chunks[0].heading_path) == ("", ("notes",))
    assert chunks[1].heading_path == ("notes", "Details")


def test_markdown_parsing_ignores_hashes_in_code_and_reads_setext_and_front_matter():
    extracted = parse_markdown(
        "---\ntitle: Front Title\nurl: https://example.org/doc\n---\n"
        "Setext Heading\n==============\n\n```sh\n# not a heading\n```\n\nSub\n---\n\ntext\n")
    assert extracted.title == "Front Title"
    assert extracted.metadata["url"] == "https://example.org/doc"
    kinds = [(b.kind, b.level, b.text.splitlines()[0]) for b in extracted.blocks]
    assert kinds == [("heading", 1, "Setext Heading"), ("code", 0, "```sh"), ("heading", 2, "Sub"),
                     ("para", 0, "text")]


def test_heading_markup_is_removed_before_slugging(count_tokens):
    chunks = chunks_of("## The `crag_search` [tool](http://x) **now**\n\nbody\n", count_tokens)
    assert chunks[0].heading_path[-1] == "The crag_search tool now"
    assert chunks[0].anchor == "the-crag_search-tool-now"


def test_long_sections_split_on_paragraphs_within_the_token_budget_with_overlap(count_tokens):
    paragraphs = [f"Paragraph {i} explains step {i} of the deployment. It has two sentences about step {i}."
                  for i in range(40)]
    chunks = chunks_of("# Long\n\n" + "\n\n".join(paragraphs), count_tokens)
    assert len(chunks) >= 3
    assert all(count_tokens(c.embed_text) <= MAX_TOKENS for c in chunks)
    assert len({c.anchor for c in chunks}) == 1        # pieces of one section share its anchor
    for before, after in zip(chunks, chunks[1:]):
        last_paragraph = before.text.split("\n\n")[-1]
        assert after.text.startswith(last_paragraph)   # overlap: the next piece repeats the tail
    joined = "\n\n".join(c.text for c in chunks)
    assert all(p in joined for p in paragraphs)         # nothing lost


def test_a_code_block_that_fits_is_never_split(count_tokens):
    code = "```python\n" + "\n".join(f"value_{i} = compute({i})" for i in range(25)) + "\n```"
    prose = "\n\n".join(f"Sentence number {i} describes the code below in some detail." for i in range(12))
    chunks = chunks_of(f"# Code\n\n{prose}\n\n{code}\n\nAfter the code.\n", count_tokens)
    holding = [c for c in chunks if "value_0" in c.text]
    assert len(holding) == 1 and code in holding[0].text
    assert all(c.text.count("```") % 2 == 0 for c in chunks)


def test_an_oversized_code_block_is_cut_on_lines_and_refenced(count_tokens):
    code = "```c\n" + "\n".join(f"int variable_{i} = function_call_{i}(argument_{i});" for i in range(200)) + "\n```"
    chunks = chunks_of(f"# Big\n\n{code}\n", count_tokens)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.startswith("```c\n") and chunk.text.endswith("\n```")
        assert count_tokens(chunk.embed_text) <= MAX_TOKENS
    assert "int variable_199" in chunks[-1].text


def test_cjk_text_without_spaces_is_split_within_the_budget(count_tokens):
    text = "染发前需要做皮肤测试并确认发质状态。" * 60
    chunks = chunks_of(f"# 染发\n\n{text}\n", count_tokens)
    assert len(chunks) > 1
    assert all(count_tokens(c.embed_text) <= MAX_TOKENS for c in chunks)


# ---------------------------------------------------------------- chunks that stand on their own

def _long_list(n: int = 14) -> str:
    return "\n".join(f"{i}. step {i} installs the part number {i} of the service and checks it twice;"
                     for i in range(1, n + 1))


def test_a_lone_code_fence_is_not_a_chunk_of_its_own(count_tokens):
    markdown = f"# Ops\n\n## Run it: `make run`\n\n```bash\nmake run\n```\n\n{_long_list()}\n"
    chunks = chunks_of(markdown, count_tokens)
    assert len(chunks) > 1 and all(count_tokens(c.embed_text) <= MAX_TOKENS for c in chunks)
    first = chunks[0]
    assert first.text.startswith("```bash\nmake run\n```\n\n1. step 1 installs")
    assert all(len(c.text) >= 100 for c in chunks)
    joined = "\n".join(c.text for c in chunks)
    assert all(f"part number {i} " in joined for i in range(1, 15))   # nothing lost


def test_a_tiny_last_piece_joins_the_piece_before_it_or_takes_its_tail(count_tokens):
    sentences = " ".join(f"Sentence {i} tells the reader about option {i} in detail." for i in range(40))
    chunks = chunks_of(f"# Doc\n\n{sentences} Short end.\n", count_tokens)
    assert len(chunks) > 1
    assert all(len(c.text) >= 100 for c in chunks)
    assert all(count_tokens(c.embed_text) <= MAX_TOKENS for c in chunks)
    assert chunks[-1].text.endswith("Short end.")


def test_sections_that_stand_alone_are_never_merged_so_every_anchor_stays(count_tokens):
    chunks = chunks_of(f"# Guide\n\n{body('intro')}\n\n## Setup\n\n{body('setup')}\n\n## Usage\n\n{body('usage')}\n",
                       count_tokens)
    assert [c.anchor for c in chunks] == ["guide", "setup", "usage"]


def test_a_tiny_section_leads_the_next_one_which_keeps_its_heading_as_a_line(count_tokens):
    """A manual page's NAME line alone would be a chunk of little more than its heading path."""
    chunks = chunks_of(f"# git-x\n\n## NAME\n\ngit-x - do x\n\n## SYNOPSIS\n\n{body('synopsis')}\n\n"
                       f"## DESCRIPTION\n\n{body('description')}\n", count_tokens)
    assert [(c.anchor, c.heading_path[-1]) for c in chunks] == [("name", "NAME"), ("description", "DESCRIPTION")]
    assert chunks[0].text == f"git-x - do x\n\n## SYNOPSIS\n\n{body('synopsis')}"


def test_a_tiny_section_before_a_subsection_leads_it(count_tokens):
    chunks = chunks_of(f"# Guide\n\n## Install\n\nPick one:\n\n### Linux\n\n{body('linux')}\n", count_tokens)
    assert [(c.anchor, c.level) for c in chunks] == [("install", 2)]
    assert chunks[0].text == f"Pick one:\n\n### Linux\n\n{body('linux')}"


def test_tiny_last_sections_join_the_one_before_them(count_tokens):
    chunks = chunks_of(f"# git-x\n\n## EXAMPLES\n\n{body('examples')}\n\n## SEE ALSO\n\ngit-y(1)\n\n"
                       "## GIT\n\nPart of the git(1) suite\n", count_tokens)
    assert [c.anchor for c in chunks] == ["examples"]
    assert chunks[0].text.endswith("## SEE ALSO\n\ngit-y(1)\n\n## GIT\n\nPart of the git(1) suite")


def test_a_tiny_section_does_not_lead_a_higher_heading_it_joins_the_section_before(count_tokens):
    chunks = chunks_of(f"# One\n\n{body('one')}\n\n## Note\n\nSee two.\n\n# Two\n\n{body('two')}\n", count_tokens)
    assert [c.anchor for c in chunks] == ["one", "two"]
    assert chunks[0].text.endswith("## Note\n\nSee two.") and chunks[1].text == body("two")


def test_a_document_that_is_one_tiny_section_is_still_a_chunk(count_tokens):
    chunks = chunks_of("# Only\n\nShort.\n", count_tokens)
    assert [(c.anchor, c.text) for c in chunks] == [("only", "Short.")]


def test_the_heading_path_is_embedded_and_scored_but_not_in_the_displayed_text(count_tokens):
    chunks = chunks_of("# Guide\n\n## Serving\n\n### Your own documents\n\nBuild an index first.\n",
                       count_tokens, )
    chunk = chunks[-1]
    assert chunk.text == "Build an index first."
    assert chunk.embed_text == "Guide › Serving › Your own documents\nBuild an index first."


def test_an_oversized_list_keeps_one_item_a_line_and_joins_wrapped_lines(count_tokens):
    """A list too long for one chunk is cut by sentences and lines; its items stay one a line
    (joined with spaces, "…reuse it); 2. builds…" read as one sentence of two items)."""
    items = [f"{n}. step {n} does {' '.join(['something useful'] * 12)} and then\n   wraps onto a second line;"
             for n in range(1, 13)]
    chunks = chunks_of("# Run\n\n" + "\n".join(items) + "\n", count_tokens)
    assert len(chunks) > 1
    for chunk in chunks:
        assert count_tokens(chunk.embed_text) <= MAX_TOKENS
        starts = [m.start() for m in re.finditer(r"\d+\. step", chunk.text)]
        assert starts and all(at == 0 or chunk.text[at - 1] == "\n" for at in starts)   # an item opens a line
        assert "\n   wraps" not in chunk.text                                          # a wrapped line is joined


def _long_table(rows: int) -> str:
    body = "\n".join(f"| CHANGE{i} | NEW{i} | The change number {i} is kept in the group after the merge. |"
                     for i in range(rows))
    return "| Existing Change | New Change | Output Change |\n|---|---|---|\n" + body


def test_a_long_table_is_cut_between_rows_and_every_piece_keeps_its_header(count_tokens):
    """SQLite's session.html: a continuation piece was bare rows ("DELETE — INSERT — If one or more…"),
    and the sentence overlap carried a garbled row into it ("| | UPDATE | DELETE | …")."""
    chunks = chunks_of("# Changegroups\n\n" + _long_table(30), count_tokens)
    assert len(chunks) > 1
    seen = []
    for chunk in chunks:
        lines = chunk.text.split("\n")
        assert lines[:2] == ["| Existing Change | New Change | Output Change |", "|---|---|---|"]
        assert all(line.startswith("| CHANGE") and line.endswith("|") for line in lines[2:])
        seen += lines[2:]
        assert count_tokens(chunk.embed_text) <= MAX_TOKENS
    assert seen == _long_table(30).split("\n")[2:]          # every row once, in order: no overlap


def test_a_tiny_lead_in_takes_a_tables_first_rows_and_the_rest_keeps_the_header(count_tokens):
    chunks = chunks_of("# Changegroups\n\nThe rules:\n\n" + _long_table(30), count_tokens)
    assert chunks[0].text.startswith("The rules:\n\n| Existing Change |")
    assert all(c.text.split("\n")[0] == "| Existing Change | New Change | Output Change |" for c in chunks[1:])


def test_a_lead_in_never_cuts_a_table_row_in_the_middle(count_tokens):
    """Found by review: a head could end after a cell's full stop ("| CHANGE6 | NEW6 | Kept.")."""
    rows = "\n".join(f"| CHANGE{i} | NEW{i} | Kept. It stays in the group word word word word word word after the "
                     f"merge of change {i}. |" for i in range(8))
    table = "| Existing Change | New Change | Output Change |\n|---|---|---|\n" + rows
    for chunk in chunks_of("# T\n\nThe rules are listed below for you:\n\n" + table, count_tokens):
        lines = [line for line in chunk.text.split("\n") if line.strip()]
        rows_here = [line for line in lines if line.startswith("|")]
        assert rows_here[:2] == table.split("\n")[:2] and chunk.text.count("| Existing Change") == 1
        assert all(line.endswith("|") for line in rows_here)
        assert not any("It stays" in line and not line.startswith("|") for line in lines)


def test_no_chunk_of_hard_wrapped_prose_starts_mid_sentence(count_tokens):
    """Docker's build.md (lines wrapped at 80 columns): the overlap carried a paragraph's last *line*,
    so a chunk began "[creating a .dockerignore file](../builder.md#dockerignore-file)." and the
    answer quoted that fragment. The carried tail, and a long paragraph's next piece, start at a
    sentence now; a list item still starts its line."""
    sentence = ("The builder reference contains detailed information on how the context is sent,\n"
                "which files are left out of it and why, and what the daemon does with\n"
                "[the rest of the files](../builder.md#dockerignore-file) when step {i} runs.")
    long_paragraph = "\n".join(sentence.format(i=i) for i in range(14))
    paragraphs = [" ".join(f"Paragraph {p} sentence {s} is short." for s in range(12)) for p in range(3)]
    chunks = chunks_of("# Build\n\n" + "\n\n".join([*paragraphs, long_paragraph, *paragraphs]) + "\n", count_tokens)
    assert len(chunks) > 3
    for chunk in chunks:
        assert count_tokens(chunk.embed_text) <= MAX_TOKENS
        first = chunk.text.split("\n\n")[0]
        assert first.startswith(("Paragraph", "The builder reference")), first[:60]
    joined = " ".join(" ".join(c.text.split()) for c in chunks)
    assert all(" ".join(sentence.format(i=i).split()) in joined for i in range(14))   # nothing lost


def test_sentences_join_wrapped_lines_but_keep_list_items_on_their_own():
    from docindex.chunk_pieces import sentences

    text = "Run the tool with the flag\n`--quiet` to hide output. Then:\n- first item\n  wrapped here.\n2. second"
    assert [s for s, _ in sentences(text)] == [
        "Run the tool with the flag `--quiet` to hide output.", "Then:", "- first item wrapped here.", "2. second"]

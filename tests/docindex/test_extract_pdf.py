"""PDFs (issue 18 item 8): the title comes from the metadata or the cover's
largest text (never the first outline entry), the cover gets a section with
a real anchor, heading paths follow the outline's own nesting, and running
headers and footers are not part of the text."""
from __future__ import annotations

from docindex.chunking import _sections, chunk_blocks
from docindex.extract import extract

from .pdfgen import write_pdf

HEADER = "ACME Widget Manual - confidential"
OUTLINE = [("1. Introduction", 1, 1), ("1.1 Scope", 1, 2), ("1.1.1 Limits", 1, 3), ("2. Setup", 2, 1)]


def manual(tmp_path, *, title=None, cover_size=24):
    pages = [
        [(HEADER, 9), ("Widget Handbook", cover_size), "Version 2.1, for operators", ("Page 1 of 3", 9)],
        [(HEADER, 9), "1. Introduction", "Widgets turn cranks into coffee.", "1.1 Scope",
         "This manual covers the model W2.", "1.1.1 Limits", "It does not cover espresso.", ("Page 2 of 3", 9)],
        [(HEADER, 9), "2. Setup", "Bolt the widget to a sturdy bench.", ("Page 3 of 3", 9)],
    ]
    return extract(write_pdf(tmp_path / "manual.pdf", pages, OUTLINE, title=title))


def chunks(extracted, file_title="manual"):
    return chunk_blocks(extracted.blocks, extracted.title or file_title, lambda text: len(text.split()) + 2)


def test_the_metadata_title_wins(tmp_path):
    assert manual(tmp_path, title="W2 Operator Manual").title == "W2 Operator Manual"


def test_without_metadata_the_cover_pages_largest_text_is_the_title(tmp_path):
    assert manual(tmp_path).title == "Widget Handbook"


def test_without_either_the_title_is_left_to_the_file_name_not_the_first_chapter(tmp_path):
    assert manual(tmp_path, cover_size=12).title is None


def test_the_cover_is_a_section_with_a_real_anchor(tmp_path):
    found = chunks(manual(tmp_path))
    assert all(chunk.anchor for chunk in found)
    cover = found[0]
    assert (cover.anchor, cover.heading_path) == ("widget-handbook", ("Widget Handbook",))
    assert "Version 2.1" in cover.text
    untitled = chunks(manual(tmp_path, cover_size=12))
    assert (untitled[0].anchor, untitled[0].heading_path) == ("front-matter", ("manual", "Front matter"))


def test_heading_paths_follow_the_outlines_own_nesting(tmp_path):
    extracted = manual(tmp_path)      # sections, before chunking joins these tiny ones to their neighbours
    paths = {section.path[-1]: section.path for section in _sections(extracted.blocks, extracted.title or "manual")}
    assert paths["1.1.1 Limits"] == ("Widget Handbook", "1. Introduction", "1.1 Scope", "1.1.1 Limits")
    assert paths["2. Setup"] == ("Widget Handbook", "2. Setup")
    assert not [path for path in paths.values() if path[0] == "1. Introduction"]
    headings = [(b.text, b.level) for b in manual(tmp_path).blocks if b.kind == "heading"]
    assert headings == [("Widget Handbook", 1), ("1. Introduction", 1), ("1.1 Scope", 2), ("1.1.1 Limits", 3),
                        ("2. Setup", 1)]


def test_running_headers_and_footers_are_dropped(tmp_path):
    text = "\n".join(b.text for b in manual(tmp_path).blocks)
    assert HEADER not in text and "Page 2 of 3" not in text and "of 3" not in text
    for line in ("Widgets turn cranks into coffee.", "Bolt the widget to a sturdy bench.", "Version 2.1"):
        assert line in text


def test_a_line_on_one_page_only_is_content(tmp_path):
    pages = [["Intro", "Shared first line"], ["Other start", "Body two"], ["Third start", "Body three"]]
    text = "\n".join(b.text for b in extract(write_pdf(tmp_path / "x.pdf", pages)).blocks)
    assert all(line in text for page in pages for line in page)


def test_a_word_hyphenated_at_a_lines_end_is_joined(tmp_path):
    """pdfium gives "coordi\ufffenates": gnuplot's manual showed "coordi<U+FFFE>nates" in 98 chunks."""
    pages = [["The gnuplot coordi-", "nates are set by the user-", "defined functions here."]]
    text = "\n".join(b.text for b in extract(write_pdf(tmp_path / "h.pdf", pages)).blocks)
    assert "coordinates" in text and "\ufffe" not in text

"""Files that are no document of their own, found on manuals nobody tuned for (stop 41): redirect
pages (GNU Octave's texinfo manual is 568 pages and 2,324 `XREF*.html` redirects; rust-doc has
~10,000), a PDF of the HTML build beside it (`octave.pdf` beside `octave.html/`: 42 % of the
chunks) and a Sphinx build's generated index and search pages (CMake's `genindex.html`: 120
chunks of term lists). Each is skipped and reported; named as a path, a PDF or index is read."""
from __future__ import annotations

from click.testing import CliRunner

from docindex.cli import main
from docindex.extract import UnreadableFile, parse_html

from .conftest import write_files
from .pdfgen import text_pdf

PAGE = "<html><head><title>{0}</title></head><body><h1>{0}</h1><p>{0} reads numbers from a file.</p></body></html>"
TEXINFO_REDIRECT = ('<html><head><meta http-equiv="Refresh" content="0; url=Simple-File-I_002fO.html#XREF{0}">'
                    '</head><body><p>The node you are looking for is at '
                    '<a href="Simple-File-I_002fO.html#XREF{0}">XREF{0}</a>.</p></body></html>')


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_redirect_pages_are_skipped_in_one_line_and_a_page_with_text_is_read(tmp_path):
    files = {f"XREF{name}.html": TEXINFO_REDIRECT.format(name) for name in ("csvread", "dlmread", "load", "save")}
    files |= {"Simple-File-I_002fO.html": PAGE.format("csvread"),
              # Sphinx's reredirects: the refresh inside <noscript>, no body text at all
              "old/moved.html": '<html><head><noscript><meta http-equiv="refresh" content="0; url=../new.html"/>'
                                '</noscript></head><body><script>location.replace("../new.html")</script></body></html>',
              # LibreOffice's help: every page, short ones too, sends a browser without scripts elsewhere
              "short.html": '<html><head><noscript><meta http-equiv="refresh" content="0; URL=noscript.html">'
                            '</noscript></head><body><h1>Zoom</h1><p>Reads numbers at a larger size.</p></body></html>',
              # a refresh without "url=" (sqlite3-doc's sqlite.html, Javadoc's overview-summary.html)
              "sqlite.html": '<html><head><meta http-equiv="refresh" content="0; ./cli.html"></head><body></body></html>',
              # a page that refreshes itself but has text of its own is a document
              "status.html": '<html><head><meta http-equiv="refresh" content="30; url=status.html"></head><body>'
                             f'<h1>Status</h1><p>{"The build farm reports every job it ran today. " * 6}</p></body></html>'}
    docs = write_files(tmp_path / "docs", files)
    result = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    assert result.stdout.startswith("3 added, 0 changed, 0 removed, 0 unchanged, 6 skipped"), result.output
    assert result.stderr.splitlines() == [      # one kind: one line, wherever they are
        f"skipped 6 files under {docs}: each a redirect page (a refresh to another page, no text of its own), "
        f"e.g. {docs / 'XREFcsvread.html'}: a redirect to Simple-File-I_002fO.html#XREFcsvread (no text of its own)",
    ]
    few = invoke("ingest", docs / "old", docs / "sqlite.html", docs / "status.html", "--db", tmp_path / "few.db",
                 "-c", "c")
    assert few.exit_code == 3 and few.stderr.splitlines() == [
        f"skipped {docs / 'old/moved.html'}: a redirect to ../new.html (no text of its own)",
        f"skipped {docs / 'sqlite.html'}: a redirect to ./cli.html (no text of its own)",
    ], few.output
    search = invoke("search", "reads numbers", "--db", tmp_path / "i.db", "-c", "c", "--json")
    assert "XREF" not in search.stdout and "Simple-File-I_002fO.html" in search.stdout


def test_a_redirect_is_not_a_document_but_a_fragment_of_another_format_is_read():
    try:
        parse_html(TEXINFO_REDIRECT.format("csvread"))
    except UnreadableFile as exc:
        assert exc.group == "redirect page"
    else:
        raise AssertionError("a redirect page was read as a document")
    from docindex.html_reader import html_fragment
    assert [b.text for b in html_fragment(TEXINFO_REDIRECT.format("csvread"))] == [
        "The node you are looking for is at XREFcsvread."]


def test_a_pdf_of_the_html_build_beside_it_is_skipped_and_read_when_named(tmp_path):
    pdf = text_pdf([["Simple File I/O", "csvread reads numbers from a comma separated file."]])
    docs = write_files(tmp_path / "docs", {
        "octave.html/index.html": PAGE.format("Octave"), "octave.html/csvread.html": PAGE.format("csvread"),
        "octave.pdf": pdf,                                  # texinfo: the manual's PDF beside its HTML build
        "guide.html": PAGE.format("Guide"), "guide.pdf": pdf,   # a page and its PDF
        "refcard.pdf": pdf,                                 # no HTML of that name: read
        "images/images.pdf": pdf, "images/plot.png.txt": "a picture's note",   # a folder of that name with no page
    })
    result = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        f"skipped {docs / 'guide.pdf'}: the PDF of the HTML page {docs / 'guide.html'} beside it (the pages are "
        "ingested; name the file to ingest it)",
        f"skipped {docs / 'octave.pdf'}: the PDF of the HTML pages in {docs / 'octave.html'}/ beside it (the pages "
        "are ingested; name the file to ingest it)",
    ]
    assert result.stdout.startswith("6 added, 0 changed, 0 removed, 0 unchanged, 2 skipped"), result.output
    named = invoke("ingest", docs / "octave.pdf", "--db", tmp_path / "named.db", "-c", "c")
    assert named.exit_code == 0 and named.stdout.startswith("1 added"), named.output


def test_a_sphinx_builds_index_and_search_pages_are_skipped_but_not_elsewhere(tmp_path):
    index = "<html><body><h1>Index</h1><ul><li><a href='a.html'>add_library</a></li></ul></body></html>"
    build = write_files(tmp_path / "html", {
        "objects.inv": b"# Sphinx inventory", "add_library.html": PAGE.format("add_library"),
        "genindex.html": index, "genindex-A.html": index, "py-modindex.html": index, "search.html": index,
    })
    result = invoke("ingest", build, "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    reason = ("Sphinx's generated index or search page, links only (the pages it links are ingested; "
              "name the file to ingest it)")
    assert [line for line in result.stderr.splitlines() if "Sphinx" in line] == [
        f"skipped {build / name}: {reason}" for name in ("genindex-A.html", "genindex.html", "py-modindex.html",
                                                          "search.html")]
    assert result.stdout.startswith("1 added"), result.output
    site = write_files(tmp_path / "site", {"search.html": PAGE.format("Search")})   # no Sphinx build: a page
    kept = invoke("ingest", site, "--db", tmp_path / "site.db", "-c", "c")
    assert kept.exit_code == 0 and kept.stdout.startswith("1 added"), kept.output


MANUAL = " ".join(f"Step {n}: the packaging helper writes file number {n} into debian/{n}.conf and checks "
                  f"rule {n * 7} before it builds version {n}.{n + 1}." for n in range(1, 41))


def test_a_pdf_or_text_copy_of_the_pages_is_skipped_by_content_and_read_alone(tmp_path):
    """debmake-doc ships `html/` beside `debmake-doc.en.pdf` and `.txt.gz`: names that match no
    page, so they were read, and took the pages' places (gold page first / top 5 / MRR 5 / 10 / 0.604,
    8 / 12 / 0.819 with the pages alone). A PDF or text file whose 6-grams are mostly in the pages
    ingested with it is skipped; an unrelated one, or a copy named alone, is read."""
    import gzip
    half = len(MANUAL) // 2
    page = "<html><body><h1>Guide, part {0}</h1><p>{1}</p></body></html>"
    docs = write_files(tmp_path / "doc", {
        "html/index.html": page.format(1, MANUAL[:half]), "html/ch02.html": page.format(2, MANUAL[half:]),
        "guide.en.pdf": text_pdf([[MANUAL[at:at + 90] for at in range(0, len(MANUAL), 90)]]),
        "guide.en.txt.gz": gzip.compress(MANUAL.encode()),
        "notes.txt": " ".join(f"Release {n} fixed the mirror list and {n * 3} typos." for n in range(60)),
    })
    result = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    lines = result.stderr.splitlines()
    assert [line.split(": a copy")[0] for line in lines] == [
        f"skipped {docs / 'guide.en.pdf'}", f"skipped {docs / 'guide.en.txt.gz'}"], result.output
    assert all("of its text is in them; name the file alone to ingest it)" in line for line in lines)
    assert result.stdout.startswith("3 added, 0 changed, 0 removed, 0 unchanged, 2 skipped"), result.output
    alone = invoke("ingest", docs / "guide.en.pdf", "--db", tmp_path / "alone.db", "-c", "c")
    assert alone.exit_code == 0 and alone.stdout.startswith("1 added"), alone.output


def test_a_copy_read_again_leaves_the_index(tmp_path):
    """Read again (changed, or by newer reading rules), a PDF found to repeat the pages is removed,
    so the index does not keep the copy an older run wrote."""
    docs = write_files(tmp_path / "doc", {"guide.pdf": text_pdf([[MANUAL[at:at + 90]
                                                                   for at in range(0, len(MANUAL), 90)]])})
    db = tmp_path / "i.db"
    assert invoke("ingest", docs, "--db", db, "-c", "c").exit_code == 0
    write_files(docs, {"html/index.html": f"<html><body><h1>Guide</h1><p>{MANUAL}</p></body></html>"})
    again = invoke("ingest", docs, "--db", db, "-c", "c", "--force")
    assert again.exit_code == 3, again.output
    assert again.stdout.startswith("1 added, 0 changed, 1 removed, 0 unchanged, 1 skipped"), again.output
    listed = invoke("search", "packaging helper writes file number", "--db", db, "-c", "c", "--json")
    assert "guide.pdf" not in listed.stdout and "index.html" in listed.stdout

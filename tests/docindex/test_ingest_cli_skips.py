"""`docindex ingest` reports every skipped file on stderr and says so in its exit status
(issue 18 item 5): 0 all ingested, 3 some skipped, 1 nothing written, 2 usage."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from docindex.cli import main

from .conftest import write_files

REPO = Path(__file__).resolve().parents[2]


def invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_skipped_files_in_a_folder_are_reported_and_the_run_exits_3(tmp_path):
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n", "b.docx": b"PK\x03\x04",
                                           "bin.txt": b"\x00\x01", ".git/config": "[core]\n"})
    result = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c", "--max-file-mb", "1")
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        f"skipped {docs / 'b.docx'}: unsupported file type '.docx' (supported: .adoc, .asc, .asciidoc, .htm, "
        ".html, .markdown, .md, .mdx, .pdf, .rst, .txt, each also gzip-compressed as .gz)",
        f"skipped {docs / 'bin.txt'}: binary content",
    ]
    assert result.stdout.startswith("1 added, 0 changed, 0 removed, 0 unchanged, 2 skipped")


def test_an_unsupported_file_named_explicitly_does_not_abort_the_run(tmp_path):
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n", "manual.docx": b"PK\x03\x04"})
    result = invoke("ingest", docs / "manual.docx", docs / "a.md", "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith(f"skipped {docs / 'manual.docx'}: unsupported file type '.docx'")
    assert "1 added" in result.stdout


def test_a_clean_run_exits_0_and_a_dry_run_with_skips_exits_3(tmp_path):
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    assert invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c").exit_code == 0
    (docs / "pic.png").write_bytes(b"\x89PNG")
    dry = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c", "--dry-run")
    assert dry.exit_code == 3 and f"skipped {docs / 'pic.png'}" in dry.stderr


def test_nothing_ingestible_lists_the_skips_then_one_error_line_and_exits_1(tmp_path):
    docs = write_files(tmp_path / "docs", {"manual.docx": b"PK\x03\x04"})
    result = invoke("ingest", docs / "manual.docx", "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"skipped {docs / 'manual.docx'}: unsupported file type")
    assert len(lines) == 2 and lines[1].startswith("Error: no Markdown, text, HTML or PDF files to ingest")
    assert "Traceback" not in result.output and not (tmp_path / "i.db").exists()


def test_a_bad_size_limit_is_a_usage_error(tmp_path):
    result = invoke("ingest", tmp_path, "--db", tmp_path / "i.db", "-c", "c", "--max-file-mb", "0")
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_the_help_documents_the_exit_codes_and_the_flags():
    text = invoke("ingest", "--help").output
    assert "Exit status:" in text and "3  done, but some files were skipped" in text
    assert "--follow-external-links" in text and "--max-file-mb" in text


def test_a_real_process_reports_a_fifo_and_exits_3(tmp_path):
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    os.mkfifo(docs / "x.md")
    proc = subprocess.run([sys.executable, "-m", "docindex.cli", "ingest", str(docs), "--db", str(tmp_path / "i.db"),
                           "-c", "c", "--dry-run"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip() == f"skipped {docs / 'x.md'}: not a regular file (a FIFO)"


def test_reading_an_older_index_again_is_said_in_one_line(tmp_path):
    import sqlite3

    from docindex import store

    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha text that says something.\n"})
    db = tmp_path / "i.db"
    assert invoke("ingest", docs, "--db", db, "-c", "c").exit_code == 0
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM meta WHERE key = ?", (store.READING_KEY + "c",))
    result = invoke("ingest", docs, "--db", db, "-c", "c")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("note: the collection was read by older rules (version 1, now ")
    assert result.stdout.startswith("0 added, 1 changed, 0 removed, 0 unchanged, 0 skipped")


def test_gzip_compressed_pages_are_read_and_a_bad_or_bombing_gzip_is_skipped(tmp_path):
    """Debian compresses every larger page under /usr/share/doc (docker-doc's run.md.gz, builder.md.gz):
    they were skipped as '.gz', 110 of docker-doc's 204 files. Now page.md.gz is read as Markdown
    within the same size bound; a gzip that inflates past --max-file-mb or is not gzip is one
    reported line, and the other files are ingested."""
    import gzip

    from docindex.index import Index

    docs = write_files(tmp_path / "docs", {
        "reference/run.md.gz": gzip.compress(b"# docker run\n\nThe --restart flag sets a restart policy.\n"),
        "page.html.gz": gzip.compress(b"<html><body><p>HEALTHCHECK tells Docker how to test a container.</p>"
                                      b"</body></html>"),
        "notitle.txt.gz": gzip.compress(b"plain words about volumes\n"),
        "bomb.md.gz": gzip.compress(b"a" * 3_000_000),
        "broken.md.gz": b"\x1f\x8b\x08\x00not gzip at all",
        "changelog.Debian.gz": gzip.compress(b"docker (1.0) unstable"),
    })
    result = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c", "--max-file-mb", "1")
    assert result.exit_code == 3, result.output
    skipped = sorted(result.stderr.splitlines())
    assert skipped[0] == f"skipped {docs / 'bomb.md.gz'}: decompresses to over the 1 MB limit (--max-file-mb)"
    assert skipped[1].startswith(f"skipped {docs / 'broken.md.gz'}: not a valid gzip file")
    assert skipped[2].startswith(f"skipped {docs / 'changelog.Debian.gz'}: unsupported file type '.Debian.gz'")
    assert len(skipped) == 3
    with Index(tmp_path / "i.db") as index:
        hits = {h.source: h for h in index.search("restart policy", k=5, collection="c")}
        assert "reference/run.md.gz" in hits and hits["reference/run.md.gz"].title.startswith("docker run")
        assert index.search("HEALTHCHECK", k=1, collection="c")[0].source == "page.html.gz"
        volumes = index.search("volumes", k=1, collection="c")[0]
        assert (volumes.source, volumes.title) == ("notitle.txt.gz", "notitle")   # as notitle.txt would be


def test_a_sphinx_builds_source_copies_and_code_pages_are_one_skip_line_each(tmp_path):
    """Pointed at a Sphinx HTML build, ingest takes its pages, not _sources/ (each page's source
    again) nor _modules/ (highlighted code): they took the pages' places in pytest's docs; nor _static/ (the
    theme's files, one line, not one per font)."""
    page = "<html><body><h1>Parametrize</h1><p>Run one test with several inputs.</p></body></html>"
    build = write_files(tmp_path / "html", {
        "searchindex.js": "Search.setIndex({})", "parametrize.html": page,
        "_sources/parametrize.rst.txt": "Parametrize\n===========\n\nRun one test with several inputs.\n",
        "_modules/_pytest/python.html": "<html><body><h1>Source code for _pytest.python</h1></body></html>",
        "_static/basic.css": "body { margin: 0 }", "_static/fonts/Lato.woff2": "font",
    })
    result = invoke("ingest", build, "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        f"skipped {build / '_modules'}: Sphinx's highlighted source code, not pages (name the folder to ingest it)",
        f"skipped {build / '_sources'}: Sphinx's copy of the pages' sources (the built pages are ingested; "
        "name the folder to ingest it)",
        f"skipped {build / '_static'}: Sphinx's theme files: styles, scripts, fonts, images, not pages (name the "
        "folder to ingest it)",
        f"skipped {build / 'searchindex.js'}: unsupported file type '.js' (supported: .adoc, .asc, .asciidoc, .htm, "
        ".html, .markdown, .md, .mdx, .pdf, .rst, .txt, each also gzip-compressed as .gz)",
    ]
    assert result.stdout.startswith("1 added, 0 changed, 0 removed, 0 unchanged, 4 skipped")
    named = invoke("ingest", build / "_sources", "--db", tmp_path / "sources.db", "-c", "c")
    assert named.exit_code == 0 and named.stdout.startswith("1 added"), named.output
    plain = write_files(tmp_path / "notes", {"_sources/list.md": "# Sources\n\nWhere the data came from.\n"})
    kept = invoke("ingest", plain, "--db", tmp_path / "notes.db", "-c", "c")     # no Sphinx build: a folder
    assert kept.exit_code == 0 and kept.stdout.startswith("1 added"), kept.output


def test_a_text_source_beside_its_html_page_is_skipped_and_many_are_one_line(tmp_path):
    """git-doc ships each manual page twice, `git-stash.txt` (AsciiDoc source) beside `git-stash.html`:
    ingested whole, the sources took the pages' places and their markup was quoted ("NAME ---- …").
    A `.txt` with an HTML page of the same name beside it is skipped, GROUPED_FROM or more in one line;
    a `.txt` without one, or named as a path, is read."""
    page = "<html><body><h1>git-{0}</h1><p>The {0} command records changes.</p></body></html>"
    files = {f"git-{n}.html": page.format(n) for n in ("add", "stash", "tag", "log")}
    files |= {f"git-{n}.txt": f"git-{n}(1)\n=========\n\nNAME\n----\ngit-{n} - the source\n"
              for n in ("add", "stash", "tag", "log")}
    files |= {"config.txt": "core.editor::\n\tThe editor to use.\n",
              "one/page.htm": page.format("one"), "one/page.txt": "the source of one page\n"}
    docs = write_files(tmp_path / "docs", files)
    result = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        f"skipped 5 .txt files under {docs}: each the text source of the HTML page of the same name beside it "
        f"(the pages are ingested; name a file to ingest it), e.g. {docs / 'git-add.txt'}",
    ]
    assert result.stdout.startswith("6 added, 0 changed, 0 removed, 0 unchanged, 5 skipped")   # 4 pages, config, page.htm
    alone = invoke("ingest", docs / "one", "--db", tmp_path / "one.db", "-c", "c")
    assert alone.exit_code == 3 and alone.stderr.splitlines() == [
        f"skipped {docs / 'one/page.txt'}: the text source of page.htm beside it (the page is ingested; "
        "name the file to ingest it)"], alone.output
    named = invoke("ingest", docs / "git-add.txt", "--db", tmp_path / "named.db", "-c", "c")
    assert named.exit_code == 0 and named.stdout.startswith("1 added"), named.output


def test_many_files_of_one_unsupported_type_are_one_line_and_still_counted(tmp_path):
    """A manual's images (sqlite3-doc: 121 .gif, 29 .jpg, 17 .png …) were one line each, 193 lines
    around the one that mattered; from GROUPED_FROM files of a type on they are one line."""
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n", "b.docx": b"PK\x03\x04",
                                           **{f"img/{i}.gif": b"GIF89a" for i in range(5)}})
    result = invoke("ingest", docs, "--db", tmp_path / "i.db", "-c", "c")
    assert result.exit_code == 3, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"skipped {docs / 'b.docx'}: unsupported file type '.docx'")
    assert lines[1] == (f"skipped 5 files under {docs / 'img'}: unsupported file type '.gif' (supported: .adoc, "
                        ".asc, .asciidoc, .htm, .html, .markdown, .md, .mdx, .pdf, .rst, .txt, each also gzip-compressed as .gz), "
                        f"e.g. {docs / 'img/0.gif'}")
    assert len(lines) == 2 and result.stdout.startswith("1 added, 0 changed, 0 removed, 0 unchanged, 6 skipped")

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
        f"skipped {docs / 'b.docx'}: unsupported file type '.docx' (supported: .htm, .html, .markdown, .md, "
        ".mdx, .pdf, .rst, .txt)",
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

"""The CLI: happy paths, and every bad input gives one line on stderr and a non-zero exit."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner

from docindex.cli import main

from .conftest import write_files


def invoke(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_one_line_error(result, fragment: str, code: int = 1) -> None:
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and fragment in lines[0], result.stderr
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.fixture
def foreign_db(tmp_path):
    db = tmp_path / "foreign.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    return db


@pytest.fixture
def corrupt_db(tmp_path):
    db = tmp_path / "corrupt.db"
    db.write_bytes(b"\x07garbage" * 512)
    return db


def test_search_prints_ranked_hits_and_json(cmcp_index):
    result = invoke("search", "how do I deploy behind a TLS terminator", "--db", cmcp_index, "-k", "2")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("1. [cos ") and "docs/deployment-tls.md" in result.output
    result = invoke("search", "fuzzing", "--db", cmcp_index, "--collection", "cmcp", "--json", "-k", "3")
    hits = json.loads(result.output)
    assert len(hits) == 3 and {"source", "anchor", "title", "text", "cosine", "bm25", "fusion", "chunk_id",
                               "collection", "heading_path", "doc_id", "score", "fields_bm25", "doc_score",
                               "doc_bm25", "coverage", "doc_cosine", "url", "unknown_terms"} == set(hits[0])


def test_search_says_which_query_words_no_chunk_uses(cmcp_index):
    result = invoke("search", "deploy behind a TLS terminator on a zeppelinport", "--db", cmcp_index, "-k", "1")
    assert result.exit_code == 0, result.output
    assert result.output.rstrip().splitlines()[-1] == "(no chunk uses: zeppelinport)"
    plain = invoke("search", "deploy behind a TLS terminator", "--db", cmcp_index, "-k", "1")
    assert "no chunk" not in plain.output


def test_search_ranks_pages_by_default_and_passages_on_request(cmcp_index):
    """`docindex search` finds pages (DOCUMENT_RANKING: no page twice before every page found
    had its turn); `--rank passages` is the RRF order an answer gets (Index.search's default)."""
    from docindex.index import Index
    from docindex.ranking import DOCUMENT_RANKING

    question = "how do I deploy behind a TLS terminator"

    def ids(*extra: str) -> list[int]:
        result = invoke("search", question, "--db", cmcp_index, "-k", "8", "--json", *extra)
        assert result.exit_code == 0, result.output
        return [hit["chunk_id"] for hit in json.loads(result.output)]

    with Index(cmcp_index, ranking=DOCUMENT_RANKING) as index:
        pages = index.search(question, k=8)
    with Index(cmcp_index) as index:
        passages = [hit.chunk_id for hit in index.search(question, k=8)]
    assert ids() == [hit.chunk_id for hit in pages]
    assert ids("--rank", "passages") == passages
    sources = [hit.source for hit in pages]
    seen_twice = next((i for i, s in enumerate(sources) if s in sources[:i]), len(sources))
    assert len(set(sources[:seen_twice])) == seen_twice >= 2     # distinct pages first
    wrong = invoke("search", question, "--db", cmcp_index, "--rank", "chunks")
    assert wrong.exit_code == 2 and "'chunks' is not one of 'pages', 'passages'" in wrong.stderr
    assert "Traceback" not in wrong.output


def test_stats_reports_collections_and_model(cmcp_index):
    result = invoke("stats", "--db", cmcp_index)
    assert result.exit_code == 0
    assert "all-MiniLM-L6-v2" in result.output and "cmcp: 35 documents" in result.output
    assert json.loads(invoke("stats", "--db", cmcp_index, "--json").output)["documents"] == 35


@pytest.mark.parametrize("args, fragment", [
    (("search", "", "--db", "{cmcp}"), "the query is empty"),
    (("search", "the of and?", "--db", "{cmcp}"), "only stopwords or punctuation"),
    (("search", "tls", "--db", "{cmcp}", "--collection", "nope"), "no collection 'nope'"),
    (("search", "tls", "--db", "{tmp}/missing.db"), "no such index file"),
    (("search", "tls", "--db", "{foreign}"), "not a docindex file"),
    (("search", "tls", "--db", "{corrupt}"), "not a docindex file"),
    (("stats", "--db", "{corrupt}"), "not a docindex file"),
    (("ingest", "{tmp}/no-such-dir", "--db", "{tmp}/i.db", "--collection", "c"), "no such file or directory"),
    (("ingest", "{empty}", "--db", "{tmp}/i.db", "--collection", "c"), "no Markdown, text, HTML or PDF files"),
    (("ingest", "{docs}", "--db", "{foreign}", "--collection", "c"), "not a docindex file"),
])
def test_bad_inputs_give_one_clear_line(tmp_path, cmcp_index, foreign_db, corrupt_db, args, fragment):
    (tmp_path / "empty").mkdir()
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\ntext\n"})
    values = {"cmcp": cmcp_index, "tmp": tmp_path, "foreign": foreign_db, "corrupt": corrupt_db,
              "empty": tmp_path / "empty", "docs": docs}
    assert_one_line_error(invoke(*(a.format(**values) for a in args)), fragment)


def test_usage_errors_exit_2_without_traceback(cmcp_index):
    result = invoke("search", "tls", "--db", cmcp_index, "-k", "0")
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_ingest_dry_run_then_real_run_then_no_op(tmp_path):
    docs = write_files(tmp_path / "docs", {"a.md": "# Alpha\n\nalpha text\n", "b.txt": "bravo text\n"})
    db = tmp_path / "i.db"
    result = invoke("ingest", docs, "--db", db, "--collection", "c", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "would add     a.md" in result.output and result.output.strip().endswith("s)")
    assert "nothing written" in result.output and not db.exists()
    result = invoke("ingest", docs, "--db", db, "--collection", "c")
    assert result.exit_code == 0 and result.output.startswith("2 added, 0 changed, 0 removed, 0 unchanged")
    result = invoke("ingest", docs, "--db", db, "--collection", "c")
    assert "0 added, 0 changed, 0 removed, 2 unchanged" in result.output and "(index version 1)" in result.output


def test_a_real_process_reports_errors_without_traceback(tmp_path):
    missing = tmp_path / "missing.db"
    proc = subprocess.run([sys.executable, "-m", "docindex.cli", "search", "tls", "--db", str(missing)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"Error: {missing}: no such index file (build one with `docindex ingest`)"
    assert proc.stdout == ""

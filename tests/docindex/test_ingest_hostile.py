"""Ingest treats the filesystem as hostile (issue 17 item 7): links out of the roots,
FIFOs, devices, oversize files and huge paragraphs are skipped or bounded, never hung on.

Cases that hung before run the ingest in a subprocess with a generous timeout, so a
regression fails this test instead of hanging the suite.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from docindex.bounds import MAX_BLOCK_CHARS, UnreadableFile, read_regular_file
from docindex.extract import extract
from docindex.index import Index
from docindex.ingest import NothingToIngest, ingest

from .conftest import write_files

REPO = Path(__file__).resolve().parents[2]
HANG_GUARD_S = 120      # generous: a hang, not a slow machine, is what this catches

_CHILD = textwrap.dedent("""
    import json, resource, sys
    from pathlib import Path
    from docindex.ingest import ingest
    from tests.docindex.fakes import HashEmbedder
    args = json.loads(sys.argv[1])
    report = ingest([Path(p) for p in args["paths"]], Path(args["db"]), "docs", embedder=HashEmbedder(),
                    **args.get("options", {}))
    print(json.dumps({"added": report.added, "skipped": report.skipped, "errors": report.errors,
                      "chunks": report.chunks,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
""")


def ingest_in_child(paths: list[Path], db: Path, **options) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps({"paths": [str(p) for p in paths], "db": str(db),
                                                    "options": options})],
        cwd=REPO, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def indexed_sources(db: Path, embedder) -> list[str]:
    with Index(db, embedder=embedder) as index:
        return sorted({c["source"] for c in index.iter_chunks("docs")})


@pytest.fixture
def root(tmp_path) -> Path:
    return write_files(tmp_path / "docs", {"good.md": "# Good\n\nA good document about tokenizers.\n"})


# ---------------------------------------------------------------- links

def test_a_link_to_etc_passwd_is_not_indexed(root, tmp_path, fake_embedder):
    if not Path("/etc/passwd").is_file():
        pytest.skip("no /etc/passwd here")
    (root / "passwd.txt").symlink_to("/etc/passwd")
    report = ingest([root], tmp_path / "i.db", "docs", embedder=fake_embedder)
    assert (report.added, report.skipped) == (1, 1)
    assert report.errors == [f"{root / 'passwd.txt'}: link to /etc/passwd, outside the ingested paths "
                             "(--follow-external-links follows it)"]
    assert indexed_sources(tmp_path / "i.db", fake_embedder) == ["good.md"]
    with Index(tmp_path / "i.db", embedder=fake_embedder) as index:
        assert not any("root:" in c["text"] for c in index.iter_chunks("docs"))


def test_links_out_of_the_roots_are_followed_only_when_asked(root, tmp_path, fake_embedder):
    outside = write_files(tmp_path / "outside", {"secret.md": "# Secret\n\nThe vault code is 1234.\n",
                                                 "more/also.md": "# Also\n\nOutside too.\n"})
    (root / "secret.md").symlink_to(outside / "secret.md")
    (root / "linked-folder").symlink_to(outside / "more")
    report = ingest([root], tmp_path / "i.db", "docs", embedder=fake_embedder)
    assert (report.added, report.skipped) == (1, 2)
    assert all("outside the ingested paths" in e for e in report.errors)
    followed = ingest([root], tmp_path / "j.db", "docs", embedder=fake_embedder, follow_external_links=True)
    assert (followed.added, followed.skipped) == (3, 0)
    assert indexed_sources(tmp_path / "j.db", fake_embedder) == ["good.md", "linked-folder/also.md", "secret.md"]


def test_links_inside_the_roots_are_read_once_and_a_link_loop_ends(root, tmp_path, fake_embedder):
    """A file reached by two names is one document (Exim's `ch14.html -> ch-main_configuration.html`,
    Apache's translations linking to the English pages); a link to a file no other name reaches is read."""
    hidden = write_files(root / ".drafts", {"draft.md": "# Draft\n\nOnly the link reaches it.\n"})
    (root / "alias.md").symlink_to(root / "good.md")                # a second name for an ingested file
    (root / "draft.md").symlink_to(hidden / "draft.md")             # the only name for a hidden file: read
    (root / "loop").symlink_to(root)                                # a folder link inside: not followed
    (root / "dangling.md").symlink_to(root / "gone.md")
    report = ingest([root], tmp_path / "i.db", "docs", embedder=fake_embedder, follow_external_links=True)
    assert report.added == 2
    assert indexed_sources(tmp_path / "i.db", fake_embedder) == ["draft.md", "good.md"]
    reasons = dict(e.split(": ", 1) for e in report.errors)
    assert reasons[str(root / "alias.md")] == f"a link to {root / 'good.md'}, read as {root / 'good.md'}"
    assert reasons[str(root / "dangling.md")] == "broken symbolic link"
    assert reasons[str(root / "loop")].startswith("link to a folder inside the ingested paths")


def test_two_links_to_one_file_outside_are_read_once(root, tmp_path, fake_embedder):
    outside = write_files(tmp_path / "outside", {"shared.md": "# Shared\n\nOne file, two names.\n"})
    (root / "a.md").symlink_to(outside / "shared.md")
    (root / "b.md").symlink_to(outside / "shared.md")
    report = ingest([root], tmp_path / "i.db", "docs", embedder=fake_embedder, follow_external_links=True)
    assert indexed_sources(tmp_path / "i.db", fake_embedder) == ["a.md", "good.md"]
    assert report.errors == [f"{root / 'b.md'}: a link to {outside / 'shared.md'}, read as {root / 'a.md'}"]


def test_a_path_named_explicitly_is_read_even_through_a_link(tmp_path, fake_embedder):
    outside = write_files(tmp_path / "outside", {"notes.md": "# Notes\n\nchosen by the user\n"})
    (tmp_path / "mine.md").symlink_to(outside / "notes.md")
    report = ingest([tmp_path / "mine.md"], tmp_path / "i.db", "docs", embedder=fake_embedder)
    assert (report.added, report.skipped) == (1, 0)


# ---------------------------------------------------------------- not regular files

def test_a_fifo_named_md_is_skipped_without_hanging(root, tmp_path):
    os.mkfifo(root / "x.md")
    result = ingest_in_child([root], tmp_path / "i.db")
    assert (result["added"], result["skipped"]) == (1, 1)
    assert result["errors"] == [f"{root / 'x.md'}: not a regular file (a FIFO)"]


def test_a_fifo_named_explicitly_is_reported_not_read(root, tmp_path):
    os.mkfifo(root / "x.md")
    result = ingest_in_child([root / "x.md", root / "good.md"], tmp_path / "i.db")
    assert (result["added"], result["skipped"]) == (1, 1)
    assert result["errors"] == [f"{root / 'x.md'}: not a regular file (a FIFO)"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_link_to_dev_zero_is_skipped_with_or_without_following_links(root, tmp_path):
    (root / "zero.md").symlink_to("/dev/zero")
    result = ingest_in_child([root], tmp_path / "i.db")
    assert (result["added"], result["skipped"]) == (1, 1)
    assert "outside the ingested paths" in result["errors"][0]
    followed = ingest_in_child([root], tmp_path / "j.db", follow_external_links=True)
    assert (followed["added"], followed["skipped"]) == (1, 1)
    assert followed["errors"] == [f"{root / 'zero.md'}: not a regular file (a character device)"]


def test_reading_a_fifo_directly_does_not_block(tmp_path):
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(UnreadableFile, match="not a regular file"):
        read_regular_file(tmp_path / "pipe.md")


# ---------------------------------------------------------------- sizes

def test_a_file_over_the_size_bound_is_skipped_before_it_is_read(root, tmp_path, fake_embedder):
    (root / "big.md").write_text("# Big\n\n" + "word " * 400)
    report = ingest([root], tmp_path / "i.db", "docs", embedder=fake_embedder, max_file_bytes=1000)
    assert (report.added, report.skipped) == (1, 1)
    assert report.errors == [f"{root / 'big.md'}: 0.0 MB, over the 0.001 MB limit (--max-file-mb)"]


def test_a_sparse_multi_gigabyte_file_costs_no_memory(root, tmp_path):
    # The same child on the small folder first: what the process costs anyway
    # (imports, and on a fresh clone the one-time model preparation), so the
    # bound below is about the huge file, not about what ran first.
    baseline = ingest_in_child([root], tmp_path / "base.db")["peak_rss_mb"]
    with open(root / "huge.md", "wb") as f:
        f.truncate(3 * 1024 ** 3)             # 3 GB of holes: reading it whole would need 3 GB
    result = ingest_in_child([root], tmp_path / "i.db")
    assert (result["added"], result["skipped"]) == (1, 1)
    assert "over the 20 MB limit" in result["errors"][0]
    assert result["peak_rss_mb"] < baseline + 500, (baseline, result["peak_rss_mb"])


def test_a_file_that_grows_past_the_bound_while_read_is_refused(tmp_path):
    (tmp_path / "a.md").write_text("x" * 100)
    with pytest.raises(UnreadableFile, match="over the"):
        read_regular_file(tmp_path / "a.md", max_bytes=99)
    assert read_regular_file(tmp_path / "a.md", max_bytes=100) == b"x" * 100


def test_a_huge_paragraph_with_no_sentence_end_is_ingested_in_bounded_blocks(root, tmp_path):
    words = [f"w{n % 997}" for n in range(300_000)]          # ~1.7 MB, one line, no sentence end
    (root / "wall.md").write_text("# Wall\n\n" + " ".join(words) + "\n")
    blocks = extract(root / "wall.md").blocks
    assert max(len(b.text) for b in blocks) <= MAX_BLOCK_CHARS
    assert " ".join(b.text for b in blocks if b.kind == "para").split() == words     # nothing lost
    result = ingest_in_child([root], tmp_path / "i.db")
    assert (result["added"], result["skipped"]) == (2, 0) and result["chunks"] > 100


def test_long_code_and_long_headings_are_bounded_too(tmp_path):
    code = "```python\n" + "\n".join(f"x_{n} = {n}  # a line of code" for n in range(2000)) + "\n```"
    (tmp_path / "c.md").write_text(f"# {'H' * 5000}\n\n{code}\n")
    blocks = extract(tmp_path / "c.md").blocks
    assert blocks[0].kind == "heading" and len(blocks[0].text) <= 501
    pieces = [b.text for b in blocks if b.kind == "code"]
    assert len(pieces) > 1 and all(len(p) <= MAX_BLOCK_CHARS for p in pieces)
    assert all(p.startswith("```python\n") and p.endswith("\n```") for p in pieces)


# ---------------------------------------------------------------- nothing left

def test_when_every_file_is_skipped_nothing_is_written(tmp_path, fake_embedder):
    os.mkfifo(tmp_path / "only.md")
    with pytest.raises(NothingToIngest, match="no Markdown, text, HTML or PDF files to ingest") as caught:
        ingest([tmp_path], tmp_path / "i.db", "docs", embedder=fake_embedder)
    assert [s.reason for s in caught.value.skipped] == ["not a regular file (a FIFO)"]
    assert not (tmp_path / "i.db").exists()


def test_a_document_swapped_for_a_link_out_of_the_roots_leaves_the_collection(root, tmp_path, fake_embedder):
    db = tmp_path / "i.db"
    (root / "notes.md").write_text("# Notes\n\nharmless notes\n")
    assert ingest([root], db, "docs", embedder=fake_embedder).added == 2
    (root / "notes.md").unlink()
    (root / "notes.md").symlink_to("/etc/hostname" if Path("/etc/hostname").exists() else tmp_path)
    report = ingest([root], db, "docs", embedder=fake_embedder)
    assert (report.removed, report.skipped) == (1, 1) and "outside the ingested paths" in report.errors[0]
    assert indexed_sources(db, fake_embedder) == ["good.md"]


def test_a_document_grown_past_the_bound_keeps_its_previous_version(root, tmp_path, fake_embedder):
    db = tmp_path / "i.db"
    ingest([root], db, "docs", embedder=fake_embedder, max_file_bytes=1000)
    (root / "good.md").write_text("# Good\n\n" + "grown " * 400)
    report = ingest([root], db, "docs", embedder=fake_embedder, max_file_bytes=1000)
    assert (report.changed, report.removed, report.skipped) == (0, 0, 1)
    assert indexed_sources(db, fake_embedder) == ["good.md"]

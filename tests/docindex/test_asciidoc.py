"""AsciiDoc (docindex/asciidoc.py): git's manual sources, read as plain text before stop 39, were
quoted with their markup ("NAME ---- git-bisect - Use binary search…"), and `.adoc` was not read."""
from __future__ import annotations

from docindex.asciidoc import looks_like_asciidoc, parse_asciidoc
from docindex.extract import extract, parse_text

from .conftest import write_files

GIT_PAGE = """\
git-reset(1)
============

NAME
----
git-reset - Reset current HEAD to the specified state

SYNOPSIS
--------
[verse]
'git reset' [-q] [<tree-ish>] [--] <pathspec>...

DESCRIPTION
-----------
In the last form, set the current branch head (`HEAD`) to `<commit>`,
see linkgit:git-restore[1] and <<examples,the examples>>.

// a comment nobody reads
:git-reset-mode: soft

--soft::
\tDoes not touch the index file or the working tree at all, as
\t'git status' would put it.

--mixed::
\tResets the index but not the working tree ((index terms)) (((hidden, term))).
+
This is the default action{litdd}{git-reset-mode} is not.

[[examples]]
EXAMPLES
--------
.Undo a commit
------------
$ git reset --soft HEAD^      <1>
------------

include::config/reset.txt[]

|===
|Mode |Index |Working tree
|soft |kept |kept
|hard |reset |reset
|===
"""


def test_a_git_manual_page_reads_as_headings_terms_code_and_text():
    doc = parse_asciidoc(GIT_PAGE)
    assert doc.title == "git-reset(1)"
    headings = [(b.text, b.level) for b in doc.blocks if b.kind == "heading"]
    assert headings == [("git-reset(1)", 1), ("NAME", 2), ("SYNOPSIS", 2), ("DESCRIPTION", 2), ("EXAMPLES", 2)]
    paras = [b.text for b in doc.blocks if b.kind == "para"]
    assert "git-reset - Reset current HEAD to the specified state" in paras
    assert paras[2].endswith("`<commit>`,\nsee git-restore(1) and the examples.")
    assert paras[3:5] == ["--soft", "Does not touch the index file or the working tree at all, as\ngit status would put it."]
    assert "Resets the index but not the working tree index terms." in paras
    assert "This is the default action--soft is not." in paras
    assert "**Undo a commit**" in paras                          # a block title: a label (sentences.is_label)
    assert paras[-1].splitlines() == ["| Mode | Index | Working tree |", "|---|---|---|", "| soft | kept | kept |",
                                      "| hard | reset | reset |"]
    code = [b.text for b in doc.blocks if b.kind == "code"]
    assert code == ["```\n$ git reset --soft HEAD^      <1>\n```"]
    text = " ".join(b.text for b in doc.blocks)
    for markup in ("----", "::", "linkgit", "<<", "[[", "((", "include::", "a comment", ":git-reset-mode:"):
        assert markup not in text, markup


def test_asciidoctor_titles_blocks_and_inline_markup():
    doc = parse_asciidoc("""\
= Deploying the service
:toc:

== Requirements

NOTE: The service needs *Python 3.11* and _two_ cores; see https://example.org/setup[the setup guide].

[source,bash]
----
make deploy
----

=== Behind a proxy
****
Set `HTTPS_PROXY` before +make deploy+, as link:proxy.adoc[the proxy page] says.
****

////
Nothing in here is text.
////
++++
<div>raw HTML</div>
++++
  indented literal line
* first item
* second item
""")
    assert doc.title == "Deploying the service"
    assert [(b.kind, b.level) for b in doc.blocks if b.kind == "heading"] == [("heading", 1), ("heading", 2),
                                                                             ("heading", 3)]
    paras = [b.text for b in doc.blocks if b.kind == "para"]
    assert paras == ["NOTE: The service needs Python 3.11 and two cores; see the setup guide.",
                     "Set `HTTPS_PROXY` before `make deploy`, as the proxy page says.",
                     "* first item", "* second item"]
    assert [b.text for b in doc.blocks if b.kind == "code"] == ["```\nmake deploy\n```", "```\nindented literal line\n```"]


def test_markup_inside_words_and_code_is_left_alone():
    doc = parse_asciidoc("Set snake_case_name to 2 * 3 * 4, it's the user's choice: a `*.txt` glob, C++ or C++.\n")
    assert doc.blocks[0].text == "Set snake_case_name to 2 * 3 * 4, it's the user's choice: a `*.txt` glob, C++ or C++."


def test_a_txt_is_asciidoc_only_with_two_kinds_of_its_markup():
    assert looks_like_asciidoc(GIT_PAGE)
    plain = "Release notes\n=============\n\nThis release fixes two bugs: see the tracker.\n\nThanks to all::\n"
    assert not looks_like_asciidoc(plain)           # an underlined title alone (and one "::" line) is not enough
    assert [(b.kind, b.text) for b in parse_text(plain).blocks[:2]] == [      # plain text: its underlined title
        ("heading", "Release notes"), ("para", "This release fixes two bugs: see the tracker.")]   # a heading
    ruled = "Release notes\n=============\n\n----------\nFixed two bugs in the parser.\n----------\n"
    assert not looks_like_asciidoc(ruled)           # a title and rules: how plain text is written too


def test_restructuredtext_is_never_taken_for_asciidoc_and_a_sphinx_source_is_read_as_rst(tmp_path):
    """reST's `Example::` lines and underlined titles are two kinds of AsciiDoc markup too: pytest's
    `rst/*.rst.txt` were read as AsciiDoc. A reST directive says it is not; `page.rst.txt` is read as reST."""
    rst = "Usage\n=====\n\nRun it like so::\n\n    pytest -k name\n\nSee also::\n\n    pytest -x\n\n" \
          ".. code-block:: python\n\n    import pytest\n"
    assert not looks_like_asciidoc(rst)
    docs = write_files(tmp_path, {"usage.rst.txt": rst})
    page = extract(docs / "usage.rst.txt")
    assert page.title == "Usage" and [b.text for b in page.blocks if b.kind == "code"] == [
        "```\npytest -k name\n```", "```\npytest -x\n```", "```\nimport pytest\n```"]


def test_adoc_files_are_ingested_and_a_txt_that_is_asciidoc_is_read_as_such(tmp_path):
    docs = write_files(tmp_path, {"guide.adoc": "= Guide\n\n== Install\n\nRun `make`.\n",
                                  "git-reset.txt": GIT_PAGE, "notes.asciidoc.gz": b""})
    guide = extract(docs / "guide.adoc")
    assert guide.title == "Guide" and [b.kind for b in guide.blocks] == ["heading", "heading", "para"]
    page = extract(docs / "git-reset.txt")
    assert page.title == "git-reset(1)" and any(b.kind == "code" for b in page.blocks)

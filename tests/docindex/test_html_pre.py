"""A page that is one <pre> of text is read as text (docindex/html_pre.py, stop 58)."""
from __future__ import annotations

import pytest

from docindex import html_pre

from .test_extract import page_texts

PROSE = ("The last changes are remembered.  You can use the undo and redo commands above\n"
         "to revert the text to how it was before each change.  You can also apply the\n"
         "changes again, getting back the text before the undo.\n\n")
VIM = ('<HTML><BODY><H1>Vim documentation: undo</H1><A HREF="index.html">main help file</A><HR><PRE>\n'
       '*<A NAME="undo.txt"></A><B>undo.txt</B>*      For Vim version 9.0.  Last change: 2022 Jun 02\n\n'
       '==============================================================================\n'
       '1. Undo and redo commands\t\t\t\t*<A NAME="undo-commands"></A><B>undo-commands</B>*\n\n'
       ':u[ndo] {N}\t\tJump to after change number {N}.  See |<A HREF="#undo-branches">undo-branches</A>|\n'
       '\t\t\tfor the meaning of {N}.\n\n' + PROSE * 12 + '</PRE></BODY></HTML>')


def test_vims_help_page_is_text_with_headings_not_one_code_block(tmp_path):
    """vim2html puts a whole help file in one <pre>: read as code, nothing of Vim's help could be quoted, and the
    service refused all 16 questions asked of it. Tags are anchors, links their words, a line after a rule a heading."""
    texts = page_texts(tmp_path, VIM)
    assert texts[:4] == ["Vim documentation: undo", "main help file", "For Vim version 9.0.  Last change: 2022 Jun 02",
                         "1. Undo and redo commands"]
    assert texts[4] == ":u[ndo] {N}\t\tJump to after change number {N}.  See undo-branches\n\t\t\tfor the meaning of {N}."
    assert not any(text.startswith("```") for text in texts)


def test_a_page_of_code_or_a_short_block_of_prose_stays_code(tmp_path):
    program = "".join(f"def step{i}(env, name):\n    print('%s arrives at the carwash at the time' % name)\n"
                      f"    yield env.timeout(5)\n\n" for i in range(40))
    assert page_texts(tmp_path, f"<html><body><h1>Carwash</h1><pre>{program}</pre></body></html>")[1].startswith("```")
    short = f"<html><body><h1>Intro</h1><p>{'Some words here. ' * 200}</p><pre>{PROSE * 3}</pre></body></html>"
    assert page_texts(tmp_path, short)[-1].startswith("```")            # prose in a <pre> beside the page's text


def test_the_switch_reads_it_as_code_again(tmp_path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(html_pre, "PROSE_PAGES", False)
    assert page_texts(tmp_path, VIM)[-1].startswith("```")


def test_a_docbook_literallayout_that_is_the_page_is_read_as_text(tmp_path):
    """Valgrind's NEWS is a DocBook literallayout, a line per <br>: read as paragraphs, the page was one paragraph of
    thousands of words. A title over its underline and one framed in rules are headings."""
    news = "<br>\n".join(["Release 3.19.0 (11 Apr 2022)", "~~~~~~~~~~~~~~~~~~~~~~~~~~~~", "",
                          "* ==================== CORE CHANGES ===================", "",
                          *(["* The Linux rseq syscall is now implemented as (silently) returning ENOSYS."] * 40)])
    html = (f'<html><body><h1>2. NEWS</h1><div class="literallayout"><p>{news}</p></div></body></html>')
    texts = page_texts(tmp_path, html)
    assert texts[:3] == ["2. NEWS", "Release 3.19.0 (11 Apr 2022)", "CORE CHANGES"]
    assert texts[3].count("\n") == 39

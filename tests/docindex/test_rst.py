"""reStructuredText sources (Sphinx, CMake's Help): headings, literal blocks and directives."""
from __future__ import annotations

from docindex.chunking import _sections
from docindex.extract import extract

SOURCE = """\
=====
Guide
=====

.. _install:

Install
-------

Run the installer::

  ./install.sh --prefix /opt

.. code-block:: cmake
   :caption: CMakeLists.txt

   add_custom_command(OUTPUT out)

.. note::
   Use :command:`add_custom_target` or :ref:`the manual <manual>` first.

.. versionadded:: 3.2

``APPEND``
  Append to the `previous rule <https://example.org/rules>`_ of :func:`~os.path.join`.

.. toctree::
   other

Options
^^^^^^^

.. This is a comment
   over two lines.

The options are few.
"""


def test_rst_reads_headings_literal_blocks_and_directives(tmp_path):
    path = tmp_path / "guide.rst"
    path.write_text(SOURCE)
    extracted = extract(path)
    assert (extracted.title, extracted.metadata["format"]) == ("Guide", "rst")
    assert [(b.kind, b.level, b.text) for b in extracted.blocks] == [
        ("heading", 1, "Guide"),
        ("heading", 2, "Install"),
        ("para", 0, "Run the installer:"),
        ("code", 0, "```\n./install.sh --prefix /opt\n```"),
        ("code", 0, "```\nadd_custom_command(OUTPUT out)\n```"),
        ("para", 0, "Use add_custom_target or the manual first."),
        ("para", 0, "New in version 3.2."),
        ("para", 0, "`APPEND`"),
        ("para", 0, "Append to the previous rule of join."),
        ("heading", 3, "Options"),
        ("para", 0, "The options are few."),
    ]
    paths = [s.path for s in _sections(extracted.blocks, extracted.title or "guide")]
    assert ("Guide", "Install") in paths and ("Guide", "Install", "Options") in paths


def test_rst_objects_keep_their_term_and_description_and_conditions_are_not_text(tmp_path):
    """CMake's cmake(1) manual describes each option in a `.. option::` directive: every one was
    dropped; `.. only:: html` read as the paragraph "html"."""
    path = tmp_path / "cmake.1.rst"
    path.write_text(".. only:: html\n\n  .. contents::\n\nOptions\n=======\n\n"
                    ".. option:: -B <path-to-build>\n\n  Path to directory which CMake will use as the root of "
                    "build directory.\n\n.. py:function:: join(a, *p)\n   :noindex:\n\n   Join paths.\n\n"
                    ".. raw:: html\n\n  <b>raw</b>\n\n.. include:: OPTIONS.txt\n\n.. container:: box\n\n  Boxed text.\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("heading", "Options"), ("para", "-B <path-to-build>"),
        ("para", "Path to directory which CMake will use as the root of build directory."),
        ("para", "join(a, *p)"), ("para", "Join paths."), ("para", "Boxed text.")]


def test_rst_simple_tables_read_as_markdown_tables(tmp_path):
    """CMake's install() defaults were quoted as "`TYPE` Argument … ======= `BIN` …"."""
    path = tmp_path / "install.rst"
    path.write_text("Defaults:\n\n===========  =================\n   Type      Default\n===========  =================\n"
                    "``BIN``      ``bin``\n``LIB``      ``lib`` or\n             ``lib64``\n===========  =================\n\n"
                    "=====  =====\nno     header\n=====  =====\n\nAfter.\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("para", "Defaults:"),
        ("para", "| Type | Default |\n|---|---|\n| `BIN` | `bin` |\n| `LIB` | `lib` or `lib64` |"),
        ("para", "| no | header |\n|---|---|"), ("para", "After.")]


def test_rst_a_table_ends_at_its_bottom_border_and_tests_and_grammars_are_code(tmp_path):
    """Found by review: a bottom border with text right after it swallowed the rest of the file;
    doctest and productionlist bodies were quoted as prose."""
    path = tmp_path / "t.rst"
    path.write_text("=====  =====\nA      B\n=====  =====\n1      2\n=====  =====\nText right after.\n\n"
                    "Section\n=======\n\n.. doctest::\n\n   >>> print('hi')\n   hi\n\n.. testsetup:: *\n\n   import os\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("para", "| A | B |\n|---|---|\n| 1 | 2 |"), ("para", "Text right after."), ("heading", "Section"),
        ("code", "```\n>>> print('hi')\nhi\n```")]


def test_rst_a_list_items_wrapped_lines_continue_it(tmp_path):
    """pip's docs: "1. Identify the base requirements. The user supplied arguments are processed" over
    "   here." was read as a definition list: the item a term, "here." its description."""
    path = tmp_path / "pip_install.rst"
    path.write_text("pip install has several stages:\n\n1. Identify the base requirements. The arguments are processed\n"
                    "   here.\n2. Resolve dependencies.\n\n   A second paragraph of the item.\n\n``APPEND``\n  Append.\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("para", "pip install has several stages:"),
        ("para", "1. Identify the base requirements. The arguments are processed\nhere.\n2. Resolve dependencies."),
        ("para", "A second paragraph of the item."), ("para", "`APPEND`"), ("para", "Append.")]


def test_rst_an_object_directive_without_a_body_is_not_text(tmp_path):
    """pip's `.. pip-command-usage:: freeze "python -m pip"` (its content comes from a Sphinx extension)."""
    path = tmp_path / "pip_freeze.rst"
    path.write_text('Usage\n=====\n\n.. pip-command-usage:: freeze "python -m pip"\n\n.. versionadded:: 2.0\n\nText.\n')
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("heading", "Usage"), ("para", "New in version 2.0."), ("para", "Text.")]

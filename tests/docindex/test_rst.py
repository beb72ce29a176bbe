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

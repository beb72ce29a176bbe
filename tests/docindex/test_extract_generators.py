"""Page chrome of two older HTML generators, read as a browser's reader would show the page (stop 58)."""
from __future__ import annotations

from .test_extract import page_texts


def test_linuxdoc_pagination_straight_in_the_body_is_not_text(tmp_path):
    """LinuxDoc-Tools (BIRD's user's and programmer's guides) puts "Next Previous Contents" links straight into <body>,
    above and below every page: each page's first chunk opened with them. A "Next" in a sentence stays."""
    html = ('<HTML><BODY><A HREF="bird-5.html">Next</A> <A HREF="bird-3.html">Previous</A> <A HREF="bird.html#toc4">'
            'Contents</A><HR><H2><A NAME="s4">4.</A> Remote control</H2><P>Use <A HREF="x.html">next</A> hop '
            'settings.<HR><A HREF="bird-5.html">Next</A> <A HREF="bird-3.html">Previous</A> '
            '<A HREF="bird.html#toc4">Contents</A></BODY></HTML>')
    assert page_texts(tmp_path, html) == ["4. Remote control", "Use next hop settings."]


def test_what_a_heading_hides_from_readers_is_not_its_text(tmp_path):
    """makeinfo 7 (FFmpeg's manual) closes every heading with aria-hidden "#" and "TOC" links: every heading path
    read "3.1 alsa TOC". Visible words of a heading stay."""
    html = ('<html><body><h2 class="chapter">3 Input Devices<span class="pull-right"><a class="anchor hidden-xs" '
            'href="#Input-Devices" aria-hidden="true">#</a> <a class="anchor hidden-xs"href="#toc-Input-Devices" '
            'aria-hidden="true">TOC</a></span></h2><p>ALSA input device.</p>'
            '<h3>Table of <a href="#toc">Contents</a> entries</h3><p>Text.</p></body></html>')
    assert page_texts(tmp_path, html) == ["3 Input Devices", "ALSA input device.", "Table of Contents entries",
                                          "Text."]


def test_rdocs_toggle_advice_and_hidden_method_source_are_not_text(tmp_path):
    """RDoc's darkfish (Asciidoctor's Ruby API): "click to toggle source" in every method heading led an answer
    ("convert_paragraph(node) click to toggle source"), and each method's source sits hidden under it."""
    html = ('<html><body><h1>class Html5Converter</h1><div class="method-detail"><div class="method-heading">'
            '<span class="method-name">convert_paragraph</span><span class="method-args">(node)</span>'
            '<span class="method-click-advice">click to toggle source</span></div><div class="method-description">'
            '<div class="method-source-code"><pre>def convert_paragraph node\n  node.content\nend</pre></div>'
            '<p>Converts a paragraph.</p></div></div></body></html>')
    assert page_texts(tmp_path, html) == ["class Html5Converter", "convert_paragraph(node)", "Converts a paragraph."]

from __future__ import annotations

import pytest

from docindex.extract import UnreadableFile, extract

from .pdfgen import write_pdf


def test_markdown_title_is_the_first_h1(tmp_path):
    path = tmp_path / "a.md"
    path.write_text("intro\n\n# Real Title\n\ntext\n")
    extracted = extract(path)
    assert extracted.title == "Real Title"
    assert extracted.metadata["format"] == "markdown"


def test_plain_text_is_paragraphs_without_headings(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("# not a heading in a text file\nline two\n\nsecond paragraph\n")
    extracted = extract(path)
    assert extracted.title is None
    assert [b.kind for b in extracted.blocks] == ["para", "para"]
    assert extracted.blocks[0].text.startswith("# not a heading")


def test_plain_text_titles_underlined_or_overlined_are_headings_and_separators_are_not(tmp_path):
    """lighttpd's performance.txt (no reST directive, so plain text): "lighttpd configuration tuning for
    low-memory systems" over a row of dashes was one paragraph, and its first sentence was quoted with them.
    Checked on 7,238 `.txt` files under /usr/share/doc: 549 change, none loses or gains a word."""
    path = tmp_path / "performance.txt"
    path.write_text("==================\nPerformance Tuning\n==================\n\nPrefer the defaults.\n\n"
                    "low-memory systems\n-----------\n* server.max-worker = 0\n\n"
                    "Name    Value\n-----   -----\na       b\n\n"
                    "Don't feel bad: almost everyone gets it wrong at first.\n" + "-" * 72 + "\n\n"
                    "err |= run(&state);\n----------\n\nTiming guarantees, races, etc.\n" + "-" * 30 + "\n")
    read = extract(path)
    assert read.title == "Performance Tuning"
    assert [(b.kind, b.text, b.level) for b in read.blocks] == [
        ("heading", "Performance Tuning", 1), ("para", "Prefer the defaults.", 0),
        ("heading", "low-memory systems", 2), ("para", "* server.max-worker = 0", 0),
        ("para", "Name    Value\n-----   -----\na       b", 0),                     # a table's rule
        ("para", "Don't feel bad: almost everyone gets it wrong at first.\n" + "-" * 72, 0),   # a separator
        ("para", "err |= run(&state);\n----------", 0),                            # code over a listing's rule
        ("heading", "Timing guarantees, races, etc.", 2)]


def test_html_headings_paragraphs_and_code_are_kept_and_scripts_dropped(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(
        "<html><head><title>Page Title</title><style>p{}</style></head><body>"
        "<h1>Main</h1><p>First <b>bold</b> paragraph.</p><script>alert(1)</script>"
        "<ul><li>item one</li><li>item two</li></ul>"
        "<h2>Example</h2><pre><code>x = 1\ny = 2</code></pre></body></html>")
    extracted = extract(path)
    assert extracted.title == "Page Title"
    summary = [(b.kind, b.level, b.text) for b in extracted.blocks]
    assert summary == [
        ("heading", 1, "Main"), ("para", 0, "First bold paragraph."), ("para", 0, "- item one"),
        ("para", 0, "- item two"), ("heading", 2, "Example"), ("code", 0, "```\nx = 1\ny = 2\n```"),
    ]


def test_pdf_text_comes_with_outline_headings(tmp_path):
    path = write_pdf(tmp_path / "manual.pdf",
                     [["Installation", "Run the installer from the release page."],
                      ["Linux notes", "Use the tarball on Linux hosts."]],
                     outline=[("Installation", 0, 1), ("Linux notes", 1, 2)])
    extracted = extract(path)
    assert extracted.title is None            # no metadata, no larger cover text: the file name, not a chapter
    assert extracted.metadata == {"pages": 2, "format": "pdf"}
    headings = [(b.text, b.level) for b in extracted.blocks if b.kind == "heading"]
    assert headings == [("Installation", 1), ("Linux notes", 2)]
    text = " ".join(b.text for b in extracted.blocks if b.kind == "para")
    assert "release page" in text and "tarball" in text


def test_pdf_without_outline_is_plain_text(tmp_path):
    path = write_pdf(tmp_path / "plain.pdf", [["Just some text on a page."]])
    extracted = extract(path)
    assert not [b for b in extracted.blocks if b.kind == "heading"]
    assert "Just some text" in extracted.blocks[0].text


@pytest.mark.parametrize("name, content, reason", [
    ("broken.pdf", b"%PDF-1.4 this is not really a pdf", "not a readable PDF"),
    ("binary.md", b"\x00\x01\x02binary", "binary content"),
    ("latin1.txt", "caf\xe9".encode("latin-1"), "not UTF-8"),
    ("image.png", b"\x89PNG", "unsupported file type"),
])
def test_unreadable_files_raise_with_a_reason(tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UnreadableFile, match=reason):
        extract(path)


def test_html_heading_permalinks_are_not_text(tmp_path):
    """Sphinx and MkDocs put a "¶" link after every heading and definition term; Sphinx's viewcode
    a "[source]" link after an API entry (Django's docs: "class CharField(max_length=None)(source)")."""
    path = tmp_path / "random.html"
    path.write_text(
        '<html><body><h1>random<a class="headerlink" href="#random" title="Permalink">¶</a></h1><dl>'
        '<dt id="random.choice">random.choice(seq)<a class="reference internal" href="_modules/random.html">'
        '<span class="viewcode-link"><span class="pre">[source]</span></span></a>'
        '<a class="headerlink" href="#random.choice">¶</a></dt>'
        '<dd><p>Return a random element.</p></dd></dl></body></html>')
    summary = [(b.kind, b.text) for b in extract(path).blocks]
    assert summary == [("heading", "random"), ("para", "random.choice(seq)"), ("para", "Return a random element.")]


def test_a_link_to_its_own_section_with_only_a_mark_is_not_text_whatever_its_class(tmp_path):
    """Apache's manual: `<a class="permalink" href="#limitrequestbody">¶</a>` in every heading ("LimitRequestBody
    Directive ¶" in every heading path); a "#" or "§" link the same. A link to a section with words stays."""
    html = ('<html><body><h2><a id="x">LimitRequestBody</a> Directive <a class="permalink" href="#x">¶</a></h2>'
            '<p>See <a href="#y">§</a><a href="#y">the Limits section</a> below.</p>'
            '<h3>Limits<a href="#limits">#</a></h3></body></html>')
    assert page_texts(tmp_path, html) == ["LimitRequestBody Directive", "See the Limits section below.", "Limits"]


def test_texinfo_definition_anchors_and_empty_categories_are_not_text(tmp_path):
    """GNU texinfo 6.8-7 puts a "¶" link (`copiable-anchor`, `copiable-link`) after every definition
    (41 % of Octave's chunks held one) and an empty category before it (": x = csvread (filename)")."""
    html = ('<html><body><h4>14.1.3 Simple File I/O</h4><dl class="def"><dt id="index-csvread">'
            '<span class="category">: </span><span><em><var>x</var> =</em> <strong>csvread</strong> '
            "<em>(<var>filename</var>)</em><a href='#index-csvread' class='copiable-anchor'> &para;</a></span></dt>"
            '<dt id="index-m"><span class="category-def">Method: </span><span><strong>get</strong>'
            '<a class="copiable-link" href="#index-m"> ¶</a></span></dt>'
            '<dd><p>Read the comma-separated-value (CSV) file.</p></dd></dl></body></html>')
    assert page_texts(tmp_path, html) == ["14.1.3 Simple File I/O", "x = csvread (filename)", "Method: get",
                                          "Read the comma-separated-value (CSV) file."]


def test_doxygen_chrome_anchors_line_numbers_and_fragments(tmp_path):
    """Doxygen (SDL2's API docs): the project name on every page, the breadcrumb with "Generated by",
    the "◆" before every member were text; a code fragment (a div.line per line) was a paragraph per
    line, its line numbers glued to the code; a prototype (a cell per token) was quoted as a table,
    "SDL_bool SDL_IntersectFRectAndLine — ( — const SDL_FRect * — rect: …". Pygments' inline line numbers
    (Sphinx) were glued to code too."""
    html = ('<html><body><div id="titlearea"><div id="projectname">SDL 2.0</div></div>'
            '<h2 class="memtitle"><span class="permalink"><a href="#a1">&#9670;&nbsp;</a></span>SDL_GetError()</h2>'
            '<table class="memname"><tr><td class="memname">SDL_bool SDL_HasIntersectionF </td><td>(</td>'
            '<td class="paramtype">const SDL_FRect *&#160;</td><td class="paramname"><em>A</em>, </td></tr>'
            '<tr><td></td><td></td><td class="paramtype">const SDL_FRect *&#160;</td><td class="paramname"><em>B</em>'
            '&#160;</td></tr><tr><td></td><td>)</td><td></td><td></td></tr></table>'
            '<p>Retrieve a message about the last error that occurred.</p><div class="fragment">'
            '<div class="line"><a id="l00001"></a><span class="lineno">    1</span>const char *e = SDL_GetError();</div>'
            '<div class="line"><a id="l00002"></a><span class="lineno">    2</span>SDL_Log("%s", e);</div></div>'
            '<div class="highlight"><pre><span class="linenos">1</span>x = 1</pre></div>'
            '<div id="nav-path" class="navpath"><ul><li class="navelem"><a href="x.html">include</a></li>'
            '<li class="footer">Generated by doxygen 1.9.4</li></ul></div></body></html>')
    assert page_texts(tmp_path, html) == [
        "SDL_GetError()", "SDL_bool SDL_HasIntersectionF (const SDL_FRect * A, const SDL_FRect * B)",
        "Retrieve a message about the last error that occurred.",
        '```\nconst char *e = SDL_GetError();\nSDL_Log("%s", e);\n```', "```\nx = 1\n```"]


def test_texinfo_node_navigation_is_not_text_but_a_javadoc_header_is(tmp_path):
    """texinfo 6.8's div.header ("Next: Packages, Previous: GUI Development [Contents][Index]", in 415 of
    Octave's chunks) is navigation; Javadoc's div.header holds the page's title."""
    nav = ('<div class="header"><p>Next: <a href="Packages.html" accesskey="n" rel="next">Packages</a>, '
           'Previous: <a href="GUI.html" rel="prev">GUI Development</a> &nbsp; [<a href="index.html" '
           'rel="contents">Contents</a>][<a href="Concept-Index.html" rel="index">Index</a>]</p></div>')
    foot = ('<div class="header"><p>Next: <a href="Packages.html">Packages</a>, Up: <a href="Top.html">Top</a> '
            '[<a href="index.html">Contents</a>]</p></div>')
    html = (f'<html><body>{nav}<h2>36 System Utilities</h2><p>This chapter describes the functions.</p>{foot}'
            '</body></html>')
    assert page_texts(tmp_path, html) == ["36 System Utilities", "This chapter describes the functions."]
    javadoc = ('<html><body><div class="header"><h1 class="title">Class Copy</h1></div>'
               '<p>Copies a file.</p></body></html>')
    assert page_texts(tmp_path, javadoc) == ["Class Copy", "Copies a file."]


def test_latex2html_navigation_and_unmade_math_images_are_not_text(tmp_path):
    """LaTeX2HTML's div.navigation ("Next: Macros Up: Set-show Previous: Locale Index" atop each of gnuplot's
    652 pages) is navigation; its "4#4" placeholders stand for math it made no image of ("where <axes> may")."""
    nav = ('<div class="navigation"><a href="node336.html"><img alt="next" src="next.png"></a> <br>'
           '<b> Next:</b> <a href="node336.html">Macros</a> <b> Up:</b> <a href="node263.html">Set-show</a> '
           '<b> Previous:</b> <a href="node334.html">Locale</a> &nbsp; <b><a href="node649.html">Index</a></b>'
           '<br><br></div>')
    html = (f'<html><body>{nav}<h2>Logscale</h2><p>where <span class="MATH">4#4</span>axes<span class="MATH">'
            '5#5</span> may be any combinations of x and y; <span class="MATH">x^2</span> stays.</p></body></html>')
    assert page_texts(tmp_path, html) == ["Logscale", "where axes may be any combinations of x and y; x^2 stays."]
    menu = ('<html><body><div class="navigation"><p>Our projects and how to join them</p></div>'
            '<h2>Tools</h2><p>Text.</p></body></html>')          # another site's div.navigation: kept
    assert page_texts(tmp_path, menu) == ["Our projects and how to join them", "Tools", "Text."]


def test_api_references_boilerplate_is_not_text(tmp_path):
    """Javadoc's inherited-member lists and rustdoc's source links, blanket and auto-trait
    implementations and "Read more" links were the same chunks on every page of a reference."""
    html = ('<html><body><h1>Class Copy</h1><p>Copies a file or resource collection to a new file.</p>'
            '<div class="inherited-list"><h3>Methods inherited from class java.lang.Object</h3>'
            '<code>equals, getClass, hashCode</code></div>'
            '<section class="impl"><span class="rightside"><a class="srclink" href="s.html">source</a></span>'
            '<h3 class="code-header">impl Clone for VecDeque</h3></section>'
            '<p>Returns a copy of the value. <a href="c.html">Read more</a></p>'
            '<h2 id="blanket-implementations">Blanket Implementations</h2><div id="blanket-implementations-list">'
            '<h3>impl&lt;T&gt; Any for T</h3><p>Gets the TypeId of self.</p></div>'
            '<h2 id="synthetic-implementations">Auto Trait Implementations</h2>'
            '<div id="synthetic-implementations-list"><h3>impl Send for VecDeque</h3></div></body></html>')
    assert page_texts(tmp_path, html) == ["Class Copy", "Copies a file or resource collection to a new file.",
                                          "impl Clone for VecDeque", "Returns a copy of the value."]


def test_a_page_that_is_one_numbered_source_file_is_not_a_document(tmp_path):
    """Doxygen's source browser (`*_source.html`: 83 of SDL2's 469 pages, each header again with its
    license) is skipped like Sphinx's _modules/; a page with a long example and prose is read."""
    lines = "".join(f'<div class="line"><span class="lineno">{n}</span>int v{n} = {n};</div>' for n in range(60))
    listing = f'<html><body><p>SDL_error.h</p><div class="fragment">{lines}</div></body></html>'
    path = tmp_path / "_s_d_l__error_8h_source.html"
    path.write_text(listing)
    with pytest.raises(UnreadableFile, match="a source file listed line by line"):
        extract(path)
    prose = "<p>" + "Each value is set once, before the loop starts, and read by the renderer. " * 20 + "</p>"
    assert len(page_texts(tmp_path, listing.replace("<p>SDL_error.h</p>", prose))) == 2


def test_a_manual_written_as_preformatted_text_is_a_document(tmp_path):
    """HAProxy's manual is plain text in `<pre>` blocks (configuration.html, 2.6 MB, all code by tag):
    no line of it is numbered, so it is read, not skipped as a source listing."""
    text = "".join(f"  option http-keep-alive {n}\n    Enable or disable HTTP keep-alive.\n" for n in range(40))
    pages = page_texts(tmp_path, f'<html><body><pre class="text">{text}</pre></body></html>')
    assert pages and "Enable or disable HTTP keep-alive." in pages[0]


@pytest.mark.parametrize("chrome", [
    '<div class="related" role="navigation"><a>previous</a> | <a>next</a></div>',       # Sphinx
    '<div class="sphinxsidebar" role="navigation"><h3>This Page</h3><p>Show Source</p></div>',
    '<div class="footer">© Copyright 2001-2023.</div>',
    '<div class="navheader"><table><tr><td>Prev</td><td>Up</td><td>Home</td><td>Next</td></tr></table></div>',
    # DocBook XSL's per-folder contents: a line of description per parameter, ranked above its pages
    '<div class="toc"><dl><dt><a href="a.html">admon.style</a> — Specifies the CSS style attribute that should be '
    'applied to admonitions and describes how it is used in the output</dt></dl></div>',
    '<details class="changelog"><summary>Changelog</summary></details>',   # Pallets (Werkzeug): a toggle's label
    '<div id="footer"><div id="footer-text">Last updated 2024-05-31</div></div>',    # AsciiDoc
    '<div id="menu-bar" class="menu-bar"><h1 class="menu-title">The Rust Programming Language</h1></div>',  # mdBook
    '<nav><ul><li>Docs</li><li>Blog</li></ul></nav>',
    '<footer><p>Made with a generator</p></footer>',
    '<div role="search"><p>Search this site</p></div>',
    # MkDocs' search and keyboard-shortcut modals ("Documentation search", "Next page n")
    '<div class="modal" role="dialog"><h3>Documentation search</h3><p>Next page</p><p>n</p></div>',
    '<dialog><p>Press / to search</p></dialog>',
    # the PyData theme's prev-next area (pandas), Furo's page links: "previous Table Visualization next …"
    '<div class="prev-next-area"><a class="left-prev" href="style.html" title="previous page"><p>previous</p>'
    '<p>Table Visualization</p></a><a class="right-next" href="w.html" title="next page"><p>next</p><p>Windowing</p></a></div>',
    '<a class="next-page" href="n.html"><div class="context"><span>Next</span></div><div class="title">Usage</div></a>',
    # openstackdocstheme (every OpenStack project): the byline, the licence and "questions?"
    '<div class="row docs-byline"><div class="docs-updated">updated: 2022-09-27 08:34</div></div>',
    '<div class="docs-license"><p>Except where otherwise noted, this document is licensed under Creative Commons '
    'Attribution 3.0 License.</p></div><div class="docs-actions-wrapper"><a href="q">questions?</a></div>',
    # sphinx_celery's banner over every page of Celery's and Kombu's docs
    '<div class="deck"><p>This document describes the current stable version of Celery (5.2). For development docs, '
    '<a href="http://docs.celeryproject.org/en/master/">go here</a>.</p></div>',
])
def test_html_page_chrome_is_not_text(tmp_path, chrome):
    path = tmp_path / "page.html"
    path.write_text(f"<html><body>{chrome}<h1>LOCK</h1><p>LOCK — lock a table.</p>{chrome}</body></html>")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [("heading", "LOCK"), ("para", "LOCK — lock a table.")]


def test_what_lies_outside_a_pages_main_region_is_the_sites(tmp_path, monkeypatch):
    """scikit-learn's "Toggle Menu" and "Please cite us…", Mako's release line, the Book theme's credit: text a site
    puts around every page's <main> (or role="main"), which no generator rule named (html_main.py, stop 56; measured
    and off, html_reader.MAIN_ONLY)."""
    import docindex.html_reader as reader

    monkeypatch.setattr(reader, "MAIN_ONLY", True)
    text = "<p>" + "LOCK takes a table-level lock, waiting if necessary for any conflicting locks. " * 3 + "</p>"
    for main in (f"<main><h1>LOCK</h1>{text}</main>", f'<div role="main"><h1>LOCK</h1>{text}</div>'):
        html = (f"<html><body>Other versions<div><h1>Mako 1.2.4 Documentation</h1><p>Toggle Menu</p></div>"
                f"<div class='wrap'>{main}"
                "<p>Theme by the Executable Book Project</p></div><p>Please cite us if you use the software.</p>"
                "</body></html>")
        assert page_texts(tmp_path, html) == ["LOCK", text[3:-4].strip()]
        monkeypatch.setattr(reader, "MAIN_ONLY", False)             # as shipped: read whole
        assert "Please cite us if you use the software." in page_texts(tmp_path, html)
        monkeypatch.setattr(reader, "MAIN_ONLY", True)


def test_the_main_region_is_kept_alone_only_where_it_is_the_page(tmp_path, monkeypatch):
    """A <main> under half the page's text (a fragment, or one a script fills), or one without the page's only
    <h1> (a theme titling the page above it), leaves the page read whole."""
    import docindex.html_reader as reader

    monkeypatch.setattr(reader, "MAIN_ONLY", True)
    long = "LOCK takes a table-level lock, waiting if necessary for any conflicting locks. " * 3
    small = f"<html><body><main><p>Loading…</p></main><h1>LOCK</h1><p>{long}</p></body></html>"
    assert page_texts(tmp_path, small) == ["Loading…", "LOCK", long.strip()]
    titled = f"<html><body><div class='hero'><h1>LOCK</h1></div><main><p>{long}</p></main></body></html>"
    assert page_texts(tmp_path, titled) == ["LOCK", long.strip()]
    scripted = (f"<html><body><script>{'var menu = 1; ' * 200}</script><p>Toggle Menu</p><main><h1>LOCK</h1>"
                f"<p>{long}</p></main></body></html>")
    assert page_texts(tmp_path, scripted) == ["LOCK", long.strip()]      # a script's text is no text to weigh


def page_texts(tmp_path, html: str, name: str = "page.html") -> list[str]:
    """The texts of the blocks `extract` reads from `html` saved as `name`."""
    path = tmp_path / name
    path.write_text(html)
    return [b.text for b in extract(path).blocks]


def test_a_page_that_is_all_chrome_keeps_its_headings_only(tmp_path):
    """A site map inside a <nav>, or MkDocs Material's 404 page (the whole site's menu), says nothing the
    pages it lists do not: read whole, chrome and all, it was one more page matching every question."""
    html = "<html><body><h1>Site map</h1><nav><ul><li>Install guide</li><li>Upgrade guide</li></ul></nav></body></html>"
    assert page_texts(tmp_path, html, "sitemap.html") == ["Site map"]


def test_a_numpydoc_parameter_and_its_type_are_two_words(tmp_path):
    """numpydoc's `<dt><strong>skipna</strong><span class="classifier">bool, default True</span>` read
    "skipnabool, default True" (pandas' references); CMake's field lists "Default/etc /usr" the same way."""
    html = ('<html><body><dl><dt><strong>skipna</strong><span class="classifier">bool, default True</span></dt>'
            '<dd><p>Exclude NA values.</p></dd><dt>Default<span class="classifier">OFF</span></dt><dd><p>x</p></dd>'
            '<dt>axis<span class="classifier-delimiter">:</span><span class="classifier">int</span></dt></dl></body></html>')
    texts = page_texts(tmp_path, html)
    assert any(t.startswith("skipna : bool, default True") for t in texts), texts
    assert any(t.startswith("Default : OFF") for t in texts) and any(t.startswith("axis:int") for t in texts), texts


def test_headings_labels_and_cells_join_inline_elements_as_written(tmp_path):
    """Joined with a space between every node, DocBook's quotes read "“ Red Eye Removal ”" in GIMP's headings
    and figure titles, a cell's code "path , value", PostgreSQL's "crosstab<em>N</em>(text)" "crosstab N (text)"."""
    html = ('<html><body><h2>crosstab<em>N</em>(text)</h2><p class="title"><strong>Figure 1. <span class="quote">“'
            '<span class="quote">Red Eye Removal</span>”</span> filter</strong></p><table><tr><th>kind</th>'
            '<th>shape</th></tr><tr><td>set</td><td><code>path</code>, <code>value</code></td></tr><tr><td>regex'
            '</td><td>one<br>two</td></tr></table></body></html>')
    assert page_texts(tmp_path, html) == [
        "crosstabN(text)", "**Figure 1. “Red Eye Removal” filter**",
        "| kind | shape |\n|---|---|\n| set | path, value |\n| regex | one two |"]


def test_pagination_links_are_not_text(tmp_path):
    """Read the Docs' theme (MkDocs' and Sphinx's) ends every page with a version bar of two links, "« Previous"
    and "Next »": under the 3 links of a link-dense block, it closed the last chunk of 34 of the cMCP pages."""
    html = ('<html><body><h1>Intro</h1><p>Body text.</p><div class="rst-versions" role="note"><span><span>'
            '<a href="a.html">&laquo; Previous</a></span> <span><a href="b.html">Next &raquo;</a></span></span>'
            '</div><p><a href="c.html">Next steps</a> are here.</p><p>Next, run it.</p></body></html>')
    assert page_texts(tmp_path, html) == ["Intro", "Body text.", "Next steps are here.", "Next, run it."]


def test_a_skip_link_is_not_text(tmp_path):
    """MkDocs Material opens every page with "Skip to content" (a link for screen readers); a link in a
    sentence that happens to jump within the page stays text."""
    html = ('<html><body><a href="#intro" class="md-skip">Skip to content</a><h1>Intro</h1><p>Read on, or '
            '<a href="#examples">jump to the examples</a> below.</p></body></html>')
    assert page_texts(tmp_path, html) == ["Intro", "Read on, or jump to the examples below."]


def test_a_page_of_nothing_but_links_keeps_its_headings_only(tmp_path):
    """A chunked manual's table of contents (Wireshark's index.html) was read whole, chrome and all:
    23 chunks of section titles, among the first 5 pages found for 9 of 17 questions."""
    html = ('<html><body><div class="navheader"><a>Prev</a> <a>Up</a> <a>Next</a></div><h1>Guide</h1><div class="toc">'
            '<dl><dt>1. <a href="a.html">Install the server</a></dt><dt>2. <a href="b.html">Upgrade the server</a>'
            '</dt><dt>3. <a href="c.html">Remove the server</a></dt></dl></div></body></html>')
    assert page_texts(tmp_path, html, "index.html") == ["Guide"]


def test_prose_beside_a_table_of_contents_is_kept(tmp_path):
    """PostgreSQL's part pages hold their introduction and their table of contents in one div, 80 % link
    text: the introduction went with the links, and the page fell back to being read whole."""
    toc = "".join(f'<dt>{i}. <a href="c{i}.html">Chapter number {i} of this part of the manual</a></dt>'
                  for i in range(1, 9))
    intro = "This part describes the use of the SQL language in PostgreSQL, from its general syntax to tuning a database."
    html = (f'<html><body><h1>Part II. The SQL Language</h1><div class="partintro"><p>{intro}</p>'
            f'<div class="toc"><dl>{toc}</dl></div></div></body></html>')
    assert page_texts(tmp_path, html, "sql.html") == ["Part II. The SQL Language", intro]


def test_link_dense_blocks_are_navigation_whatever_their_class(tmp_path):
    """A menu, a breadcrumb trail or an "on this page" list is mostly link text; prose that links
    a few words is not, nor is a block holding a heading or code."""
    path = tmp_path / "page.html"
    path.write_text(
        '<html><body><div id="page-header"><p class="menu"><a>Modules</a> | <a>Directives</a> | <a>FAQ</a></p></div>'
        '<div id="path"><a>Apache</a> &gt; <a>HTTP Server</a> &gt; <a>Documentation</a></div>'
        '<h1>mod_rewrite</h1><p>Rewrites URLs with <a>rules</a>, <a>conditions</a> and <a>maps</a> on the fly.</p>'
        '<div id="quickview"><h3>Topics</h3><ul><li><a>Logging</a></li><li><a>Flags</a></li><li><a>Maps</a></li></ul>'
        '</div><div><pre><a>RewriteRule</a> <a>^/old</a> <a>/new</a></pre></div></body></html>')
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("heading", "mod_rewrite"), ("para", "Rewrites URLs with rules, conditions and maps on the fly."),
        ("heading", "Topics"), ("code", "```\nRewriteRule ^/old /new\n```")]


def test_markdown_comments_and_link_definitions_are_not_text_and_reference_links_read_as_their_text(tmp_path):
    """What a renderer never shows: Node.js's API docs keep version history in comments."""
    path = tmp_path / "addons.md"
    path.write_text(
        "# Addons\n<!--introduced_in=v0.10.0-->\n\n<!-- YAML\nchanges:\n  - version: v14.8.0\n-->\n"
        "The [`require()`][require] function loads <!-- inline --> addons; see [the\nguide][].\n"
        "A pattern `[A-Za-z][A-Za-z0-9]*` is code.\n\n```html\n<!-- kept: code -->\n```\n\n"
        "[require]: modules.md#requireid\n[the guide]: https://example.org/guide\n[^1]: A footnote is text.\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("heading", "Addons"),
        ("para", "The `require()` function loads  addons; see the\nguide.\nA pattern `[A-Za-z][A-Za-z0-9]*` is code."),
        ("code", "```html\n<!-- kept: code -->\n```"),
        ("para", "[^1]: A footnote is text.")]


def test_raw_html_in_markdown_is_read_as_html_and_its_tables_as_markdown_tables(tmp_path):
    """Docker's run reference quoted "</td> </tr> <tr> <td> <span …>" from its restart-policy table."""
    path = tmp_path / "run.md"
    path.write_text(
        "# Run\n\n<p align=\"center\"><img src=\"logo.png\"></p>\n\nPress <kbd>q</kbd> to quit, not `<kbd>`, <name>.\n"
        "Policies:\n<table>\n  <thead><tr><th>Policy</th><th>Result</th></tr></thead>\n  <tbody>\n"
        "    <tr>\n      <td><strong>on-failure</strong></td>\n      <td>\n        Restart on a non-zero exit.\n"
        "      </td>\n    </tr>\n  </tbody>\n</table>\n\n<details>\n<summary>More</summary>\n\n- a list\n\n"
        "</details>\n\n<pre>\nx = 1\n\ny = 2\n</pre>\nafter\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("heading", "Run"),
        ("para", "Press q to quit, not `<kbd>`, <name>.\nPolicies:"),     # inline tags: their text
        ("para", "| Policy | Result |\n|---|---|\n| on-failure | Restart on a non-zero exit. |"),
        ("para", "More"), ("para", "- a list"),
        ("code", "```\nx = 1\n\ny = 2\n```"), ("para", "after")]


def test_a_blockquotes_content_is_markdown_without_its_markers(tmp_path):
    """Docker's "> **Note**" boxes hold fenced examples: "> ```console" opens code, and the example was
    quoted as a sentence. Code opened outside a quote keeps its "> " lines; a quoted "## " is no section."""
    path = tmp_path / "run.md"
    path.write_text("# Run\n\n> **Note**\n>\n> If you set the `--rm` flag, Docker removes\n> the volumes. For example:\n"
                    ">\n> ```console\n> $ docker run --rm busybox\n> ```\n>\n> ## Not a section\n\n"
                    "```sql\n> SELECT 1;\n```\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("heading", "Run"), ("para", "**Note**"),
        ("para", "If you set the `--rm` flag, Docker removes\nthe volumes. For example:"),
        ("code", "```console\n$ docker run --rm busybox\n```"), ("para", "## Not a section"),
        ("code", "```sql\n> SELECT 1;\n```")]


def test_an_html_data_table_reads_as_a_markdown_table_and_a_layout_table_as_before(tmp_path):
    """Node.js's version-history tables were separate paragraphs, quoted as terms ("v12.12.0, Added in:
    v12.12.0: Enable …"); PostgreSQL's function tables hold a signature, its text and an example per
    cell, which the signature-term rule reads: they stay paragraphs."""
    path = tmp_path / "page.html"
    path.write_text(
        "<html><body><h1>cli</h1><table><tr><th>Version</th><th>Changes</th></tr>"
        "<tr><td>v15.11.0</td><td><p>This API is no longer experimental.</p></td></tr></table>"
        "<table><tr><th>Function</th></tr><tr><td><p><code>upper ( text ) → text</code></p>"
        "<p>Converts the string to all upper case.</p></td></tr></table>"
        "<table><tr><td>one row</td><td>only</td></tr></table></body></html>")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("heading", "cli"),
        ("para", "| Version | Changes |\n|---|---|\n| v15.11.0 | This API is no longer experimental. |"),
        ("para", "Function"), ("para", "upper ( text ) → text"), ("para", "Converts the string to all upper case."),
        ("para", "one row"), ("para", "only")]


@pytest.mark.parametrize("markdown, blocks", [
    ("<pre>\nx\n</pre>\n## Next\nBody.", [("code", "```\nx\n```"), ("heading", "Next"), ("para", "Body.")]),
    ("<pre>\n> 1 + 1\n2\n</pre>", [("code", "```\n> 1 + 1\n2\n```")]),             # a REPL's prompts
    ("> ```\n> code\n\nNormal text.\n\n## Heading", [("code", "```\ncode"), ("para", "Normal text."),
                                                  ("heading", "Heading")]),          # the quote ends its fence
    ("Intro line\n> quoted tip\nlazy line", [("para", "Intro line"), ("para", "quoted tip\nlazy line")]),
    ("<table>\n<tr><td>a</td><td>b</td></tr>\n\n<tr><td>c</td><td>d</td></tr>\n</table>\n\nAfter.",
     [("para", "| a | b |\n|---|---|\n| c | d |"), ("para", "After.")]),
    ("<table>\n<tr><td>never closed</td></tr>\n\nText.", [("para", "never closed"), ("para", "Text.")]),
    ("Line one<br>Line two, <code>ls | wc</code>.", [("para", "Line one Line two, ls | wc.")]),
    ("> <details>\n> <summary>Click</summary>\n>\n> Hidden text\n> </details>", [("para", "Click"),
                                                                              ("para", "Hidden text")]),
    ("> <pre>\n> $ ls\n> </pre>\n> Quoted after.\nLazy.", [("code", "```\n$ ls\n```"), ("para", "Quoted after.\nLazy.")]),
    ("> <table><tr><td>a</td><td>b</td></tr>\n>\n> <tr><td>c</td><td>d</td></tr></table>\nafter",
     [("para", "| a | b |\n|---|---|\n| c | d |"), ("para", "after")]),
    ("<table><tr><th>cmd</th><th>does</th></tr><tr><td><code>ls | wc</code></td><td>counts</td></tr></table>",
     [("para", "| cmd | does |\n|---|---|\n| ls \\| wc | counts |")]),
])
def test_markdown_html_blocks_quotes_and_tables_end_where_a_renderer_ends_them(tmp_path, markdown, blocks):
    """Found by review: a `<pre>` block ran on past `</pre>`, a quoted fence swallowed the file,
    blank lines between a table's rows cut it up, `<br>` joined words."""
    path = tmp_path / "a.md"
    path.write_text(markdown)
    assert [(b.kind, b.text) for b in extract(path).blocks] == blocks


def test_an_unclosed_pre_block_is_read_in_linear_time(tmp_path):
    path = tmp_path / "a.md"
    path.write_text("<pre>\n" + "x\n" * 50_000)
    assert extract(path).blocks[0].kind == "code"


def test_html_list_items_read_as_markdown_items_so_a_lead_in_carries_them(tmp_path):
    """Items were bare paragraphs: "The following options exist:" had no list to carry, and Node's
    parameter lists read as terms of the paragraph after them."""
    path = tmp_path / "page.html"
    path.write_text("<html><body><p>The following options exist:</p><ul><li><p>alpha does one thing.</p>"
                    "<p>More on alpha.</p></li><li>beta<ul><li>nested</li></ul></li></ul>"
                    "<ol><li>first step</li><li>second step</li></ol><p>After.</p></body></html>")
    assert [b.text for b in extract(path).blocks] == [
        "The following options exist:", "- alpha does one thing.", "More on alpha.", "- beta", "- nested",
        "1. first step", "2. second step", "After."]


def test_a_docbook_block_title_is_a_bold_line_of_its_own(tmp_path):
    """The Debian Administrator's Handbook's sidebars: the title was a paragraph, quoted as an answer's
    sentence ("TIP Listing a package contents and finding a file's package [1].")."""
    path = tmp_path / "page.html"
    path.write_text('<html><body><p>The command lists files.</p><div class="sidebar"><div class="titlepage"><div>'
                    '<p class="title"><strong><span class="emphasis"><em>TIP</em></span> Listing a package '
                    'contents</strong></p></div></div><div class="para">Similar to apt-file list.</div></div>'
                    '<p class="note">Not a title.</p></body></html>')
    assert [b.text for b in extract(path).blocks] == [
        "The command lists files.", "**TIP Listing a package contents**", "Similar to apt-file list.", "Not a title."]


def test_a_pictures_short_caption_is_a_label_and_defines_no_term(tmp_path):
    """GIMP's manual captions each screenshot: the captions were quoted as sentences, and taken for the term
    the next paragraph defines ("Original image, “Red Eye Removal” applied: The aim of this filter …")."""
    from docindex.quotable import candidates

    path = tmp_path / "page.html"
    path.write_text('<html><body><div class="figure"><p class="title"><strong>Figure 17.41. Example</strong></p>'
                    '<div class="mediaobject"><img src="a.png"/><div class="caption"><p>\n Original image\n</p></div>'
                    '</div><div class="mediaobject"><img src="b.png"/><div class="caption"><p><span class="quote">“'
                    '<span class="quote">Red Eye Removal</span>”</span> applied</p></div></div></div>'
                    '<p>The aim of this filter is to remove red eyes from an image.</p>'
                    '<figure><img src="c.png"/><figcaption>The layer after it has been rotated 30° clockwise'
                    '</figcaption></figure><figure><img src="d.png"/><figcaption>' + "A long caption word " * 7 +
                    '</figcaption></figure><div class="caption"><p>Not a picture\'s caption.</p></div></body></html>')
    blocks = [b.text for b in extract(path).blocks]
    assert blocks[:5] == ["**Figure 17.41. Example**", "**Original image**", "**“Red Eye Removal” applied**",
                          "The aim of this filter is to remove red eyes from an image.",
                          "**The layer after it has been rotated 30° clockwise**"]
    assert blocks[5] == ("A long caption word " * 7).strip()          # over 25 words: read as text
    assert blocks[6] == "Not a picture's caption."
    quoted = [c.text for c in candidates(["\n\n".join(blocks[:5])])]
    assert quoted == ["The aim of this filter is to remove red eyes from an image"]


def test_a_paragraph_that_is_one_bold_run_and_a_rubric_are_labels(tmp_path):
    """pytest's docs set "Run tests by keyword expressions" as <p><strong>…</strong></p> over its command:
    it was read, and quoted, as a sentence. Bold words inside a sentence stay text."""
    path = tmp_path / "page.html"
    path.write_text('<html><body><p>Run tests several ways.</p><p>\n <strong>Run tests by keyword expressions</strong> '
                    '</p><pre>pytest -k "MyClass and not method"</pre><p class="rubric">Footnotes</p>'
                    '<p><strong>Note:</strong> the rest of a sentence.</p><p><b>All</b> <b>of it</b></p>'
                    '</body></html>')
    assert [b.text for b in extract(path).blocks] == [
        "Run tests several ways.", "**Run tests by keyword expressions**",
        '```\npytest -k "MyClass and not method"\n```', "**Footnotes**", "Note: the rest of a sentence.",
        "All of it"]


def test_a_sphinx_field_lists_term_and_one_paragraph_body_are_one_sentence(tmp_path):
    """pytest's exit codes: "Exit code 5:" over "No tests were collected" were two paragraphs, and no
    quote said what exit code 5 means. A body with a list keeps its term as a lead-in line."""
    path = tmp_path / "page.html"
    path.write_text('<html><body><dl class="field-list simple">'
                    '<dt class="field-odd">Exit code 5<span class="colon">:</span></dt>'
                    '<dd class="field-odd"><p>No tests were <em>collected</em></p></dd>'
                    '<dt class="field-even">Parameters<span class="colon">:</span></dt>'
                    '<dd class="field-even"><ul><li><p>name (str) – the name</p></li></ul></dd>'
                    '</dl><dl><dt>A term</dt><dd><p>Its text</p></dd></dl></body></html>')
    assert [b.text for b in extract(path).blocks] == [
        "Exit code 5: No tests were collected.", "Parameters:", "- name (str) – the name", "A term", "Its text"]


@pytest.mark.parametrize("markdown, blocks", [
    ("Options:\n\n    --rm=false: Automatically remove the container\n\n\n    -d: Detached\n\nAfter.",
     [("para", "Options:"), ("code", "```\n--rm=false: Automatically remove the container\n\n\n-d: Detached\n```"),
      ("para", "After.")]),
    ("# Title\n    code after a heading\n", [("heading", "Title"), ("code", "```\ncode after a heading\n```")]),
    ("A paragraph\n    lazily indented line", [("para", "A paragraph\n    lazily indented line")]),
    ("\tprint(1)\n", [("code", "```\nprint(1)\n```")]),
    # a list item's content, a MkDocs admonition's, a footnote's: indented, and not code
    ("Steps:\n- Install it.\n\n    More about installing.\n\nDone.",
     [("para", "Steps:\n- Install it."), ("para", "More about installing."), ("para", "Done.")]),
    ("1. First\n\n   Still first\n\n    also first\n",
     [("para", "1. First"), ("para", "   Still first"), ("para", "also first")]),
    ('!!! note "Heads up"\n    One.\n\n    Two.\n\nAfter.\n\n    now code',
     [("para", "Heads up"), ("para", "One."), ("para", "Two."), ("para", "After."),
      ("code", "```\nnow code\n```")]),
    ("Text[^1].\n\n[^1]: A note.\n\n    More of the note.", [("para", "Text[^1]."), ("para", "[^1]: A note."),
                                                          ("para", "More of the note.")]),
    ("- item\n\n## Next\n\n    code again", [("para", "- item"), ("heading", "Next"), ("code", "```\ncode again\n```")]),
    ("Intro.\n\n    <!-- an HTML example\n\nAfter.", [("para", "Intro."), ("code", "```\n<!-- an HTML example\n```"),
                                                   ("para", "After.")]),
    ("Intro.\n\n    ```\n    fenced inside\n    ```", [("para", "Intro."), ("code", "````\n```\nfenced inside\n```\n````")]),
])
def test_indented_code_is_code_unless_a_list_or_block_holds_it(tmp_path, markdown, blocks):
    """Docker's "    --rm=false: Automatically remove the container when it exits" was quoted as prose."""
    path = tmp_path / "a.md"
    path.write_text(markdown)
    assert [(b.kind, b.text) for b in extract(path).blocks] == blocks


def test_mdx_has_no_indented_code(tmp_path):
    path = tmp_path / "a.mdx"
    path.write_text("Intro.\n\n    Indented text in MDX is text.\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("para", "Intro."), ("para", "Indented text in MDX is text.")]


def test_a_heading_inside_a_list_item_keeps_the_list_open(tmp_path):
    path = tmp_path / "a.md"
    path.write_text("- item\n\n  ## Heading in item\n\n    text of item\n")
    assert [(b.kind, b.text) for b in extract(path).blocks][-1] == ("para", "text of item")


def test_myst_roles_read_as_their_text_and_text_directives_as_markdown(tmp_path):
    """pip's docs (MyST): "{file}`requirements.txt`" was quoted as written, and its notes and version
    notes were code blocks."""
    path = tmp_path / "a.md"
    path.write_text("Use {ref}`pip hash` and {file}`requirements.txt`, not `{text}`.\n\n```{note}\n:class: tip\nA **note**.\n```\n\n"
                    "```{versionadded} 21.2\nThe flag.\n```\n\n```{toctree}\nfoo\n```\n\n```{pip-cli}\n$ pip install x\n```\n\n"
                    "```{eval-rst}\n.. note::\n   From reST.\n```\n\n````{tab} Unix\n```console\n$ ls\n```\n````\n")
    assert [(b.kind, b.text) for b in extract(path).blocks] == [
        ("para", "Use `pip hash` and `requirements.txt`, not `{text}`."), ("para", "A **note**."), ("para", "New in version 21.2."),
        ("para", "The flag."), ("code", "```{pip-cli}\n$ pip install x\n```"), ("para", "From reST."),
        ("code", "```console\n$ ls\n```")]


def test_deeply_nested_myst_directives_are_read_without_recursing_without_end(tmp_path):
    path = tmp_path / "a.md"
    path.write_text("````{note}\n" * 3000 + "Deep text.\n")
    assert extract(path).blocks        # read (the innermost levels as code), not UnreadableFile


def test_a_txt_file_that_is_restructuredtext_is_read_as_rest(tmp_path):
    """lighttpd's module documents are `.txt` files in reST: read as plain text, their adorned titles and
    `.. contents::` were paragraphs and no chunk had a heading path; their bibliographic fields (":Author:",
    ":Date: $Date: …$") are not text either. Plain text with an underlined title and no directive stays
    plain text (its underlined title a heading since stop 43)."""
    rest = ("======\nAccess\n======\n\n:Author: Allan Wind\n:Date: $Date: 2005/01/30 11:34:32 $\n\n"
            ".. contents:: Table of Contents\n\nDescription\n===========\n\n"
            "The access module is used to deny access to files.\n")
    (tmp_path / "access.txt").write_text(rest)
    read = extract(tmp_path / "access.txt")
    assert read.title == "Access"
    assert [(b.kind, b.text) for b in read.blocks] == [("heading", "Access"), ("heading", "Description"),
                                                       ("para", "The access module is used to deny access to files.")]
    plain = "Notes\n=====\n\nAsk Allan first.\n\nKeep the spare keys in the drawer.\n"
    (tmp_path / "notes.txt").write_text(plain)
    assert [b.kind for b in extract(tmp_path / "notes.txt").blocks] == ["heading", "para", "para"]


def test_mkdocs_and_docusaurus_admonition_markers_are_read_as_their_rendered_title(tmp_path):
    """`!!! warning "Data loss"` and `:::tip Title` … `:::` are how MkDocs and Docusaurus sources write a
    callout; read as text, the marker led the body's first sentence ('!!! warning "Data loss" Dropping …')
    and a bare ":::" was a paragraph. Now the title (or the kind) is a paragraph and the body follows."""
    source = ('!!! warning "Data loss"\n    Dropping a collection deletes its chunks.\n\n'
              '    Take a backup first.\n\n!!! tip\n    A tip.\n\n:::note Before you start\n\nInstall it.\n\n:::\n\n'
              ':::caution\nMind the gap.\n:::\n')
    (tmp_path / "page.md").write_text(source)
    assert [b.text for b in extract(tmp_path / "page.md").blocks] == [
        "Data loss", "Dropping a collection deletes its chunks.", "Take a backup first.", "Tip", "A tip.",
        "Before you start", "Install it.", "Caution", "Mind the gap."]


def test_a_page_in_the_charset_its_meta_declares_is_read_and_an_undeclared_one_is_refused(tmp_path):
    """Older generators wrote ISO-8859-1 pages and said so (`<meta charset="iso-8859-1">`, or http-equiv
    Content-Type): they were refused whole as "not UTF-8 text". Undeclared, the bytes are not guessed."""
    body = "<p>Caf\xe9 au lait: the r\xe9sum\xe9 of the options.</p>"
    declared = f'<html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1"></head><body>{body}'
    (tmp_path / "old.html").write_bytes(declared.encode("latin-1"))
    assert [b.text for b in extract(tmp_path / "old.html").blocks] == ["Café au lait: the résumé of the options."]
    (tmp_path / "bare.html").write_bytes(f"<html><body>{body}".encode("latin-1"))
    with pytest.raises(UnreadableFile, match="not UTF-8"):
        extract(tmp_path / "bare.html")
    (tmp_path / "odd.html").write_bytes(f'<meta charset="no-such-codec">{body}'.encode("latin-1"))
    with pytest.raises(UnreadableFile, match="not UTF-8"):
        extract(tmp_path / "odd.html")


def test_a_page_declaring_utf8_with_stray_latin1_bytes_is_read_not_refused(tmp_path):
    """Bacula's manual declares UTF-8 and puts a Latin-1 no-break space (0xA0) in the navigation of 48 of its
    114 pages: each page was refused whole as "not UTF-8 text". A browser shows it; so do we, each stray byte
    read as Windows-1252, the UTF-8 around it as UTF-8."""
    page = ('<html><head><meta content="text/html; charset=utf-8" http-equiv="content-type"></head><body>'
            "<p>Prune the catalog \u2014 nightly.</p><p>Caf</p></body>").encode().replace(b"Caf", b"Caf\xe9\xa0au lait")
    (tmp_path / "bacula.html").write_bytes(page)
    assert [b.text for b in extract(tmp_path / "bacula.html").blocks] == ["Prune the catalog \u2014 nightly.",
                                                                         "Caf\u00e9 au lait"]


def test_a_docbook_admonition_drawn_as_a_table_reads_as_its_label_and_text(tmp_path):
    """DocBook XSL with admonition graphics draws each note as a table (the icon, "Note", then the text): it
    was read as a data table ("|  | Note |"), and quoted "Note: For FAT …; Note; Microsoft …". Now a label
    and a paragraph, as PostgreSQL's admonitions without the icon read."""
    page = ('<html><body><p>Split the archive.</p><div class="note"><table border="0" summary="Note"><tr>'
            '<td rowspan="2"><img alt="[Note]" src="note.png"/></td><th align="left">Note</th></tr><tr><td>'
            "<p>For FAT filesystems the maximum file size is 4GiB - 1 byte.</p></td></tr></table></div></body></html>")
    (tmp_path / "ch10.html").write_text(page)
    assert [(b.kind, b.text) for b in extract(tmp_path / "ch10.html").blocks] == [
        ("para", "Split the archive."), ("para", "**Note**"),
        ("para", "For FAT filesystems the maximum file size is 4GiB - 1 byte.")]


def test_script_driven_widgets_are_not_text(tmp_path):
    """LibreOffice's help: a banner in a body-level <header>, a contents tree and a search box in <aside>s that
    scripts fill, and each menu path once per platform, hidden for a script to show one ("PreferencesTools")."""
    html = ('<html><body><header id="TopLeftHeader"><a><p>LibreOffice 7.4 Help</p></a><button>Module</button></header>'
            '<aside class="rightside"><input type="checkbox"><label>Contents</label></aside>'
            '<aside class="leftside"><div>Index</div><input type="search"></aside>'
            '<h1>19xx/20xx Years</h1><p>Under <span class="switchinline"><span hidden="true" class="MAC">'
            'LibreOffice - Preferences</span><span hidden="true" id="default1">Tools - Options</span></span>'
            ' - General you can define the century.</p><aside class="footnote"><p>[1] A footnote stays.</p></aside>'
            '<div class="relatedtopics"><p>Related Topics</p><p><a href="d.html">Calculating With Dates</a></p></div>'
            '</body></html>')
    assert page_texts(tmp_path, html) == ["19xx/20xx Years", "Under Tools - Options - General you can define the century.",
                                          "[1] A footnote stays."]


def test_an_article_header_with_its_title_is_kept(tmp_path):
    html = '<html><body><header><h1>Install</h1><p>How to install it.</p></header><p>Run make.</p></body></html>'
    assert page_texts(tmp_path, html) == ["Install", "How to install it.", "Run make."]


def test_a_layout_tables_head_row_is_a_label_not_a_term(tmp_path):
    """LibreOffice's tables hold paragraphs in their cells, so they read cell by cell; their head cells read
    as lines and were quoted as the first row's term: "Wildcard, Description, ? (question mark): Matches …"."""
    html = ('<html><body><table><tr><th><p>Wildcard</p></th><th><p>Description</p></th></tr>'
            '<tr><td><p>? (question mark)</p></td><td><p>Matches any single character.</p><p>Not zero.</p></td></tr>'
            '</table></body></html>')
    assert page_texts(tmp_path, html) == ["**Wildcard — Description**", "? (question mark)",
                                          "Matches any single character.", "Not zero."]


def test_a_session_split_over_code_blocks_is_one(tmp_path):
    """Requests' quickstart splits one doctest over two <pre>s: the lead-in "… pass it directly using the json
    parameter:" carried ">>> payload = …" without ">>> r = requests.post(url, json=payload)"."""
    html = ('<html><body><p>Pass it with the json parameter:</p><div><pre>&gt;&gt;&gt; payload = {}</pre></div>'
            '<div><pre>&gt;&gt;&gt; r = post(url, json=payload)</pre></div><p>Done.</p><pre>&lt;echo/&gt;</pre>'
            '<pre>&lt;echo message="x"/&gt;</pre></body></html>')
    assert page_texts(tmp_path, html) == ["Pass it with the json parameter:",
                                          "```\n>>> payload = {}\n\n>>> r = post(url, json=payload)\n```",
                                          "Done.", "```\n<echo/>\n```", '```\n<echo message="x"/>\n```']

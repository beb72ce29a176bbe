"""docindex: a hybrid (dense + BM25) document index in one SQLite file.

    discover.py    which files an ingest reads: links kept inside the paths, regular files only
    bounds.py      per-file bounds: size checked before reading, non-blocking reads, block lengths
    blocks.py      Block / Extracted: what every reader produces
    extract.py     files → blocks (headings, paragraphs, code): the readers by suffix, plain text
    markdown_reader.py  Markdown: fences, blockquotes, raw HTML blocks, comments and link definitions
    html_reader.py  HTML: page chrome dropped, data tables as Markdown tables; pdf.py: PDF
    page_kinds.py  HTML pages that are no document: redirects, numbered source listings
    chunking.py    blocks → chunks: heading paths, token-sized pieces with overlap
    slugs.py       GitHub's heading anchors (chunk anchors, citation links)
    embedder.py    the Embedder interface and MiniLM on ONNX Runtime (quantize.py: cached int8 copy)
    minilm.py      the default embedder: the re-quantized MiniLM when it passes quantize.py's check
    static_vectors.py  MiniLM's static token vectors (the extractive engine's fast sentence ranking)
    textsearch.py  FTS5 text: jieba for CJK, stopwords, quoted MATCH expressions
    store.py       the SQLite schema, opening with checks, ingest's writes, dropping a collection
    ingest.py      paths → one transaction (unchanged / changed / removed by SHA-256)
    index.py       Index: search (RRF of dense + BM25), browsing, reload on a new version
    browse.py      the SQL behind browsing: collections, documents, chunk listings, content hashes
    cli.py         `docindex ingest | search | stats | drop | serve-mcp`
    mcp/, fetch_docs.py           the stdio MCP server (docindex/mcp/__init__.py) and its file tree export
"""

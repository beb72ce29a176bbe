"""The baseline: SQLite FTS5 BM25 over whole documents, no chunking, no embeddings.

One row per document: its title and all its text (docindex's own HTML
extraction, blocks joined by newlines) in one FTS5 column, tokenized like
docindex's chunks (`store.FTS_TOKENIZE`: porter unicode61 remove_diacritics 2).
A question becomes docindex's own query terms (`textsearch.query_terms`:
lower-cased, stopwords dropped) OR-ed as quoted literals, ranked by FTS5's
bm25(). Built once into var/oos/<corpus>.bm25.db and reused while the corpus
lock, the tokenizer and the extractor's source are unchanged.
"""
from __future__ import annotations

import hashlib
import inspect
import sqlite3
from pathlib import Path

from .corpus import Corpus, read_lock

SCHEMA_KEY = "bm25-whole-doc-v1"


def _key(corpus: Corpus) -> str:
    from docindex import extract, store

    digest = hashlib.sha256(SCHEMA_KEY.encode())
    digest.update(repr(sorted(read_lock(corpus)["files"].items())).encode())
    digest.update(store.FTS_TOKENIZE.encode())
    digest.update(inspect.getsource(extract).encode())
    return digest.hexdigest()


def document_text(path: Path) -> str:
    from docindex.extract import extract

    extracted = extract(path)
    return "\n".join([extracted.title or path.stem, *(block.text for block in extracted.blocks)])


class WholeDocumentBM25:
    """Whole-document BM25 over one corpus; `search` returns sources, best first."""

    def __init__(self, corpus: Corpus, *, rebuild: bool = False) -> None:
        self.path = corpus.db.with_suffix(".bm25.db")
        key = _key(corpus)
        self.conn = self._open(corpus, key, rebuild)

    def _open(self, corpus: Corpus, key: str, rebuild: bool) -> sqlite3.Connection:
        from docindex.store import FTS_TOKENIZE

        if self.path.exists() and not rebuild:
            conn = sqlite3.connect(self.path)
            row = conn.execute("SELECT value FROM meta WHERE key = 'key'").fetchone()
            if row and row[0] == key:
                return conn
            conn.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        conn = sqlite3.connect(self.path)
        with conn:
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
            conn.execute(f"CREATE VIRTUAL TABLE docs USING fts5(source UNINDEXED, body, tokenize = '{FTS_TOKENIZE}')")
            conn.executemany("INSERT INTO docs(source, body) VALUES (?, ?)",
                             ((source, document_text(corpus.root / source)) for source in read_lock(corpus)["files"]))
            conn.execute("INSERT INTO meta VALUES ('key', ?)", (key,))
        return conn

    def search(self, question: str, k: int = 10) -> list[str]:
        from docindex.textsearch import match_expression, query_terms

        terms = query_terms(question)[:64]       # docindex's MAX_QUERY_TERMS
        if not terms:
            return []
        rows = self.conn.execute("SELECT source FROM docs WHERE docs MATCH ? ORDER BY bm25(docs), rowid LIMIT ?",
                                 (match_expression(terms), k)).fetchall()
        return [source for (source,) in rows]

    def documents(self) -> int:
        return self.conn.execute("SELECT count(*) FROM docs").fetchone()[0]

    def close(self) -> None:
        self.conn.close()

"""What the Gate could see, per question: the evidence gate_evidence.py scores rules on.

For each question it searches as the service does (the shipped ranking) but
keeps the first `GATE_K` passages, not only the 4 the prompt gets, and for
each passage records cosine, coverage (idf-weighted share of the question's
words in it, docindex/lexical.py), chunk BM25, fusion and which of the
question's tokens it holds (with their idf), so that a rule over the union of
the first n passages can be scored without searching again; plus the best
whole-document BM25 among the passages' documents (docindex/doclexical.py;
the shipped ranking does not compute it, so a hit's `doc_bm25` is 0).

Features are cached per index version and question in var/gate/<target>.json:
the 11-15k chunk searches run once; rule sweeps then take seconds.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from docindex.index import MAX_QUERY_TERMS, Index
from docindex.lexical import IDF_FLOOR
from docindex.textsearch import query_terms

GATE_K = 10          # passages kept per question (the service gives the Gate min(k, 4))
CACHE_VERSION = 1


def question_features(index: Index, question: str, collection: str | None) -> dict:
    """One question's evidence: per passage scores and held tokens, the tokens' idf."""
    hits = index.search(question, GATE_K, collection)
    with index._lock:       # docindex internals, read-only: the tokens and postings coverage used
        snapshot = index._snapshot
        phrases = index._tokenizer.tokens(index._conn, query_terms(question)[:MAX_QUERY_TERMS])
        tokens = list(dict.fromkeys(t for phrase in phrases for t in phrase))
        rows = snapshot.rows_of(np.array([h.chunk_id for h in hits], dtype=np.int64))
        idf, held = [], []
        for token in tokens:
            posting_rows, _ = snapshot.lexical.postings(token)
            n = len(posting_rows)
            value = math.log((snapshot.lexical.n_docs - n + 0.5) / (n + 0.5))
            idf.append(value if value > 0 else IDF_FLOOR)
            at = np.clip(np.searchsorted(posting_rows, rows), 0, max(n - 1, 0))
            held.append((posting_rows[at] == rows).tolist() if n else [False] * len(rows))
        start, end = snapshot.slices.get(collection, (0, 0)) if collection else (0, len(snapshot.ids))
        docs, values = snapshot.document_postings().rank([(t,) for t in tokens], start, end, 50)
    doc_bm25 = dict(zip(docs.tolist(), values.tolist()))
    passages = [{"cosine": h.cosine, "coverage": h.coverage, "bm25": h.bm25, "fusion": h.fusion,
                 "doc_bm25": doc_bm25.get(h.doc_id, 0.0), "doc_id": h.doc_id,
                 "held": [int(held[t][i]) for t in range(len(tokens))]} for i, h in enumerate(hits)]
    for p in passages:      # the recomputed coverage must be docindex's own
        own = sum(w for w, h in zip(idf, p["held"]) if h) / sum(idf) if idf else 0.0
        assert abs(own - p["coverage"]) < 1e-6, (question, own, p["coverage"])
    return {"tokens": tokens, "idf": idf, "passages": passages,
            "best_doc_bm25": float(values[0]) if len(values) else 0.0}


def cached_features(db: Path, collection: str | None, questions: dict[str, list[tuple[str, str]]],
                    cache: Path) -> dict[str, list[dict]]:
    """kind → [{id, question, **features}] for every question, searching only those not cached."""
    with Index(db) as index:
        key = f"v{CACHE_VERSION} {db.resolve()} {index.version} {collection}"
        stored = json.loads(cache.read_text()) if cache.exists() else {}
        known = stored.get("features", {}) if stored.get("key") == key else {}
        out: dict[str, list[dict]] = {}
        for kind, items in questions.items():
            out[kind] = []
            for qid, question in items:
                if question not in known:
                    known[question] = question_features(index, question, collection)
                out[kind].append({"id": qid, "question": question, **known[question]})
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"key": key, "features": known}) + "\n")
    return out

"""BM25 top-k from the heads of impact-ordered postings (docindex/lexical_topk.py) equals the full walk.

On randomized postings (few distinct lengths and term frequencies, so equal
scores are common and the tie order by chunk id matters) the early-stopping
path must return exactly the full walk's rows and scores, for any window,
limit, repeated or unknown tokens and FTS5 phrases; both must equal the
plain reference (a scatter per list, as lexical.py scored before). The
search files carry the order, and a search through them equals the exact
reference index.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from docindex import ann, ann_sidecar, lexical, lexical_topk
from docindex.index import Index
from docindex.ingest import ingest

from .conftest import write_files
from .fakes import HashEmbedder

NEVER = 10**12      # early_stop_min: always walk
ALWAYS = 0          # early_stop_min: read the heads whenever a threshold is found


def random_postings(seed: int, n_rows: int = 4000, n_terms: int = 40) -> lexical.Lexical:
    rng = np.random.default_rng(seed)
    df = np.maximum(1, (n_rows * 0.6 / (1 + np.arange(n_terms)) ** 0.9).astype(int))   # Zipf-like
    rows = [np.sort(rng.choice(n_rows, size=d, replace=False)) for d in df]
    offsets = np.r_[0, np.cumsum([len(r) for r in rows])].astype(np.int64)
    tf = rng.choice([1.0, 1.0, 1.0, 2.0, 3.0, 7.0], size=int(offsets[-1])).astype(np.float32)
    lengths = rng.choice([20.0, 40.0, 40.0, 90.0], size=n_rows)
    norm = lexical.K1 * (1 - lexical.B + lexical.B * lengths / lengths.mean())
    chunk_ids = rng.permutation(n_rows * 3)[:n_rows].astype(np.int64)
    lex = lexical.Lexical({f"t{i}": i for i in range(n_terms)}, offsets, np.concatenate(rows).astype(np.int32),
                          tf, norm, n_rows + 17, chunk_ids)
    return dataclasses.replace(lex, by_impact=lexical_topk.impact_order(lex))


def reference(lex: lexical.Lexical, phrases, start: int, end: int, limit: int, phrase_scores):
    """lexical.py's full walk before the heads: one scatter-add per list, then the same selection."""
    acc = np.zeros(len(lex.norm), dtype=np.float64)
    for i, tokens in enumerate(phrases):
        if not tokens:
            continue
        if len(tokens) > 1:
            rows, values = phrase_scores(i)
            acc[rows] += values
            continue
        rows, tf = lex.postings(tokens[0])
        if len(rows):
            tf = tf.astype(np.float64)
            acc[rows] += lexical_topk.idf(lex.n_docs, len(rows)) * tf * (lexical.K1 + 1) / (tf + lex.norm[rows])
    return lexical.select_top(np.arange(start, end), acc[start:end], lex.chunk_ids[start:end], limit)


def test_the_heads_give_exactly_the_full_walks_top_k(monkeypatch) -> None:
    monkeypatch.setattr(lexical_topk, "WALK_SHARE", 1.0)     # never give up on the heads
    used = []
    real = lexical_topk.top_rows
    monkeypatch.setattr(lexical_topk, "top_rows", lambda *a: used.append(real(*a)) or used[-1])
    checked = 0
    for seed in range(6):
        lex = random_postings(seed)
        stored = dataclasses.replace(lex, impacts=lexical_topk.posting_impacts(lex))
        rng = np.random.default_rng(100 + seed)
        n = len(lex.norm)
        phrase_rows = np.sort(rng.choice(n, size=60, replace=False))
        phrase_values = rng.choice([3.5, 6.25, 9.0], size=60)
        for _ in range(40):
            tokens = [f"t{t}" for t in rng.integers(0, 44, size=rng.integers(1, 7))]     # t40+: unknown
            phrases: list[tuple[str, ...]] = [(t,) for t in tokens]
            if rng.random() < 0.3:
                phrases.insert(int(rng.integers(0, len(phrases) + 1)), ("multi", "token"))
            if rng.random() < 0.1:
                phrases.append(())
            start, end = (0, n) if rng.random() < 0.6 else sorted(rng.choice(n + 1, size=2, replace=False))
            limit = int(rng.choice([1, 5, 50, 200]))

            def phrase_scores(i, rows=phrase_rows, values=phrase_values, phrases=phrases):
                assert len(phrases[i]) > 1
                return rows, values

            want = reference(lex, phrases, start, end, limit, phrase_scores)
            for least in (NEVER, ALWAYS):
                for postings in (lex, stored):      # impacts computed per query, or read as the search files hold them
                    got = postings.scores(phrases, start, end, limit, phrase_scores, early_stop_min=least)
                    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), (seed, phrases, least)
            checked += 1
    assert checked == 240
    assert sum(found is not None for found in used) > len(used) // 2      # the heads did the work, mostly


def test_the_order_is_by_impact_within_each_term() -> None:
    lex = random_postings(7)
    for t in range(len(lex.offsets) - 1):
        a, b = lex.offsets[t], lex.offsets[t + 1]
        listed = lexical_topk.token_list(lex, f"t{t}", 0, len(lex.norm))
        assert listed is not None
        impacts = listed.impacts(np.asarray(lex.by_impact[a:b]))
        assert np.all(np.diff(impacts) <= 0) and sorted(lex.by_impact[a:b]) == list(range(b - a))


def test_without_an_order_the_lists_are_walked() -> None:
    lex = dataclasses.replace(random_postings(3), by_impact=None)
    phrases = [("t0",), ("t1",), ("t5",)]
    got = lex.scores(phrases, 0, len(lex.norm), 10, lambda i: (None, None), early_stop_min=ALWAYS)
    want = reference(lex, phrases, 0, len(lex.norm), 10, None)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


TOPICS = ["replica", "autoscaling", "ingress", "gateway", "checkpoint", "tokenizer", "embedding", "shard"]


def test_search_through_the_search_files_equals_the_exact_index(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, "20")
    monkeypatch.setattr(lexical, "EARLY_STOP_MIN_POSTINGS", 0)
    monkeypatch.setattr(lexical_topk, "WALK_SHARE", 1.0)
    rng = np.random.default_rng(5)
    docs = {f"doc{f:02d}.md": f"# Document {f}\n\n" + "\n".join(
        f"## Part {s}\n\nSection {f}-{s} is about {' '.join(rng.choice(TOPICS, size=10))}.\n" for s in range(4))
        for f in range(20)}
    db = tmp_path / "index.db"
    embedder = HashEmbedder()
    ingest([write_files(tmp_path / "docs", docs)], db, "docs", embedder=embedder)
    with Index(db, embedder=embedder) as fast, Index(db, embedder=embedder, exact=True) as exact:
        postings = fast._snapshot.lexical
        assert isinstance(postings.by_impact, np.memmap) and exact._snapshot.lexical.by_impact is None
        assert np.array_equal(postings.by_impact, lexical_topk.impact_order(exact._snapshot.lexical))
        assert isinstance(postings.impacts, np.memmap) and exact._snapshot.lexical.impacts is None
        assert np.array_equal(postings.impacts, lexical_topk.posting_impacts(exact._snapshot.lexical))
        for query in ["replica autoscaling", "shard gateway checkpoint", "tokenizer", "how does ingress scale"]:
            for k in (1, 5, 20):
                assert [(h.chunk_id, h.bm25) for h in fast.search(query, k=k, mode="bm25")] == \
                    [(h.chunk_id, h.bm25) for h in exact.search(query, k=k, mode="bm25")], (query, k)


@pytest.mark.parametrize("damage", ["missing", "wrong length", "impacts missing", "impacts of a wrong length"])
def test_search_files_without_a_usable_order(tmp_path, monkeypatch, damage) -> None:
    """Files written before the order (or the impacts, stop 50) existed are still used (whole lists walked,
    impacts computed per query); a wrong one is refused."""
    monkeypatch.setenv(ann.MIN_CHUNKS_ENV, "20")
    docs = {f"d{f}.md": f"# D{f}\n\n" + " ".join(TOPICS[f % 8:] + TOPICS[: f % 8]) * 3 for f in range(30)}
    db = tmp_path / "index.db"
    embedder = HashEmbedder()
    ingest([write_files(tmp_path / "docs", docs)], db, "docs", embedder=embedder)
    arrays = next(ann_sidecar.folder(db).glob("*.arrays"))
    name = "impacts" if damage.startswith("impacts") else "by_impact"
    if damage.endswith("missing"):
        (arrays / f"{name}.npy").unlink()
    else:
        np.save(arrays / f"{name}.npy", np.zeros(3, dtype=np.int32 if name == "by_impact" else np.float64))
    with Index(db, embedder=embedder) as fast, Index(db, embedder=embedder, exact=True) as exact:
        lex = fast._snapshot.lexical
        assert getattr(lex, name) is None
        assert bool(fast._snapshot.anns) == damage.endswith("missing")   # a wrong array: no search files at all
        got = [(h.chunk_id, h.bm25) for h in fast.search("replica shard", k=5, mode="bm25")]
        assert got == [(h.chunk_id, h.bm25) for h in exact.search("replica shard", k=5, mode="bm25")]

"""Tune the extractive engine's few knobs offline, on half of the dev cases.

The 66 dev cases are split by a hash of their id into a `tune` half (used
here to pick `min_score`, `cosine_weight`, `keep_ratio` and `rank_bonus`) and a `check` half (only
reported, to see that what was picked holds on cases it was not picked on).
Retrieval is the index's own search (k = the prompt's 4 sources), the
answer is `ExtractiveEngine.choose` exactly as served; no service needed.

    python -m evals.extractive_tune --db var/eval.db            # grid on the tune half, then both halves
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
from collections.abc import Sequence

from deployments.engines.extractive import ExtractiveEngine
from deployments.passage import Passage
from deployments.prompt import PromptLimits, build_prompt
from evals.cases import Case, load_cases
from evals.metrics import fact_present

K = 4


def half(case: Case) -> str:
    return "tune" if int(hashlib.sha256(case.id.encode()).hexdigest(), 16) % 2 == 0 else "check"


def passages_for(index, case: Case, collection: str, quotes: bool = False, *, k: int = K,
                 clip: int = 900, ranking=None) -> list[Passage]:
    """The case's passages as the Generator gets them (`k` sources of at most `clip`
    characters, as served); `quotes`: with the index's stored quote vectors, as the served
    Retriever attaches them (deployments/retriever.py)."""
    hits = index.search(case.question, k, collection, ranking=ranking)
    stored = index.quote_vectors([h.chunk_id for h in hits]).blobs if quotes else {}
    used = build_prompt(case.question, [Passage(h.source, h.text, h.cosine, h.bm25, h.fusion, h.anchor, h.title,
                                                chunk_id=h.chunk_id, quote_vectors=stored.get(h.chunk_id))
                                        for h in hits], PromptLimits(k, clip)).passages
    return list(used)


def score(engine: ExtractiveEngine, cases: Sequence[Case], contexts: dict[str, list[Passage]]) -> dict:
    facts = found = answerable = refused_ok = refused_wrong = unanswerable = sentences = 0
    for case in cases:
        chosen = engine.choose(case.question, contexts[case.id], 256)
        answer = " ".join(engine.render(chosen))
        if case.kind in ("factual", "two_source"):
            answerable += 1
            refused_wrong += not chosen
            sentences += len(chosen)
            for fact in case.key_facts:
                facts += 1
                found += fact_present(answer, fact)
        else:
            unanswerable += 1
            refused_ok += not chosen
    return {"key_fact_recall": round(found / max(facts, 1), 3), "wrong_refusals": refused_wrong,
            "answerable": answerable, "correct_refusals": refused_ok, "unanswerable": unanswerable,
            "mean_sentences": round(sentences / max(answerable - refused_wrong, 1), 2)}


class Memo:
    """The embedder with a cache: the grid re-scores the same sentences."""

    def __init__(self, embedder) -> None:
        self.embedder, self.cache = embedder, {}

    def embed(self, texts):
        import numpy as np

        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            self.cache.update(zip(missing, self.embedder.embed(missing)))
        return np.stack([self.cache[t] for t in texts])


def ready(engine: ExtractiveEngine, embedder: Memo) -> ExtractiveEngine:
    """`engine` started as `start()` would, but on the shared cached MiniLM
    (and the static token table when its embedder is `static`)."""
    engine._embedder, engine._started = embedder, True
    if engine._embedder_name == "static":
        from docindex.static_vectors import static_embedder

        engine._static = static_embedder()
    elif engine._embedder_name == "none":
        engine._embedder, engine.cosine_weight = None, 0.0
    return engine


def dev_contexts(db: str, collection: str, quotes: bool = False) -> tuple[list[Case], dict[str, list[Passage]]]:
    """The 66 dev cases and each one's passages, retrieved as served (k = 4)."""
    from docindex.index import Index

    index = Index(db)
    cases = load_cases()
    return cases, {c.id: passages_for(index, c, collection, quotes) for c in cases}


def dev_args(doc: str | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="var/eval.db")
    parser.add_argument("--collection", default="cmcp")
    return parser.parse_args()


def main() -> None:
    args = dev_args(__doc__)
    from docindex.minilm import default_embedder

    cases, contexts = dev_contexts(args.db, args.collection)
    halves = {h: [c for c in cases if half(c) == h] for h in ("tune", "check")}
    embedder = Memo(default_embedder())
    rows = []
    for min_score, weight, keep, bonus in itertools.product((0.3, 0.35, 0.4), (0.4, 0.5, 0.6), (0.5, 0.75),
                                                            (0.05, 0.15, 0.25)):
        engine = ready(ExtractiveEngine(min_score=min_score, cosine_weight=weight, keep_ratio=keep,
                                        rank_bonus=bonus), embedder)
        rows.append({"min_score": min_score, "cosine_weight": weight, "keep_ratio": keep, "rank_bonus": bonus,
                     **score(engine, halves["tune"], contexts)})
        print(json.dumps(rows[-1]), flush=True)
    # Pick: no wrong refusal first, then key facts, then correct refusals.
    best = max(rows, key=lambda r: (-r["wrong_refusals"], r["key_fact_recall"], r["correct_refusals"]))
    knobs = {k: best[k] for k in ("min_score", "cosine_weight", "keep_ratio", "rank_bonus")}
    engine = ready(ExtractiveEngine(**knobs), embedder)
    print("picked", json.dumps(knobs))
    for name, subset in halves.items():
        print(name, len(subset), json.dumps(score(engine, subset, contexts)))


if __name__ == "__main__":
    main()

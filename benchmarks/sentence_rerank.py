"""Lever (issue 13 item 3, a reranker over the top N): reorder the first N fused chunks by
their best quotable sentence's MiniLM cosine to the question. Dev halves only.

    .venv/bin/python benchmarks/sentence_rerank.py [--eval-db var/eval.db] [--n 20]

Why this one: no cross-encoder or stronger English embedder is on PyPI bundled with its
weights (KNOWN_LIMITATIONS.md, "Out-of-sample retrieval"), so the only reranker that ships
offline is the index's own MiniLM, run on sentences instead of whole chunks (the quote
vectors ingest already stores). Per question: the shipped search (k=50), then each of the
first N chunks scored by max cosine(question, sentence) over its quotable sentences
(docindex.quotable.quotable_texts; the chunk's text when it has none), and the first N
reordered by

* rrf w: 1/(60 + shipped rank) + w/(60 + sentence rank), or
* lin w: the shipped fusion score min-max scaled over the N, + w × best sentence cosine.

Scored as benchmarks/retrieval_oos.py scores ours (distinct-document recall@1/5, MRR@10,
chunk recall@4) on each out-of-sample corpus's dev half, and on the cMCP dev eval's 50
answerable cases (first relevant distinct document, evals.metrics.first_relevant_rank).
Results: benchmarks/results/sentence_rerank.{json,md}.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.docindex_common import REPO, machine, write_results  # noqa: E402
from benchmarks.oos import metrics  # noqa: E402

LEVERS: list[tuple[str, float]] = [("rrf", 0.0), ("rrf", 0.5), ("rrf", 1.0), ("rrf", 2.0),
                                   ("lin", 0.25), ("lin", 0.5), ("lin", 1.0)]
RRF_K = 60


def rerank(order: Sequence[Any], fusion: Sequence[float], best: Sequence[float], mode: str, w: float) -> list[Any]:
    """`order` (the shipped ranking) with its first len(best) items reordered; stable on ties."""
    n = len(best)
    if w == 0 or n < 2:
        return list(order)
    if mode == "rrf":
        sentence_rank = np.empty(n, int)
        sentence_rank[np.argsort(-np.asarray(best), kind="stable")] = np.arange(n)
        score = [1 / (RRF_K + i) + w / (RRF_K + int(sentence_rank[i])) for i in range(n)]
    elif mode == "lin":
        f = np.asarray(fusion[:n], dtype=np.float64)
        scaled = (f - f.min()) / (f.max() - f.min() + 1e-12)
        score = list(scaled + w * np.asarray(best))
    else:
        raise ValueError(f"mode must be rrf or lin, not {mode!r}")
    first = sorted(range(n), key=lambda i: -score[i])
    return [order[i] for i in first] + list(order[n:])


class SentenceScorer:
    """Best sentence cosine per chunk, every text embedded once for the whole run."""

    def __init__(self) -> None:
        from benchmarks.retrieval_levers import CachedEmbedder

        self.embedder = CachedEmbedder()
        self.embedded = 0

    def best(self, question: str, texts: Sequence[str]) -> list[float]:
        from docindex.quotable import quotable_texts

        groups = [quotable_texts(t) or [t] for t in texts]
        flat = [question, *(s for g in groups for s in g)]
        self.embedded += sum(s not in self.embedder.cache for s in flat)
        vectors = self.embedder.embed(flat)
        cosines, out, at = vectors[1:] @ vectors[0], [], 0
        for g in groups:
            out.append(float(cosines[at:at + len(g)].max()))
            at += len(g)
        return out


def oos_runs(corpus: str, db: Path, n: int, scorer: SentenceScorer) -> list[tuple[set[str], list, list[float]]]:
    from benchmarks.oos.questions import questions
    from docindex.index import Index

    with Index(db, embedder=scorer.embedder) as index:
        out = []
        for q in questions(corpus, "dev"):
            hits = index.search(q["question"], 50, corpus)
            out.append(({q["gold"], *q["also"]}, hits, scorer.best(q["question"], [h.text for h in hits[:n]])))
        return out


def oos_scores(runs: list, mode: str, w: float) -> dict[str, float]:
    per = []
    for relevant, hits, best in runs:
        order = rerank(hits, [h.fusion for h in hits], best, mode, w)
        sources = [h.source for h in order]
        per.append(metrics.per_question(metrics.distinct(sources)[:10], relevant, sources))
    return {k: round(statistics.fmean(p[k] for p in per), 3)
            for k in ("recall@1", "recall@5", "mrr@10", f"chunk_recall@{metrics.CHUNKS_TO_MODEL}")}


def eval_runs(db: Path, n: int, scorer: SentenceScorer) -> list[tuple[Any, list, list[float]]]:
    from docindex.index import Index
    from evals.cases import load_cases

    with Index(db, embedder=scorer.embedder) as index:
        return [(c, hits, scorer.best(c.question, [h.text for h in hits[:n]]))
                for c in load_cases() if c.answerable
                for hits in [index.search(c.question, 50, "cmcp")]]


def eval_scores(runs: list, mode: str, w: float) -> dict[str, float]:
    from evals.metrics import first_relevant_rank

    ranks = [first_relevant_rank(case, metrics.distinct([h.source for h in rerank(
        hits, [h.fusion for h in hits], best, mode, w)])[:10]) for case, hits, best in runs]
    return {"recall@1": round(statistics.fmean(r == 1 for r in ranks), 3),
            "recall@5": round(statistics.fmean(r is not None and r <= 5 for r in ranks), 3),
            "mrr@10": round(statistics.fmean(1 / r if r else 0.0 for r in ranks), 3)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eval-db", type=Path, default=REPO / "var" / "eval.db")
    p.add_argument("--oos", nargs="*", default=["postgresql", "python"])
    p.add_argument("--n", type=int, default=20, help="chunks reordered (default 20)")
    args = p.parse_args()
    info = machine()
    scorer = SentenceScorer()
    targets: dict[str, tuple[list, Any]] = {"cmcp dev eval": (eval_runs(args.eval_db, args.n, scorer), eval_scores)}
    for corpus in args.oos:
        targets[f"{corpus} dev"] = (oos_runs(corpus, REPO / "var" / "oos" / f"{corpus}.db", args.n, scorer), oos_scores)
    rows = []
    for mode, w in LEVERS:
        row: dict[str, Any] = {"lever": "shipped" if w == 0 else f"{mode} w{w:g}"}
        for name, (runs, score) in targets.items():
            row[name] = score(runs, mode, w)
        rows.append(row)
        print(row, flush=True)
    from benchmarks.retrieval_levers import _commit

    info["commit"] = _commit()
    names = list(targets)
    lines = [f"# Sentence rerank of the first {args.n} chunks (dev halves only)", "",
             f"`benchmarks/sentence_rerank.py --n {args.n}` on a {info['machine']}, {info['date']}, commit "
             f"{info['commit']}, load {info['load_avg_1m_at_start']} at start; {scorer.embedded} texts embedded.", "",
             "| lever | " + " | ".join(f"{n} r@1 / r@5 / MRR" for n in names) + " |",
             "|---|" + "---|" * len(names)]
    for row in rows:
        lines.append(f"| {row['lever']} | " + " | ".join(
            f"{row[n]['recall@1']:.3f} / {row[n]['recall@5']:.3f} / {row[n]['mrr@10']:.3f}" for n in names) + " |")
    lines += ["", "Chunk recall@4 (what the model receives): " + "; ".join(
        f"{row['lever']}: " + ", ".join(f"{n} {row[n]['chunk_recall@4']:.3f}" for n in names[1:]) for row in rows), ""]
    write_results("sentence_rerank", {"machine": info, "n": args.n, "rows": rows}, "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

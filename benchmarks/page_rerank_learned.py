"""A learned re-ranking of the first pages, fitted on dev questions and scored on held-out ones.

    .venv/bin/python benchmarks/page_rerank_learned.py --dev deb=/tmp/deb.db ... --test apache=/tmp/apache.db ...

The PostgreSQL and Python halves (var/oos/<corpus>.db, `make corpora`) join the dev and test sides by
their split; a manual NAME=DB takes its questions from benchmarks/oos/unseen/questions.jsonl (collection
NAME). Per question, the shipped page ranking (`docindex search`'s: RANKINGS[SEARCH_RANKING], k=60) gives
its first TOP pages with the features its hits carry, normalized per question: the page's score and place,
best chunk cosine, BM25, centroid cosine, coverage, best quotable sentence's cosine, document score, the
share of the question's words in the page's title, file name and headings, and how many of its chunks
ranked. A pairwise logistic regression (gold page against each other page of the same question, L2) is
fitted on the dev side only and re-orders the first TOP pages of every question; MRR@10, first and top 5
before and after, per set. Stop 44 measured it (issue 13, "measured, not built"): results/page_rerank_learned.md.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.oos.questions import questions  # noqa: E402
from deployments.citations import content_words  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.ranking import RANKINGS, SEARCH_RANKING  # noqa: E402

UNSEEN = ROOT / "benchmarks/oos/unseen/questions.jsonl"
K, TOP, L2, STEPS = 60, 20, 0.01, 3000
FEATURES = ("score", "place", "cosine", "bm25", "centroid", "coverage", "sentence", "title", "file", "headings",
            "chunks", "best_sentence", "doc_score")


def _stems(text: str) -> set[str]:
    return {w[:5] for w in content_words(text)}


def pages(index: Index, question: str, collection: str, named: bool) -> list[dict]:
    """The shipped ranking's pages for `question`, in order, with their raw features."""
    out: dict[str, dict] = {}
    asked = _stems(question)
    for hit in index.search(question, k=K, collection=collection, sentences=True):
        key = hit.source.rsplit("/", 1)[-1].removesuffix(".gz") if named else hit.source
        page = out.get(key)
        sentence = hit.sentence_cosine if hit.sentence_cosine is not None else -1.0
        if page is None:
            shares = [len(asked & _stems(text)) / max(len(asked), 1) for text in (
                hit.heading_path[0] if hit.heading_path else "", re.sub(r"[_\-./]", " ", hit.source),
                " ".join(hit.heading_path[1:]))]
            out[key] = page = {"key": key, "place": len(out), "score": hit.score, "cosine": hit.cosine,
                               "bm25": hit.bm25, "centroid": hit.doc_cosine, "coverage": hit.coverage,
                               "sentence": sentence if sentence >= 0 else hit.cosine, "title": shares[0],
                               "file": shares[1], "headings": shares[2], "chunks": 0, "best_sentence": sentence,
                               "doc_score": hit.doc_score}
        page["chunks"] += 1
        page["cosine"], page["bm25"] = max(page["cosine"], hit.cosine), max(page["bm25"], hit.bm25)
        page["best_sentence"] = max(page["best_sentence"], sentence)
    return list(out.values())


def matrix(first: list[dict]) -> np.ndarray:
    """The features of a question's first pages, each normalized against the best of them."""
    best = {f: max(p[f] for p in first) for f in ("score", "bm25", "cosine", "centroid", "best_sentence", "doc_score")}
    return np.array([[p["score"] / (best["score"] or 1), 1 / (p["place"] + 1), p["cosine"] - best["cosine"],
                      p["bm25"] / (best["bm25"] or 1), p["centroid"] - best["centroid"], p["coverage"], p["sentence"],
                      p["title"], p["file"], p["headings"], math.log(p["chunks"]),
                      p["best_sentence"] - best["best_sentence"] if p["best_sentence"] >= 0 else -0.3,
                      p["doc_score"] / (best["doc_score"] or 1)] for p in first])


def fit(asked: list[dict]) -> np.ndarray:
    """Pairwise logistic regression: gold minus each other page, each question weighing 1."""
    rows, weights = [], []
    for q in asked:
        first = q["pages"][:TOP]
        gold = [i for i, p in enumerate(first) if p["gold"]]
        if not gold or len(first) < 2:
            continue
        x = matrix(first)
        others = [i for i in range(len(first)) if i != gold[0]]
        rows += [x[gold[0]] - x[i] for i in others]
        weights += [1 / len(others)] * len(others)
    d, w = np.array(rows), np.array(weights)
    beta = np.zeros(d.shape[1])
    for _ in range(STEPS):
        p = 1 / (1 + np.exp(-(d @ beta)))
        beta -= 0.5 * (-(d * ((1 - p) * w)[:, None]).sum(0) + L2 * beta) / w.sum()
    return beta


def scores(asked: list[dict], beta: np.ndarray | None) -> dict:
    ranks = []
    for q in asked:
        order = list(range(len(q["pages"])))
        if beta is not None and q["pages"]:
            head = matrix(q["pages"][:TOP]) @ beta
            order = sorted(range(len(head)), key=lambda i: (-head[i], i)) + order[TOP:]
        ranks.append(next((at for at, i in enumerate(order[:10], start=1) if q["pages"][i]["gold"]), None))
    return {"mrr@10": round(sum(1 / r for r in ranks if r) / len(ranks), 3), "first": sum(r == 1 for r in ranks),
            "top5": sum(bool(r) and r <= 5 for r in ranks), "questions": len(ranks)}


def asked_of(name: str, db: str, split: str | None) -> list[dict]:
    if split:           # postgresql / python: the corpus's own questions and collection
        qs = [(q["question"], {q["gold"], *q.get("also", [])}) for q in questions(name, split)]
    else:
        rows = [json.loads(line) for line in UNSEEN.read_text().splitlines() if line.strip()]
        qs = [(q["q"], {q["gold"], *q.get("also", [])}) for q in rows if q["c"] == name and q.get("gold")]
    with Index(db, ranking=RANKINGS[SEARCH_RANKING]) as index:
        out = []
        for text, relevant in qs:
            found = pages(index, text, name, named=split is None)
            out.append({"pages": [p | {"gold": p["key"] in relevant} for p in found]})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dev", nargs="*", default=[], metavar="NAME=DB", help="manuals to fit on")
    parser.add_argument("--test", nargs="*", default=[], metavar="NAME=DB", help="manuals held out")
    args = parser.parse_args()
    sets: dict[str, tuple[str, list[dict]]] = {}
    for corpus in ("postgresql", "python"):
        db = ROOT / "var" / "oos" / f"{corpus}.db"
        for split in ("dev", "test"):
            sets[f"{corpus} {split}"] = (split, asked_of(corpus, str(db), split))
    for side, specs in (("dev", args.dev), ("test", args.test)):
        for spec in specs:
            name, db = spec.split("=", 1)
            sets[name] = (side, asked_of(name, db, None))
    beta = fit([q for side, asked in sets.values() if side == "dev" for q in asked])
    rows = {name: {"side": side, "shipped": scores(asked, None), "learned": scores(asked, beta)}
            for name, (side, asked) in sets.items()}
    payload = {"machine": machine(), "weights": dict(zip(FEATURES, np.round(beta, 3).tolist())), "sets": rows}
    lines = ["# A learned page re-ranking (benchmarks/page_rerank_learned.py)", "",
             f"Fitted on the dev side only; re-orders the first {TOP} pages. Weights: "
             + ", ".join(f"{f} {w:+.2f}" for f, w in payload["weights"].items()), "",
             "| set | side | shipped MRR@10 (first, top 5) | learned MRR@10 (first, top 5) |", "|---|---|---|---|"]
    for name, row in rows.items():
        s, a = row["shipped"], row["learned"]
        lines.append(f"| {name} | {row['side']} | {s['mrr@10']} ({s['first']}, {s['top5']} of {s['questions']}) "
                     f"| {a['mrr@10']} ({a['first']}, {a['top5']}) |")
    for side in ("dev", "test"):
        picked = [r for r in rows.values() if r["side"] == side]
        if picked:
            lines.append(f"\n{side}: mean MRR@10 {np.mean([r['shipped']['mrr@10'] for r in picked]):.4f} shipped, "
                         f"{np.mean([r['learned']['mrr@10'] for r in picked]):.4f} learned; sets better "
                         f"{sum(r['learned']['mrr@10'] > r['shipped']['mrr@10'] for r in picked)}, worse "
                         f"{sum(r['learned']['mrr@10'] < r['shipped']['mrr@10'] for r in picked)} of {len(picked)}")
    lines.append(f"\n{payload['machine']}")
    write_results("page_rerank_learned", payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Query-time levers tried offline, on dev data only: a replica of search, then each lever in numpy.

    .venv/bin/python benchmarks/retrieval_levers_offline.py [--eval-db var/eval.db] \
        [--oos postgresql=var/oos/postgresql.db --oos python=var/oos/python.db] [--no-titles]

For the levers that were measured but not wired into docindex (their figures
decided against them; the wired one, score fusion, is measured through
Index.search by retrieval_levers.py). Per question it computes the exact
cosine of every chunk of the collection and the BM25 score of every chunk
(docindex's own postings and phrase scores), then ranks each variant:

- the shipped ranking (RRF k 60 of dense top 50 and BM25 top 50): the row
  must equal retrieval_levers.py's baseline to the digit, or the replica is wrong;
- dense pseudo-relevance feedback (Rocchio): q' = normalize(q + beta × mean
  of the top-m chunk vectors of the first pass, the fused or the dense one),
  a second dense top 50 fused in by RRF beside the first, or replacing it;
- document titles and heading paths embedded (once, timed: the cost at open):
  documents by cos(question, title) fused as an RRF document list (each
  candidate chunk of a ranked document gains w / (60 + its rank)), chunks by
  cos(question, heading path) as a third RRF list;
- document centroids (normalized mean of a document's chunk vectors) as an
  RRF document list (the convex form is the wired lever);
- inside score fusion (score_fusion.py's form): PRF, title and heading-path terms.

Scored as retrieval_levers.py scores: cMCP dev eval (recall@1/3/5, MRR,
k=5) and each corpus's DEV half (distinct-document recall, MRR@10, chunk
recall@4 over a k=50 search), with the shipped Gate's wrong and off-topic
refusals (first 4 chunks). Writes benchmarks/results/retrieval_levers_offline.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.oos import metrics  # noqa: E402
from benchmarks.oos.questions import off_topic, questions  # noqa: E402
from benchmarks.retrieval_levers import CachedEmbedder, _commit  # noqa: E402
from benchmarks.retrieval_oos import gate_passes, shipped_gate  # noqa: E402
from docindex.chunking import PATH_SEPARATOR  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.score_fusion import min_max  # noqa: E402
from docindex.textsearch import query_terms  # noqa: E402

N = 50          # candidates per retriever (docindex.index.CANDIDATES) and chunks asked (retrieval_oos.CHUNKS)
RRF_K = 60.0


class Collection:
    """One collection of one index: vectors, documents, titles, heading paths, by local row."""

    def __init__(self, index: Index, name: str, embedder: CachedEmbedder, titles: bool) -> None:
        index.search("warm up the postings", 1, name)
        self.index, self.snapshot = index, index._snapshot
        self.start, self.end = self.snapshot.slices[name]
        self.ids = self.snapshot.ids[self.start:self.end]
        self.matrix = self.snapshot.matrix[self.start:self.end]
        rows = index._conn.execute(
            "SELECT c.id, d.source, c.anchor, d.title, c.heading_path FROM chunks c "
            "JOIN documents d ON d.id = c.doc_id WHERE c.collection = ?", (name,)).fetchall()
        info = {row[0]: row[1:] for row in rows}
        self.source = [info[int(i)][0] for i in self.ids]
        self.anchor = [info[int(i)][1] for i in self.ids]
        docs, self.doc = np.unique(self.snapshot.doc_ids[self.start:self.end], return_inverse=True)
        sums = np.zeros((len(docs), self.matrix.shape[1]))
        np.add.at(sums, self.doc, self.matrix)
        self.centroids = (sums / np.linalg.norm(sums, axis=1, keepdims=True)).astype(np.float32)
        self.embed_seconds: dict[str, float] = {}
        if titles:
            title_of = {int(d): info[int(i)][2] for d, i in zip(self.doc, self.ids)}
            self.titles = self._embed("titles", [title_of[d] for d in range(len(docs))], embedder)
            paths = [PATH_SEPARATOR.join(json.loads(info[int(i)][3])) for i in self.ids]
            unique = sorted(set(paths))
            self.paths = self._embed("heading paths", unique, embedder)
            at = {p: n for n, p in enumerate(unique)}
            self.path_of = np.array([at[p] for p in paths])

    def _embed(self, what: str, texts: list[str], embedder: CachedEmbedder) -> np.ndarray:
        started = time.perf_counter()
        vectors = np.concatenate([np.asarray(embedder.inner.embed(texts[i:i + 256]), np.float32)
                                  for i in range(0, len(texts), 256)])
        self.embed_seconds[f"{what} ({len(texts)})"] = round(time.perf_counter() - started, 1)
        return vectors

    def features(self, question: str, embedder: CachedEmbedder) -> dict:
        index, snapshot = self.index, self.snapshot
        terms = query_terms(question)[:64]
        query = np.asarray(embedder.embed([question])[0], np.float32)
        phrases = index._tokenizer.tokens(index._conn, terms)
        rows, values = snapshot.lexical.scores(phrases, self.start, self.end, self.end - self.start,
                                               lambda i: index._phrase_scores(terms[i], snapshot))
        bm25 = np.zeros(self.end - self.start)
        bm25[rows - self.start] = values
        return {"q": query, "cos": self.matrix @ query, "bm25": bm25, "bm25_order": rows - self.start,
                "phrases": phrases}

    def passes_gate(self, f: dict, rows: np.ndarray, rule: dict) -> bool:
        top = np.asarray(rows[:4])
        coverage = self.snapshot.lexical.coverage(f["phrases"], top + self.start)
        return gate_passes([(float(f["cos"][r]), float(c)) for r, c in zip(top, coverage)], **rule)


# ---------------------------------------------------------------- rankings (local rows, best first)

def top_dense(cos: np.ndarray, n: int = N) -> np.ndarray:
    best = np.argpartition(-cos, n - 1)[:n]
    return best[np.argsort(-cos[best], kind="stable")]


def rrf(c: Collection, lists: list[tuple[np.ndarray, float]], doc_list: tuple[np.ndarray, float] | None = None,
        ) -> np.ndarray:
    """Weighted RRF; `doc_list` (document ranking, weight) adds w / (k + rank) to each chunk of a ranked document."""
    scores: dict[int, float] = {}
    for ranking, weight in lists:
        for rank, row in enumerate(ranking.tolist(), 1):
            scores[row] = scores.get(row, 0.0) + weight / (RRF_K + rank)
    rows = np.fromiter(scores, dtype=np.int64)
    values = np.fromiter(scores.values(), dtype=np.float64)
    if doc_list is not None:
        docs, weight = doc_list
        rank_of = np.full(len(c.centroids), 0)
        rank_of[docs] = np.arange(1, len(docs) + 1)
        at = rank_of[c.doc[rows]]
        values = values + np.where(at > 0, weight / (RRF_K + at), 0.0)
    return rows[np.lexsort((c.ids[rows], -values))]


def shipped(c: Collection, f: dict) -> np.ndarray:
    return rrf(c, [(top_dense(f["cos"]), 1.0), (f["bm25_order"][:N], 1.0)])


def feedback_query(c: Collection, f: dict, first: np.ndarray, m: int, beta: float) -> np.ndarray:
    moved = f["q"] + beta * c.matrix[first[:m]].mean(axis=0)
    return moved / np.linalg.norm(moved)


def prf(c: Collection, f: dict, *, m: int, beta: float, source: str, replace: bool = False) -> np.ndarray:
    first = shipped(c, f) if source == "fused" else top_dense(f["cos"])
    second = top_dense(c.matrix @ feedback_query(c, f, first, m, beta))
    return rrf(c, [(top_dense(f["cos"]), 0.0 if replace else 1.0), (f["bm25_order"][:N], 1.0), (second, 1.0)])


def document_list(c: Collection, f: dict, *, what: str, weight: float) -> np.ndarray:
    vectors = c.titles if what == "title" else c.centroids
    docs = np.argsort(-(vectors @ f["q"]), kind="stable")[:N]
    return rrf(c, [(top_dense(f["cos"]), 1.0), (f["bm25_order"][:N], 1.0)], (docs, weight))


def heading_paths(c: Collection, f: dict, *, weight: float) -> np.ndarray:
    by_path = top_dense(c.paths[c.path_of] @ f["q"])
    return rrf(c, [(top_dense(f["cos"]), 1.0), (f["bm25_order"][:N], 1.0), (by_path, weight)])


def convex(c: Collection, f: dict, *, a: float = 0.8, centroid: float = 0.0, title: float = 0.0,
           path: float = 0.0, prf_m: int = 0, beta: float = 0.5) -> np.ndarray:
    """score_fusion.py's form (min-max over the dense ∪ BM25 candidates), with extra terms."""
    cos = f["cos"]
    if prf_m:
        cos = c.matrix @ feedback_query(c, f, convex(c, f, a=a), prf_m, beta)
    cand = np.unique(np.concatenate([top_dense(cos), f["bm25_order"][:N]]))
    score = a * min_max(cos[cand].astype(np.float64)) + (1 - a) * min_max(f["bm25"][cand])
    for weight, vectors in ((centroid, "centroids"), (title, "titles"), (path, "paths")):
        if weight:
            table = getattr(c, vectors)
            at = c.path_of[cand] if vectors == "paths" else c.doc[cand]
            score = score + weight * min_max((table[at] @ f["q"]).astype(np.float64))
    return cand[np.lexsort((c.ids[cand], -score))]


def one_per_document(variant: Callable[[Collection, dict], np.ndarray]) -> Callable[[Collection, dict], np.ndarray]:
    """Ranking.per_doc = 1: each document's best chunk first, in order, then the rest in order."""
    def ranked(c: Collection, f: dict) -> np.ndarray:
        rows = variant(c, f)
        _, first = np.unique(c.doc[rows], return_index=True)
        head = np.zeros(len(rows), bool)
        head[first] = True
        return np.concatenate([rows[head], rows[~head]])
    return ranked


def variants(titles: bool) -> dict[str, Callable[[Collection, dict], np.ndarray]]:
    out: dict[str, Callable[[Collection, dict], np.ndarray]] = {"shipped (RRF)": shipped}
    for source in ("fused", "dense"):
        for m in (3, 5, 10):
            for beta in (0.3, 0.7, 1.5):
                out[f"PRF {source} top {m}, beta {beta}, beside"] = partial(prf, m=m, beta=beta, source=source)
            out[f"PRF {source} top {m}, beta 0.7, replacing"] = partial(prf, m=m, beta=0.7, source=source,
                                                                        replace=True)
    for w in (0.5, 1.0, 2.0):
        out[f"centroid RRF document list w{w}"] = partial(document_list, what="centroid", weight=w)
    if titles:
        for w in (0.5, 1.0, 2.0):
            out[f"title RRF document list w{w}"] = partial(document_list, what="title", weight=w)
            out[f"heading-path RRF list w{w}"] = partial(heading_paths, weight=w)
    out["convex a0.8 (wired: score_fusion.py)"] = convex
    out["convex a0.8 + centroid 0.1 + per_doc 1 (wired)"] = one_per_document(partial(convex, centroid=0.1))
    for m in (3, 5):
        out[f"convex a0.8 + PRF top {m}, beta 0.5"] = partial(convex, prf_m=m)
        out[f"convex a0.8 + centroid 0.1 + PRF top {m} + per_doc 1"] = one_per_document(
            partial(convex, centroid=0.1, prf_m=m))
    if titles:
        for w in (0.1, 0.2, 0.3):
            out[f"convex a0.8 + title {w}"] = partial(convex, title=w)
            out[f"convex a0.8 + heading path {w}"] = partial(convex, path=w)
        out["convex a0.8 + centroid 0.1 + title 0.1 + per_doc 1"] = one_per_document(
            partial(convex, centroid=0.1, title=0.1))
    return out


# ---------------------------------------------------------------- scoring

def score_oos(c: Collection, feats: list[dict], dev: list[dict], n_off: int, variant, rule: dict) -> dict:
    per, refused = [], 0
    for q, f in zip(dev, feats):
        rows = variant(c, f)[:N]
        sources = [c.source[r] for r in rows]
        per.append(metrics.per_question(metrics.distinct(sources)[:10], {q["gold"], *q["also"]}, sources))
        refused += not c.passes_gate(f, rows, rule)
    off = sum(not c.passes_gate(f, variant(c, f), rule) for f in feats[len(dev):])
    out: dict = {name: round(statistics.fmean(p[name] for p in per), 4) for name in per[0]}
    out.update(gate_answerable_refused=refused, gate_off_topic_refused=f"{off}/{n_off}")
    return out


def score_eval(c: Collection, feats: list[dict], cases: list, variant, rule: dict) -> dict:
    from evals.metrics import METRICS, aggregate

    records, refused, off, n_off = {}, 0, 0, 0
    for case, f in zip(cases, feats):
        rows = variant(c, f)[:5]
        records[case.id] = {"id": case.id, "case_sha": case.sha, "kind": case.kind, "mode": "retrieval",
                            "sources": [{"source": c.source[r], "anchor": c.anchor[r]} for r in rows]}
        passed = c.passes_gate(f, rows, rule)
        refused += case.answerable and not passed
        n_off += not case.answerable
        off += not case.answerable and not passed
    wanted = {"recall@1", "recall@3", "recall@5", "mrr"}
    out: dict = {k: round(a.value, 4) for k, a in aggregate(cases, records, [m for m in METRICS if m.name in wanted]).items()}
    out.update(gate_answerable_refused=refused, gate_unanswerable_refused=f"{off}/{n_off}")
    return out


def main() -> int:
    from evals.cases import load_cases

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eval-db", type=Path, default=REPO / "var" / "eval.db")
    p.add_argument("--oos", action="append", default=[], help="NAME=DB of an out-of-sample corpus")
    p.add_argument("--no-titles", action="store_true", help="skip the title / heading-path levers (embedding them)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "retrieval_levers_offline.json")
    args = p.parse_args()
    embedder, rule = CachedEmbedder(), shipped_gate()
    chosen = variants(not args.no_titles)
    results: dict[str, dict] = {name: {} for name in chosen}
    cost: dict[str, dict] = {}
    targets = [("cmcp-dev-eval", "cmcp", args.eval_db)] + [
        (spec.split("=", 1)[0], spec.split("=", 1)[0], Path(spec.split("=", 1)[1])) for spec in args.oos]
    for target, collection, db in targets:
        with Index(db, embedder=embedder) as index:
            c = Collection(index, collection, embedder, not args.no_titles)
            cost[target] = c.embed_seconds
            if target == "cmcp-dev-eval":
                cases = load_cases()
                feats = [c.features(case.question, embedder) for case in cases]
            else:
                dev, off = questions(target, "dev"), off_topic(target, "dev")
                feats = [c.features(q["question"], embedder) for q in dev + off]
            for name, variant in chosen.items():
                results[name][target] = (score_eval(c, feats, cases, variant, rule) if target == "cmcp-dev-eval"
                                         else score_oos(c, feats, dev, len(off), variant, rule))
                print(f"{target:14} {name:50} {json.dumps(results[name][target])}", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": _commit(),
            "loadavg": Path("/proc/loadavg").read_text().split()[:3], "embedding_seconds": cost}
    args.out.write_text(json.dumps({"meta": meta, "levers": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

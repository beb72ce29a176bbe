"""Page-ranking levers (`docindex search`'s `--rank pages`) on dev data only, one index load per corpus.

    .venv/bin/python benchmarks/page_levers.py --eval-db var/eval.db \
        --oos postgresql=var/oos/postgresql.db --oos python=var/oos/python.db \
        [--unseen deb=/tmp/deb.db --unseen docker=/tmp/docker.db] [--levers NAME…]

The page ranking feeds no answer and no Gate (those take the passages ranking), so a lever here is
scored only by how well pages rank, over distinct documents of a k=50 search, as
benchmarks/retrieval_oos.py scores them (recall@1/3/5/10, MRR@10):
- the cMCP dev eval's answerable cases (evals/cases.jsonl; a hit is any source of any of its groups);
- each out-of-sample corpus's DEV half (never the test half);
- optionally the unseen manuals (benchmarks/oos/unseen/questions.jsonl), which earlier stops read
  answers on: they are tuned-on data, a second look, not a held-out figure.
Each question is embedded once for all levers. Writes benchmarks/results/page_levers.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.retrieval_levers import CachedEmbedder, _commit  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.ranking import DOCUMENT_RANKING  # noqa: E402

K = 50
BEFORE = replace(DOCUMENT_RANKING, doc_weight=0.0)   # the page ranking before round 4 (stop 37)
LEVERS = {
    "before (stop 36)": BEFORE,
    "shipped (DOCUMENT_RANKING)": DOCUMENT_RANKING,
    # the whole page's BM25 (doclexical.py) as a share of the convex score
    **{f"doc bm25 {w:g}": replace(BEFORE, doc_bm25_weight=w) for w in (0.05, 0.1, 0.2, 0.3)},
    **{f"doc bm25 {w:g} + a0.9": replace(BEFORE, doc_bm25_weight=w, convex_dense=0.9) for w in (0.1, 0.2)},
    # a page's score from its best chunks (ranking.rank: doc_depth chunks, each doc_decay of the one before)
    **{f"doc agg {w:g}": replace(BEFORE, doc_weight=w) for w in (0.1, 0.2, 0.3, 0.5, 1.0)},
    **{f"doc agg {w:g} depth 2": replace(BEFORE, doc_weight=w, doc_depth=2) for w in (0.2, 0.5)},
    **{f"doc agg {w:g} depth 5": replace(BEFORE, doc_weight=w, doc_depth=5) for w in (0.2, 0.5)},
    **{f"doc agg {w:g} decay 0.3": replace(BEFORE, doc_weight=w, doc_decay=0.3) for w in (0.2, 0.5)},
    "doc agg 0.2 + doc bm25 0.1": replace(BEFORE, doc_weight=0.2, doc_bm25_weight=0.1),
    "doc agg 0.5 + doc bm25 0.05": replace(BEFORE, doc_weight=0.5, doc_bm25_weight=0.05),
    **{f"doc agg {w:g} + doc bm25 {b:g}": replace(BEFORE, doc_weight=w, doc_bm25_weight=b)
       for w, b in ((1.0, 0.05), (1.0, 0.1), (0.5, 0.1), (2.0, 0.1))},
    **{f"doc agg {w:g}": replace(BEFORE, doc_weight=w) for w in (2.0, 3.0, 5.0)},
    **{f"doc agg 2 depth {d}": replace(BEFORE, doc_weight=2.0, doc_depth=d) for d in (2, 5)},
    **{f"doc agg 2 decay {x:g}": replace(BEFORE, doc_weight=2.0, doc_decay=x) for x in (0.3, 0.7)},
    # stop 38: the other knobs again, around the shipped ranking
    **{f"shipped, a{a:g}": replace(DOCUMENT_RANKING, convex_dense=a) for a in (0.6, 0.7, 0.75, 0.85, 0.9)},
    **{f"shipped, centroid {c:g}": replace(DOCUMENT_RANKING, centroid_weight=c) for c in (0.0, 0.05, 0.2, 0.3)},
    "shipped, a0.7 centroid 0.2": replace(DOCUMENT_RANKING, convex_dense=0.7, centroid_weight=0.2),
    "shipped, depth 4 decay 0.7": replace(DOCUMENT_RANKING, doc_depth=4, doc_decay=0.7),
}


def _cmcp_questions() -> list[tuple[str, set[str]]]:
    from evals.cases import load_cases

    return [(c.question, {s for group in c.sources for s in group}) for c in load_cases() if c.answerable]


def _oos_questions(corpus: str) -> list[tuple[str, set[str]]]:
    from benchmarks.oos.questions import questions

    return [(q["question"], {q["gold"], *q["also"]}) for q in questions(corpus, "dev")]


def _unseen_questions(collection: str) -> list[tuple[str, set[str]]]:
    from benchmarks.unseen_manuals import QUESTIONS

    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [(r["q"], {r["gold"], *r.get("also", [])}) for r in rows if r["c"] == collection and r.get("gold")]


def _page(source: str, relevant: set[str], by_name: bool) -> str:
    """The page as the question names it: the relevant name `source` is (by file name, or by the end of its path
    where the name holds a folder, as benchmarks/unseen_manuals.py matches), else the source itself. Until stop 56 a
    page was its file name alone: a gold named "examples/bank_renege.html" never matched, and pages of one file name
    in several folders counted as one."""
    if not by_name:
        return source
    from benchmarks.unseen_manuals import names

    path = source.removesuffix(".gz")
    return next((name for name in sorted(relevant) if names(path, {name})), path)


def scores(index: Index, collection: str | None, items: list[tuple[str, set[str]]], ranking, by_name: bool) -> dict:
    from benchmarks.oos import metrics

    per = []
    for question, relevant in items:
        hits = index.search(question, K, collection, ranking=ranking)
        pages = metrics.distinct([_page(h.source, relevant, by_name) for h in hits])[:10]
        per.append(metrics.per_question(pages, relevant, None))
    out = {name: round(statistics.fmean(p[name] for p in per), 4) for name in per[0]}
    out["n"] = len(items)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eval-db", type=Path, default=REPO / "var" / "eval.db", help="'none': skip the cMCP cases")
    p.add_argument("--oos", action="append", default=[], help="NAME=DB of an out-of-sample corpus (dev half)")
    p.add_argument("--unseen", action="append", default=[], help="COLLECTION=DB of an unseen manual")
    p.add_argument("--levers", nargs="*", default=None, help="lever names (default: all)")
    p.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "page_levers.json")
    args = p.parse_args()
    levers = {name: LEVERS[name] for name in (args.levers or LEVERS)}
    targets = [("cmcp", args.eval_db, "cmcp", _cmcp_questions(), False)] if args.eval_db.name != "none" else []
    for spec in args.oos:
        name, db = spec.split("=", 1)
        targets.append((name, Path(db), name, _oos_questions(name), False))
    for spec in args.unseen:
        name, db = spec.split("=", 1)
        targets.append((name, Path(db), name, _unseen_questions(name), True))
    results: dict[str, dict] = {name: {"ranking": asdict(r)} for name, r in levers.items()}
    embedder = CachedEmbedder()
    for target, db, collection, items, by_name in targets:
        with Index(db, embedder=embedder) as index:
            index.search("warm up the embedder and the postings", 5)
            for name, ranking in levers.items():
                results[name][target] = scores(index, collection, items, ranking, by_name)
                print(f"{target:10} {name:28} {json.dumps(results[name][target])}", flush=True)
    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": _commit(),
            "loadavg": Path("/proc/loadavg").read_text().split()[:3]}
    args.out.write_text(json.dumps({"meta": meta, "levers": results}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Three retrieval levers measured in stop 54, none built: a multi-sentence question's sentences embedded beside it,
release notes read wider, and the anchor text of the links into a page as a field of that page.

    .venv/bin/python benchmarks/query_levers.py --set NAME=DB ... [--corpus-half postgresql-dev ...]

A set NAME=DB is an unseen manual (questions from benchmarks/oos/unseen/questions.jsonl, collection NAME; its pages
are read again where the index says it read them); a corpus half (postgresql-dev, python-test, ...) is a pinned corpus's (`make corpora`,
var/oos/<corpus>.db). Per question, `docindex search`'s page ranking (RANKINGS[SEARCH_RANKING], first 10 pages: MRR@10,
first, top 5) and the answer's passages (RANKINGS["passages"], first 4: the gold page among them) as shipped, and:

- **question sentences** (`sentences:MODE`): a question of two or more sentences is searched with the normalized sum of
  its own vector and, `last`: its last sentence's; `ask`: its sentences ending in "?" (else the last), weighed 1
  together; `each`: every sentence's, weighed 1 together; `each2`: the same, the question weighed 2. A one-sentence
  question is unchanged.
- **release notes, read wider** (`release_notes:wider`): docindex.release_notes.PRE_RELEASES and RELEASE_TITLES on
  (a pre-release number is a version; a page titled with one release is release notes), in both rankings.
- **anchor text** (`anchors:W`): the distinct texts of the links into a page from other pages of ROOT, as a BM25
  document of that page; the first 50 pages of the shipped ranking are re-ordered by 1/(60 + rank) + W / (60 + rank by
  that BM25) (a page no link names gains nothing).

Writes benchmarks/results/query_levers.{json,md}.
"""
from __future__ import annotations

import argparse
import gzip
import json
import math
import posixpath
import re
import sqlite3
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.gate_noise_floor import _commit  # noqa: E402
from benchmarks.oos.questions import questions  # noqa: E402
from benchmarks.unseen_manuals import QUESTIONS, names  # noqa: E402
from docindex import query_embedding, release_notes  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.ranking import RANKINGS, SEARCH_RANKING  # noqa: E402

SENTENCE_MODES = ("last", "ask", "each", "each2")
ANCHOR_WEIGHTS = (0.003, 0.01, 0.03, 0.1)
_SPLIT = re.compile(r"(?<=[.?!])\s+(?=[A-Z\"'(`])")
_TOKEN = re.compile(r"[a-z0-9_]+")
_STOP = set("the a an of to in and or for on with is are be by as at from this that it its how do i what can my".split())


def sentences(question: str) -> list[str]:
    return [s for s in _SPLIT.split(question.strip()) if s.strip()]


def question_vector(embedder, question: str, mode: str | None) -> np.ndarray:
    """The vector searched for `question`: its own (mode None, or one sentence), or with its sentences' (docstring)."""
    parts = sentences(question)
    if mode is None or len(parts) < 2:
        return embedder.embed([question])[0]
    asks = [p for p in parts if p.endswith("?")] or parts[-1:]
    extra = {"last": parts[-1:], "ask": asks, "each": parts, "each2": parts}[mode]
    vectors = embedder.embed([question, *extra])
    weights = [2.0 if mode == "each2" else 1.0] + [1.0 / len(extra)] * len(extra)
    total = sum(w * v / np.linalg.norm(v) for w, v in zip(weights, vectors))
    return (total / np.linalg.norm(total)).astype(vectors.dtype)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[tuple[str, str]] = []
        self._open: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            self._open = (href, [])

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open:
            self.links.append((self._open[0], " ".join("".join(self._open[1]).split())))
            self._open = None

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[1].append(data)


def tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def anchor_texts(root: Path, sources: list[str]) -> dict[str, list[str]]:
    """Per source, the tokens of the distinct texts of links into it from other sources of `root`."""
    have, texts = set(sources), defaultdict(set)
    for source in (s for s in sources if s.endswith((".html", ".htm", ".html.gz"))):
        try:
            with (gzip.open if source.endswith(".gz") else open)(root / source, "rb") as page:
                raw = page.read()
        except OSError:
            continue
        parser = _Links()
        parser.feed(raw.decode("utf-8", "replace"))
        for href, text in parser.links:
            url = urlsplit(href)
            if url.scheme or url.netloc or not url.path or not text or len(text) > 120:
                continue
            target = posixpath.normpath(posixpath.join(posixpath.dirname(source), unquote(url.path)))
            target = target if target in have else target + ".gz"
            if target in have and target != source:
                texts[target].add(text.lower())
    return {target: tokens(" ".join(sorted(found))) for target, found in texts.items()}


def bm25(docs: dict[str, list[str]]) -> Callable[[str, str], float]:
    """BM25 (k1 1.2, b 0.75) of a query against each of `docs`."""
    counts = {d: Counter(t) for d, t in docs.items()}
    mean = float(np.mean([len(t) for t in docs.values()])) if docs else 1.0
    df = Counter(w for c in counts.values() for w in c)
    idf = {w: math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for w, n in df.items()}

    def score(query: str, doc: str) -> float:
        c = counts.get(doc)
        if not c:
            return 0.0
        norm = 1.2 * (0.25 + 0.75 * sum(c.values()) / mean)
        return sum(idf[w] * c[w] * 2.2 / (c[w] + norm) for w in set(tokens(query)) if c.get(w))
    return score


def measure(db: str, collection: str, items: list[tuple[str, set[str]]]) -> dict:
    rows = sqlite3.connect(db).execute("SELECT source, path FROM documents WHERE collection = ?", (collection,)).fetchall()
    sources = [source for source, _ in rows]
    root = Path(rows[0][1][:-len(rows[0][0])]) if rows and rows[0][1].endswith(rows[0][0]) else None
    anchors = bm25(anchor_texts(root, sources)) if root else None
    variants = [("shipped", None), *((f"sentences:{m}", m) for m in SENTENCE_MODES), ("release_notes:wider", None)]
    out: dict[str, dict] = {}
    shipped_start = query_embedding.QueryEmbedder.start
    for label, mode in variants:
        def start(self, embedder, query, chunks, mode=mode):
            vector = question_vector(embedder, query, mode)
            return lambda: (vector, 0.0)
        query_embedding.QueryEmbedder.start = start        # type: ignore[method-assign]
        release_notes.PRE_RELEASES = release_notes.RELEASE_TITLES = label == "release_notes:wider"
        pages, passages = Index(db, ranking=RANKINGS[SEARCH_RANKING]), Index(db, ranking=RANKINGS["passages"])
        try:
            ranks, given, anchored = [], 0, {w: [] for w in ANCHOR_WEIGHTS}
            for question, wanted in items:
                found = list(dict.fromkeys(h.source for h in pages.search(question, k=50, collection=collection)))
                ranks.append(_rank(found[:10], wanted))
                given += any(names(h.source.removesuffix(".gz"), wanted) for h in passages.search(question, 4, collection))
                if anchors and label == "shipped":
                    by_anchor = np.array([anchors(question, s) for s in found])
                    place = {found[i]: r for r, i in enumerate(np.argsort(-by_anchor, kind="stable"), 1) if by_anchor[i] > 0}
                    for w in ANCHOR_WEIGHTS:
                        fused = [1 / (60 + r) + (w / (60 + place[s]) if s in place else 0.0) for r, s in enumerate(found, 1)]
                        anchored[w].append(_rank([found[i] for i in np.argsort(-np.array(fused), kind="stable")][:10], wanted))
        finally:
            query_embedding.QueryEmbedder.start = shipped_start    # type: ignore[method-assign]
            release_notes.PRE_RELEASES = release_notes.RELEASE_TITLES = False
        out[label] = _summary(ranks) | {"passages_hold_gold": given}
        if anchors and label == "shipped":
            out |= {f"anchors:{w:g}": _summary(r) for w, r in anchored.items()}
    multi = sum(len(sentences(q)) > 1 for q, _ in items)
    return {"questions": len(items), "multi_sentence": multi, **out}


def _rank(found: list[str], wanted: set[str]) -> int | None:
    return next((i for i, s in enumerate(found, 1) if names(s.removesuffix(".gz"), wanted)), None)


def _summary(ranks: list[int | None]) -> dict:
    return {"mrr@10": round(float(np.mean([1 / r if r else 0.0 for r in ranks])), 4),
            "first": sum(r == 1 for r in ranks), "top5": sum(bool(r and r <= 5) for r in ranks)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=DB", help="an unseen manual")
    parser.add_argument("--corpus-half", action="append", default=[], metavar="CORPUS-SPLIT")
    args = parser.parse_args()
    unseen = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line]
    sets: dict[str, dict] = {}
    for half in args.corpus_half:
        corpus, split = half.rsplit("-", 1)
        items = [(q["question"], {q["gold"], *q.get("also", [])}) for q in questions(corpus, split)]
        sets[half] = measure(str(ROOT / f"var/oos/{corpus}.db"), corpus, items)
        print(half, json.dumps(sets[half]), flush=True)
    for spec in args.set:
        name, db = spec.split("=", 1)
        items = [(r["q"], {r["gold"], *r.get("also", [])}) for r in unseen if r["c"] == name and r.get("gold")]
        sets[name] = measure(db, name, items)
        print(name, json.dumps(sets[name]), flush=True)
    labels = [k for k in next(iter(sets.values())) if k not in ("questions", "multi_sentence")]
    means = {k: round(float(np.mean([s[k]["mrr@10"] for s in sets.values() if k in s])), 4) for k in labels}
    moved = {k: [sum(s[k]["mrr@10"] > s["shipped"]["mrr@10"] + 1e-9 for s in sets.values() if k in s),
                 sum(s[k]["mrr@10"] < s["shipped"]["mrr@10"] - 1e-9 for s in sets.values() if k in s)] for k in labels}
    payload = {"machine": machine(), "commit": _commit(), "sets": sets, "mean_mrr@10": means, "sets_up_down": moved}
    lines = ["# Question sentences, release notes read wider, anchor text: retrieval levers measured (stop 54)", "",
             f"`benchmarks/query_levers.py` at {payload['commit']} ({payload['machine']['date']}). Page MRR@10 per set; "
             "the last rows: the mean over the sets and how many sets each lever moves up / down.", "",
             "| set (questions, of them multi-sentence) | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for name, s in sets.items():
        lines.append(f"| {name} ({s['questions']}, {s['multi_sentence']}) | "
                     + " | ".join(str(s[k]["mrr@10"]) if k in s else "" for k in labels) + " |")
    lines.append("| **mean** | " + " | ".join(f"**{means[k]}**" for k in labels) + " |")
    lines.append("| sets up / down | " + " | ".join(f"{moved[k][0]} / {moved[k][1]}" for k in labels) + " |")
    write_results("query_levers", payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Passages in another language than the question's, with `Ranking.same_language` on (as shipped)
and off, on a collection that holds one manual in several languages.

Questions: benchmarks/oos/unseen/multilingual.jsonl (written before the collection was ingested).
Per question: the 4 passages an answer gets (the passages ranking) and the 10 first pages (the
page ranking), each text's language as docindex/language.py reads it, and the extractive answer.
Counted: passages and pages whose language is known and differs from the question's.

    apt-get install aptitude-doc-en aptitude-doc-fr aptitude-doc-es
    docindex ingest /usr/share/doc/aptitude/html --db /tmp/aptitude.db --collection aptitude
    python benchmarks/language_mix.py --db /tmp/aptitude.db --collection aptitude [--answers]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from deployments.engines import extractive as X  # noqa: E402
from deployments.passage import Passage  # noqa: E402
from deployments.prompt import PromptLimits, build_prompt  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.language import language  # noqa: E402
from docindex.minilm import default_embedder  # noqa: E402
from docindex.ranking import RANKINGS, SEARCH_RANKING  # noqa: E402
from evals.extractive_tune import Memo, ready  # noqa: E402

QUESTIONS = ROOT / "benchmarks/oos/unseen/multilingual.jsonl"


def measure(db: str, collection: str, same_language: bool, engine: X.ExtractiveEngine, show: bool) -> dict:
    pages = Index(db, ranking=replace(RANKINGS[SEARCH_RANKING], same_language=same_language))
    passages = Index(db, ranking=replace(RANKINGS["passages"], same_language=same_language))
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line]
    other_passages = other_pages = other_answers = 0
    for q in (r for r in rows if r["c"] == collection):
        asked = language(q["q"], short=True)
        hits = passages.search(q["q"], 4, collection)
        given = list(build_prompt(q["q"], [Passage(h.source, h.text, h.cosine, h.bm25, h.fusion, h.anchor, h.title)
                                           for h in hits], PromptLimits(4, 900)).passages)
        answer = " ".join(engine.render(engine.choose(q["q"], given, 256)))
        said = [language(h.text) for h in hits]
        page_langs = [language(h.text) for h in pages.search(q["q"], 10, collection)]
        if asked is not None:       # a question whose language is not plain counts nothing
            other_passages += sum(lang is not None and lang != asked for lang in said)
            other_pages += sum(lang is not None and lang != asked for lang in page_langs)
            other_answers += language(answer) not in (None, asked)
        if show:
            print(json.dumps({"question": q["q"], "asked": asked, "passages": said, "pages": page_langs,
                              "answer": answer[:300]}, ensure_ascii=False))
    count = sum(r["c"] == collection and language(r["q"], short=True) is not None for r in rows)
    return {"same_language": same_language, "questions": count,
            "passages_in_another_language": f"{other_passages}/{4 * count}",
            "top10_pages_in_another_language": f"{other_pages}/{10 * count}",
            "answers_in_another_language": f"{other_answers}/{count}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", required=True)
    parser.add_argument("--collection", required=True)
    parser.add_argument("--answers", action="store_true", help="print each question's languages and answer")
    args = parser.parse_args()
    engine = ready(X.ExtractiveEngine(), Memo(default_embedder()))
    for same_language in (True, False):
        result = measure(args.db, args.collection, same_language, engine, args.answers)
        result |= {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "load": round(os.getloadavg()[0], 1),
                   "machine": f"{platform.machine()}, {os.cpu_count()} cores", "commit": subprocess.run(
                       ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()}
        print(json.dumps(result))


if __name__ == "__main__":
    main()

"""The extractive engine out of sample: does the answer keep what retrieval found?

On an out-of-sample corpus's DEV half (benchmarks/oos/, e.g. the PostgreSQL
manual), each question is searched (k = the prompt's 4 sources) and answered by
`ExtractiveEngine.choose`; the question's `evidence` string (written with the
question, before any tuning) is looked for in the 4 passages (the upper bound)
and in the answer. A small grid over cosine_weight, keep_ratio and the heading
bonus. Needs var/oos/postgresql.db (`make corpora`).

    PYTHONPATH=. python evals/extractive_oos.py
"""

from __future__ import annotations

import itertools
import json

from deployments.engines import extractive as X
from deployments.passage import Passage
from deployments.prompt import PromptLimits, build_prompt
from evals.extractive_tune import Memo

CORPUS, DB = "postgresql", "var/oos/postgresql.db"


def main() -> None:
    from docindex.index import Index
    from docindex.minilm import default_embedder

    rows = [json.loads(line) for line in open(f"benchmarks/oos/{CORPUS}/questions.jsonl")]
    questions = [q for q in rows if q["split"] == "dev"]
    index = Index(DB)
    embedder = Memo(default_embedder())
    contexts = {}
    for q in questions:
        hits = index.search(q["question"], 4, CORPUS)
        passages = [Passage(h.source, h.text, h.cosine, h.bm25, h.fusion, h.anchor, h.title) for h in hits]
        contexts[q["id"]] = list(build_prompt(q["question"], passages, PromptLimits(4, 900)).passages)
    bound = sum(q["evidence"].lower() in " ".join(p.text for p in contexts[q["id"]]).lower() for q in questions)
    print("evidence in the 4 passages:", bound, "/", len(questions), flush=True)
    for weight, keep, heading in itertools.product((0.4, 0.6), (0.5, 0.75), (True, False)):
        engine = X.ExtractiveEngine(min_score=0.25, cosine_weight=weight, keep_ratio=keep)
        engine._embedder, engine._started = embedder, True
        found = refused = words = 0
        for q in questions:
            passages = contexts[q["id"]]
            if not heading:
                passages = [Passage(p.source, p.text, p.cosine) for p in passages]
            chosen = engine.choose(q["question"], passages, 256)
            answer = " ".join(engine.render(chosen))
            found += q["evidence"].lower() in answer.lower()
            refused += not chosen
            words += len(answer.split())
        print(json.dumps({"cosine_weight": weight, "keep_ratio": keep, "heading": heading, "evidence": found,
                          "refused": refused, "mean_words": round(words / len(questions), 1)}), flush=True)


if __name__ == "__main__":
    main()

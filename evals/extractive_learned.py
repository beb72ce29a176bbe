"""Lever (issue 12, the hidden set's measure): a sentence scorer fitted to reference answers
instead of set by hand. Dev data only; nothing here ships.

The extractive engine ranks a candidate sentence by 0.6 × MiniLM cosine + 0.4 × term overlap
+ 0.15 × retrieval rank share (deployments/engines/extractive.py). Here a ridge regression
predicts each candidate's share of the reference answer's words (`word_recall`, what the
maintainers' hidden set measures) from cosine (for every candidate, not only the 12 best by
term overlap), term overlap, rank share and log length, fitted on one out-of-sample corpus's
DEV half and scored on the other's (cross-corpus, so no half scores its own fit). The fitted
weights, scaled to cosine 0.6, are then tried inside the engine itself (refusal unchanged:
the shipped score still decides it) on both dev halves and on the cMCP tune half's key facts.

    .venv/bin/python -m evals.extractive_learned        # → evals/results/extractive-learned.json

Needs var/oos/<corpus>.db (`make corpora`) and var/eval.db (`make eval`).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from deployments.engines import extractive as X
from deployments.passage import Passage
from evals import extractive_levers, extractive_oos, extractive_tune
from evals.extractive_tune import Memo, ready
from evals.metrics import word_recall

RESULTS = extractive_oos.RESULTS
FEATURES = ("cosine", "overlap", "rank", "log_length")


def features(engine: X.ExtractiveEngine, question: str, passages: list[Passage], found: list[X.Candidate]) -> np.ndarray:
    """One row per candidate: FEATURES, with MiniLM's cosine for every candidate."""
    headings = [" ".join([p.title, p.anchor.replace("-", " ")]) for p in passages]
    lexical, rank = engine.parts(question, found, len(passages), headings)
    vectors = engine._embedder.embed([question, *(c.text for c in found)])
    cosine = np.clip(vectors[1:] @ vectors[0], 0, 1)
    length = np.minimum(np.log1p([len(c.text.split()) for c in found]) / np.log1p(40), 1.0)
    return np.stack([cosine, lexical, rank, length], 1)


class Fitted(X.ExtractiveEngine):
    """The engine with the learned weights: the shipped score decides refusal, these the choice."""

    def __init__(self, weights: tuple[float, ...], **knobs: Any) -> None:
        super().__init__(**knobs)
        self.weights = np.array(weights)

    def ranked(self, question: str,
               passages: Sequence[Passage]) -> tuple[list[X.Candidate], np.ndarray, np.ndarray] | None:
        shipped = super().ranked(question, passages)
        if shipped is None:
            return None
        found = shipped[0]
        scores = features(self, question, list(passages), found) @ self.weights
        return found, scores, np.argsort(-scores, kind="stable")


def fit(engine: X.ExtractiveEngine, questions: list[dict[str, Any]], contexts: dict[str, list[Passage]],
        ridge: float = 1.0) -> np.ndarray:
    """Ridge weights (on standardized features, returned on the raw scale) predicting word_recall."""
    rows, targets = [], []
    for q in questions:
        found = X.candidates(contexts[q["id"]])
        if found and "answer" in q:
            rows.append(features(engine, q["question"], contexts[q["id"]], found))
            targets.append([word_recall(q["answer"], c.text) for c in found])
    x, y = np.concatenate(rows), np.concatenate(targets)
    mean, std = x.mean(0), x.std(0) + 1e-9
    z = np.c_[(x - mean) / std, np.ones(len(x))]
    penalty = ridge * np.eye(z.shape[1])
    penalty[-1, -1] = 0.0
    beta = np.linalg.solve(z.T @ z + penalty, z.T @ y)
    weights: np.ndarray = beta[:-1] / std
    return weights


def row(name: str, engine: X.ExtractiveEngine, data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"variant": name,
                           "cmcp_tune_key_facts": extractive_tune.score(engine, *data["cmcp"])["key_fact_recall"]}
    for corpus in ("postgresql", "python"):
        scored = extractive_oos.score(engine, *data[corpus])
        out |= {f"{corpus}_dev_{key}": scored[key] for key in ("evidence_in_answer", "gold_in_answer", "mean_words")}
    print(json.dumps(out), flush=True)
    return out


def main() -> int:
    from docindex.minilm import default_embedder

    embedder = Memo(default_embedder())
    embedder.dim = embedder.embedder.dim      # type: ignore[attr-defined]  # the quote vectors' width
    load = os.getloadavg()[0]
    data = {"cmcp": extractive_levers._cmcp_contexts(4, 900),
            **{c: extractive_oos.oos_contexts(c, "dev") for c in ("postgresql", "python")}}
    base = ready(X.ExtractiveEngine(), embedder)
    weights = {c: fit(base, *data[c]) for c in ("postgresql", "python")}
    both = fit(base, data["postgresql"][0] + data["python"][0], data["postgresql"][1] | data["python"][1])
    rows = [row("shipped", base, data)]
    for name, w in (("fitted on PostgreSQL dev", weights["postgresql"]), ("fitted on Python dev", weights["python"]),
                    ("fitted on both dev halves", both)):
        scaled = tuple(float(v) for v in w * (0.6 / w[0]))
        rows.append(row(f"{name}: {dict(zip(FEATURES, (round(v, 3) for v in scaled)))}",
                        ready(Fitted(scaled), embedder), data))
        rows.append(row(f"{name}, length term off", ready(Fitted((*scaled[:3], 0.0)), embedder), data))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
              "machine": f"{os.cpu_count()} cores, load {load:.1f} at start", "features": FEATURES, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "extractive-learned.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

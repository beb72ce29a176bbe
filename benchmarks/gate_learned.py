"""The Gate's learned score (stop 47): a logistic regression over deployments.gate_rule.FEATURES, fitted on
dev data, against the clauses it replaces (the evidence rule, the noise floor, the sentence floor).

    .venv/bin/python benchmarks/gate_learned.py --train sdl=/tmp/sdl.db --train exim=/tmp/exim.db ... \
        --unseen kea=/tmp/kea.db ...

Sets as in benchmarks/gate_noise_floor.py (each question searched as the MCP search tool does, the Gate's
4 passages, each collection's floors from its 40 probes). Fitted on the dev data only: the PostgreSQL and
Python dev halves, the cMCP dev eval and the manuals given with --train, real questions against their
off-topic ones (for the manuals, the 8 everyday questions of benchmarks/oos/unseen/questions.jsonl, the
same 8 in every manual). Reported: the test halves and the manuals given with --unseen, and on every set the
fresh off-topic questions of benchmarks/oos/unseen/off_topic_fresh*.jsonl (48 each, never fitted on: the first
written before any variant was scored, the second after the shipped score was chosen), each file's own column.

The fit: features standardized on the training rows, L2 penalty LAMBDA, Newton steps; the threshold on the
predicted probability with the fewest training errors (wrong refusals + off-topic passes), the middle of
the widest run of such thresholds; then the weights are put back in the features' own units with the
threshold folded into the bias, rounded to 4 places, and every figure is replayed through
deployments.gate_rule.decide with those rounded weights, as the Gate runs them. Which FEATURES it weighs is
chosen on the training sets too, by backward elimination on leave-one-set-out errors (each training set
scored by a fit on the others): while leaving one more feature out gives no more errors, the one whose
removal gives the fewest goes (a left-out feature weighs 0). Writes benchmarks/results/gate_learned.{json,md};
serve_app/settings.py's gate_score_weights default is the "weights" it records.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.gate_noise_floor import SHIPPED_RULE, _commit, measure  # noqa: E402   SHIPPED_RULE: the clauses
from benchmarks.oos.questions import fresh_off_topic  # noqa: E402
from deployments.gate_rule import FEATURES, decide, features  # noqa: E402
from deployments.passage import Passage  # noqa: E402
from docindex.noise_floor import FLOOR_RANK  # noqa: E402

LAMBDA = 1.0
THRESHOLDS = [round(0.005 * t, 3) for t in range(10, 191)]


def fit(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights with the bias first, over standardized features; the mean; the scale)."""
    mean, scale = x.mean(0), x.std(0) + 1e-9
    z = np.c_[np.ones(len(x)), (x - mean) / scale]
    w = np.zeros(z.shape[1])
    penalty = LAMBDA * np.eye(len(w))
    penalty[0, 0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-z @ w))
        step = np.linalg.solve(z.T @ (z * (p * (1 - p))[:, None]) + penalty, z.T @ (p - y) + penalty @ w)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w, mean, scale


def threshold(prob: np.ndarray, y: np.ndarray) -> tuple[float, int]:
    """The middle of the widest run of thresholds with the fewest errors, and that count."""
    errors = [int(((prob < t) & y).sum() + ((prob >= t) & ~y).sum()) for t in THRESHOLDS]
    best = min(errors)
    runs, run = [], []
    for t, e in zip(THRESHOLDS + [None], errors + [None]):
        if e == best:
            run.append(t)
        elif run:
            runs.append(run)
            run = []
    widest = max(runs, key=len)
    return widest[(len(widest) - 1) // 2], best


def raw_weights(x: np.ndarray, y: np.ndarray) -> tuple[list[float], int]:
    """Weights in the features' own units, the threshold folded into the bias, rounded; training errors."""
    w, mean, scale = fit(x, y)
    prob = 1.0 / (1.0 + np.exp(-(np.c_[np.ones(len(x)), (x - mean) / scale] @ w)))
    t, errors = threshold(prob, y)
    slopes = w[1:] / scale
    bias = w[0] - float(slopes @ mean) - math.log(t / (1 - t))
    return [round(float(v), 4) for v in [bias, *slopes]], errors


def rows_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    floor = data["probes"][FLOOR_RANK - 1]
    out = []
    for row in data["rows"]:
        given = [replace(p, noise_floor=floor, sentence_floor=data["sentence_floor"]) for p in row["passages"]]
        out.append({**row, "passages": given, "x": features(given)})
    return out


def passes(passages: list[Passage], weights: list[float] | None) -> bool:
    return decide(passages, **{**SHIPPED_RULE, "score_weights": weights}).passed


def counts(rows: list[dict[str, Any]], weights: list[float] | None) -> dict[str, list[int]]:
    """kind -> [passed, asked]."""
    out: dict[str, list[int]] = {}
    for row in rows:
        c = out.setdefault(row["kind"], [0, 0])
        c[0] += passes(row["passages"], weights)
        c[1] += 1
    return out


def loso(groups: dict[str, list[dict[str, Any]]], columns: list[int]) -> int:
    """Errors on each training set with the score fitted on the others (features `columns` only)."""
    errors = 0
    for left in groups:
        train = [r for g, rows in groups.items() if g != left for r in rows]
        x = np.array([[r["x"][c] for c in columns] for r in train])
        y = np.array([r["kind"] == "real" for r in train])
        w, _ = raw_weights(x, y)
        for r in groups[left]:
            passed = w[0] + sum(a * r["x"][c] for a, c in zip(w[1:], columns)) >= 0
            errors += int(passed != (r["kind"] == "real"))
    return errors


def select(groups: dict[str, list[dict[str, Any]]]) -> tuple[list[int], list[tuple[list[int], int]]]:
    """Backward elimination on `loso` errors: the columns kept, and each step's (columns, errors)."""
    columns = list(range(len(FEATURES)))
    steps = [(columns, loso(groups, columns))]
    while len(columns) > 1:
        fewer = [[k for k in columns if k != c] for c in columns]
        best = min(((cols, loso(groups, cols)) for cols in fewer), key=lambda t: t[1])
        if best[1] > steps[-1][1]:
            break
        columns = best[0]
        steps.append(best)
    return columns, steps


def cell(c: dict[str, list[int]], kind: str) -> str:
    """Refused / asked."""
    passed, asked = c.get(kind, [0, 0])
    return f"{asked - passed}/{asked}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", action="append", default=[], metavar="NAME=DB", help="a manual fitted on")
    parser.add_argument("--unseen", action="append", default=[], metavar="NAME=DB", help="a manual reported only")
    args = parser.parse_args()
    info = machine()
    asked = fresh_off_topic()
    fresh = tuple(("fresh", stem, question) for stem, questions in asked.items() for question in questions)
    kinds = ["real", "off", *asked]
    sets = {"postgresql": str(REPO / "var/oos/postgresql.db"), "python": str(REPO / "var/oos/python.db"),
            "cmcp": str(REPO / "var/eval.db")}
    trained = ["cmcp"] + [spec.split("=", 1)[0] for spec in args.train]
    sets |= dict(spec.split("=", 1) for spec in args.train + args.unseen)
    split: dict[str, list[dict[str, Any]]] = {}      # "name" or "name dev|test" -> rows
    for name, db in sets.items():
        for row in rows_of(measure(name, db, fresh)):
            half = f"{name} {row['split']}" if name in ("postgresql", "python") and row["split"] != "fresh" else name
            split.setdefault(half, []).append(row)
    train_names = ["postgresql dev", "python dev"] + trained
    groups = {g: [r for r in split[g] if r["split"] != "fresh" and r["x"] is not None] for g in train_names}
    train = [r for rows in groups.values() for r in rows]
    columns, steps = select(groups)
    x = np.array([[r["x"][c] for c in columns] for r in train])
    y = np.array([r["kind"] == "real" for r in train])
    fitted, train_errors = raw_weights(x, y)
    weights = [fitted[0]] + [fitted[1 + columns.index(c)] if c in columns else 0.0 for c in range(len(FEATURES))]
    ablation = {" + ".join(FEATURES[c] for c in cols): errors for cols, errors in steps}
    lines = ["# The Gate's learned score (benchmarks/gate_learned.py)", "",
             f"{info['date']} · {info['machine']} · commit {_commit()} · load {info['load_avg_1m_at_start']} · "
             f"fitted on: {', '.join(train_names)} ({len(train)} questions, {int(y.sum())} real)", "",
             f"Fitted weights (bias, then {', '.join(FEATURES)}), the threshold folded into the bias: "
             f"**{weights}** ({train_errors} training errors).", "",
             "Backward elimination, leave-one-set-out errors over the training sets (each set scored by a fit on "
             "the others):", "", "| features | errors |", "|---|---:|"] + [f"| {k} | {v} |" for k, v in ablation.items()]
    lines += ["", "Every set: wrong refusals · everyday refused (the 8 shared ones; fitted on, in the training "
              "manuals) · each fresh file's off-topic questions refused (never fitted on: " + ", ".join(kinds[2:]) + "). "
              "Training sets marked *:", "",
              "| set | clauses (before) | learned score |", "|---|---|---|"]
    held = {"clauses": {}, "learned": {}}
    report = {}
    for label, rows in split.items():
        name = label.split()[0]
        if label in ("postgresql", "python"):
            continue        # the fresh questions' rows of the two corpora: reported under their test half
        if name in ("postgresql", "python"):
            rows = rows + (split[name] if label.endswith("test") else [])
        cells = []
        for rule, w in (("clauses", None), ("learned", weights)):
            c = counts(rows, w)
            cells.append(" · ".join(cell(c, kind) for kind in kinds))
            if label not in train_names:
                for kind, (p, n) in c.items():
                    h = held[rule].setdefault(kind, [0, 0])
                    h[0], h[1] = h[0] + p, h[1] + n
        report[label] = cells
        lines.append(f"| {label}{'*' if label in train_names else ''} | {cells[0]} | {cells[1]} |")
    lines.append("| **held out, all** | " + " | ".join(
        " · ".join(cell(h, kind) for kind in kinds) for h in held.values()) + " |")
    write_results("gate_learned", {"machine": info, "features": list(FEATURES), "weights": weights,
                                   "train_errors": train_errors, "trained_on": train_names, "ablation": ablation,
                                   "sets": report, "held_out": held}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

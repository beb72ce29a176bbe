"""The Gate's noise-floor clauses: which statistic of the probes' cosines and which margin (stop 42), and
the margin of the sentence floor (stop 43), each chosen on dev data.

    .venv/bin/python benchmarks/gate_noise_floor.py --dev sdl=/tmp/sdl.db \
        --sentence-dev exim=/tmp/exim.db ... --unseen kea=/tmp/kea.db ...

Sets: the PostgreSQL and Python corpora (var/oos/<corpus>.db, both halves: questions.jsonl answerable,
off_topic.jsonl off-topic), the cMCP dev eval (var/eval.db: factual and two_source answerable, off_topic
off-topic), and any manual of benchmarks/oos/unseen/questions.jsonl given as NAME=DB (its collection is
NAME; its 8 everyday questions are the off-topic ones). Each question is searched as the MCP search tool
does (the passages ranking, the Gate's 4 passages) and each collection's 40 probes once
(docindex/noise_floor.py). The rule replayed is deployments.gate_rule.decide itself, with the floor
each variant makes put on the passages.

The choice uses the dev sets only (PostgreSQL and Python dev halves, cMCP, and the manuals given with
--dev): the floor statistic (the probes' k-th best cosine, k = 1..4) and margin with the fewest dev
errors (wrong refusals + off-topic passes), ties to the middle of the widest run of margins with that
count. Every set is then reported with the evidence rule alone, stop 41's clause (best probe + 0.155)
and the shipped one (serve_app/settings.py, docindex.noise_floor.FLOOR_RANK).

The sentence clause (gate_sentence_margin) is chosen with the shipped floor clause in place, on the dev
sets plus the manuals given with --sentence-dev (held out from the floor's choice at stop 42, dev for
this one): the margin with the fewest dev errors, ties to the largest (the fewest everyday questions
let through where the dev data cannot tell). A set whose index stores no quote vectors has no sentence
floor: the clause is off there, as in the Gate.
Writes benchmarks/results/gate_noise_floor.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.oos.questions import off_topic, questions  # noqa: E402
from deployments.gate_rule import decide  # noqa: E402
from deployments.passage import Passage  # noqa: E402
from deployments.prompt import PromptLimits, build_prompt  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.noise_floor import FLOOR_RANK, PROBE_K, PROBES, best_cosines, floors_of, probe_hits  # noqa: E402
from docindex.ranking import RANKINGS  # noqa: E402
from serve_app.settings import Settings  # noqa: E402

UNSEEN = REPO / "benchmarks/oos/unseen/questions.jsonl"
MARGINS = [round(0.01 * m, 2) for m in range(8, 27)]
SENTENCE_MARGINS = [round(0.01 * m, 2) for m in range(4, 27)]
RANKS = (1, 2, 3, 4)
# The shipped clauses, each variant below replacing some; the learned score that replaced them where the floors
# are sent (stop 47) is off here: benchmarks/gate_learned.py compares the two.
SHIPPED_RULE = {**Settings(_env_file=None).gate_rule(), "score_weights": None}


def labelled(name: str) -> list[tuple[str, str, str]]:
    """(split, kind, question) with kind real | off."""
    if name in ("postgresql", "python"):
        return ([(q["split"], "real", q["question"]) for q in questions(name)]
                + [(q["split"], "off", q["question"]) for q in off_topic(name)])
    if name == "cmcp":
        cases = [json.loads(line) for line in (REPO / "evals/cases.jsonl").read_text().splitlines() if line]
        kinds = {"factual": "real", "two_source": "real", "off_topic": "off"}
        return [("dev", kinds[c["kind"]], c["question"]) for c in cases if c["kind"] in kinds]
    rows = [json.loads(line) for line in UNSEEN.read_text().splitlines() if line]
    return [("unseen", "real" if r["c"] == name else "off", r["q"]) for r in rows if r["c"] in (name, "off")]


def measure(name: str, db: str, extra: tuple[tuple[str, str, str], ...] = ()) -> dict[str, Any]:
    """The probes' cosines, the sentence floor and each question's passages; `extra`: more (split, kind,
    question) rows to ask (benchmarks/gate_learned.py's fresh off-topic questions)."""
    index = Index(db, ranking=RANKINGS["passages"])
    search = probe_hits(index, name)
    found = {probe: best_cosines(search(probe)) for probe in PROBES}
    probes = sorted((c for c, _ in found.values() if c is not None), reverse=True)
    rows = []
    for split, kind, question in [*labelled(name), *extra]:
        hits = index.search(question, PROBE_K, name, sentences=True)
        given = build_prompt(question, [Passage(h.source, h.text, h.cosine, h.bm25, h.fusion, h.anchor, h.title,
                                                coverage=h.coverage, sentence_cosine=h.sentence_cosine)
                                        for h in hits], PromptLimits(PROBE_K, 900))
        rows.append({"split": split, "kind": kind, "question": question, "passages": list(given.passages)})
    return {"probes": probes, "sentence_floor": floors_of(found).sentence, "rows": rows}


def tally(data: dict[str, Any], rank: int | None, margin: float | None, split: str | None = None,
          sentence_margin: float | None = None) -> tuple[int, int, int, int]:
    """wrong refusals, answerable, off-topic passed, off-topic; rank None: the evidence rule alone;
    sentence_margin None: no sentence clause."""
    rule = {**SHIPPED_RULE, "noise_margin": margin if rank else None, "sentence_margin": sentence_margin}
    floor = data["probes"][rank - 1] if rank else None
    wrong = real = passed = off = 0
    for row in data["rows"]:
        if split and row["split"] != split:
            continue
        given = [replace(p, noise_floor=floor, sentence_floor=data["sentence_floor"]) for p in row["passages"]]
        ok = decide(given, **rule).passed
        if row["kind"] == "real":
            real, wrong = real + 1, wrong + (not ok)
        else:
            off, passed = off + 1, passed + ok
    return wrong, real, passed, off


def choose(dev: list[tuple[dict[str, Any], str | None]]) -> tuple[int, float, dict[str, int]]:
    errors = {(r, m): sum(w + p for w, _, p, _ in (tally(d, r, m, split) for d, split in dev))
              for r in RANKS for m in MARGINS}
    best = min(errors.values())
    runs = []
    for r in RANKS:
        run: list[float] = []
        for m in MARGINS + [None]:
            if m is not None and errors[(r, m)] == best:
                run.append(m)
            elif run:
                runs.append((len(run), r, run[(len(run) - 1) // 2]))
                run = []
    _, rank, margin = max(runs, key=lambda x: (x[0], -x[1]))
    return rank, margin, {f"{r}:{m}": e for (r, m), e in errors.items()}


def choose_sentence_margin(dev: list[tuple[dict[str, Any], str | None]],
                           shipped: tuple[int, float | None]) -> tuple[float, dict[str, int]]:
    """The sentence margin with the fewest dev errors under the shipped floor clause, ties to the largest."""
    errors = {m: sum(w + p for w, _, p, _ in (tally(d, *shipped, split, m) for d, split in dev))
              for m in SENTENCE_MARGINS}
    best = min(errors.values())
    return max(m for m, e in errors.items() if e == best), {f"{m:.2f}": e for m, e in errors.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dev", action="append", default=[], metavar="NAME=DB", help="an unseen manual used as dev")
    parser.add_argument("--sentence-dev", action="append", default=[], metavar="NAME=DB",
                        help="a manual used as dev for the sentence margin only")
    parser.add_argument("--unseen", action="append", default=[], metavar="NAME=DB", help="a manual reported only")
    args = parser.parse_args()
    info = machine()
    sets = {"postgresql": "var/oos/postgresql.db", "python": "var/oos/python.db", "cmcp": "var/eval.db"}
    dev_names = ["postgresql", "python", "cmcp"] + [spec.split("=", 1)[0] for spec in args.dev]
    sentence_dev = [spec.split("=", 1)[0] for spec in args.sentence_dev]
    sets |= dict(spec.split("=", 1) for spec in args.dev + args.sentence_dev + args.unseen)
    data = {name: measure(name, str(REPO / db) if not db.startswith("/") else db) for name, db in sets.items()}
    dev = [(data[n], "dev" if n in ("postgresql", "python") else None) for n in dev_names]
    rank, margin, grid = choose(dev)
    shipped = (FLOOR_RANK, SHIPPED_RULE["noise_margin"])
    sentence_shipped = SHIPPED_RULE["sentence_margin"]
    sentence_margin, sentence_grid = choose_sentence_margin(dev + [(data[n], None) for n in sentence_dev], shipped)
    lines = ["# The Gate's noise-floor clauses (benchmarks/gate_noise_floor.py)", "",
             f"{info['date']} · {info['machine']} · commit {_commit()} · load {info['load_avg_1m_at_start']} · "
             f"dev sets: {', '.join(dev_names)}; dev for the sentence margin only: {', '.join(sentence_dev) or 'none'}",
             "", f"Floor clause, chosen on dev data (fewest wrong refusals + off-topic passes, then the middle of the "
             f"widest run of margins): the probes' **{rank}. best cosine + {margin}**; shipped: {shipped[0]}. best + "
             f"{shipped[1]}.", "", "Dev errors (wrong + off-topic passed) by floor rank and margin:", "",
             "| rank | " + " | ".join(f"{m:.2f}" for m in MARGINS) + " |", "|---|" + "---:|" * len(MARGINS)]
    lines += [f"| {r} | " + " | ".join(str(grid[f'{r}:{m}']) for m in MARGINS) + " |" for r in RANKS]
    lines += ["", f"Sentence clause, chosen with the shipped floor clause on the dev sets and the sentence-dev ones "
              f"(fewest errors, ties to the largest margin): **sentence floor + {sentence_margin}**; shipped: + "
              f"{sentence_shipped}. Dev errors by margin:", "",
              "| margin | " + " | ".join(sentence_grid) + " |", "|---|" + "---:|" * len(sentence_grid),
              "| errors | " + " | ".join(str(e) for e in sentence_grid.values()) + " |"]
    rules = {"evidence rule alone": (None, None, None), "stop 41: best + 0.155": (1, 0.155, None),
             "stop 42: floor clause": (*shipped, None), "shipped: + sentence clause": (*shipped, sentence_shipped)}
    lines += ["", "Every set: wrong refusals · off-topic refused (dev sets marked *, sentence-dev †):", "",
              "| set | probes best / 3rd | sentence floor | " + " | ".join(rules) + " |", "|---|---|---|" + "---|" * len(rules)]
    report: dict[str, Any] = {}
    held = {rule: [0, 0, 0, 0] for rule in rules}
    for name, d in data.items():
        for split in (("dev", "test") if name in ("postgresql", "python") else (None,)):
            cells = []
            for rule, (r, m, sm) in rules.items():
                counts = tally(d, r, m, split, sm)
                cells.append(f"{counts[0]}/{counts[1]} · {counts[3] - counts[2]}/{counts[3]}")
                if not (name in dev_names and split != "test") and name not in sentence_dev:
                    held[rule] = [a + b for a, b in zip(held[rule], counts)]
            label = f"{name} {split}" if split else name
            star = "*" if name in dev_names and split != "test" else "†" if name in sentence_dev else ""
            report[label] = cells
            sentence = f"{d['sentence_floor']:.3f}" if d["sentence_floor"] is not None else "none"
            lines.append(f"| {label}{star} | {d['probes'][0]:.3f} / {d['probes'][2]:.3f} | {sentence} | "
                         + " | ".join(cells) + " |")
    lines.append("| **held out, all** | | | " + " | ".join(f"{w}/{n} · {o - p}/{o}" for w, n, p, o in held.values())
                 + " |")
    write_results("gate_noise_floor", {"machine": info, "chosen": {"rank": rank, "margin": margin,
                                                                   "sentence_margin": sentence_margin},
                                       "shipped": {"rank": shipped[0], "margin": shipped[1],
                                                   "sentence_margin": sentence_shipped},
                                       "dev_errors": grid, "sentence_dev_errors": sentence_grid,
                                       "sets": report, "held_out": held}, "\n".join(lines) + "\n")


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=REPO).stdout.strip()


if __name__ == "__main__":
    main()

"""The Gate's name clause (stop 53): a question naming something its collection never mentions needs a learned
score of `gate_name_margin`, not 0, and since stop 54 that margin for each such name (gate_rule.NAMES_ADD_UP;
deployments/gate_rule.py); since stop 55 a word that starts in lower case with a capital after ("iPhone") is a name
too (gate_rule.CAMEL_NAMES). Chosen on dev data, reported held out; the report also replays stop 53's form.

    .venv/bin/python benchmarks/gate_names.py --dev frr=/tmp/frr.db ... --held pika=/tmp/pika.db ...

Sets: the PostgreSQL and Python halves (var/oos, `make corpora`; dev halves as dev, test halves held out), the cMCP
dev eval (var/eval.db, `python -m evals.build_index`; dev) and the manuals of benchmarks/oos/unseen/questions.jsonl
given as NAME=DB (the collection is NAME). Each real question of a set is asked, and its off-topic ones: for the
halves their off_topic.jsonl, for cMCP its off_topic cases, for a manual the 8 everyday questions of
questions.jsonl; on every set also the fresh off-topic questions of off_topic_fresh*.jsonl (never fitted on). Each
question is searched as the Retriever does (the passages ranking, the first GATE_PASSAGES chunks, each with its
collection's floors and the question's words the collection never uses) and decided by
deployments.gate_rule.decide with the shipped settings and the name margin at each value of MARGINS (None: the
clause off, as before stop 53). The rule that chose the shipped margin: the largest of MARGINS that refuses no more
real dev questions than the clause off ("chosen" in the report). Writes benchmarks/results/gate_names.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.gate_noise_floor import _commit  # noqa: E402
from benchmarks.oos.questions import fresh_off_topic, off_topic, questions  # noqa: E402
from benchmarks.unseen_manuals import gate_passages  # noqa: E402
from deployments import gate_rule  # noqa: E402
from deployments.gate_rule import decide  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.noise_floor import collection_floors  # noqa: E402
from docindex.ranking import RANKINGS  # noqa: E402
from evals.cases import load_cases  # noqa: E402
from serve_app.settings import Settings  # noqa: E402

MARGINS = (None, 0.5, 1.0, 1.5, 2.0, 3.0)
UNSEEN = REPO / "benchmarks/oos/unseen/questions.jsonl"


RULE = Settings().gate_rule()


def asked(db: str, collection: str, items: list[tuple[str, str]]) -> list[dict]:
    """Per (kind, question): the Gate's passages, the clause-free decision and score, and the names its collection
    never uses."""
    index = Index(db, ranking=RANKINGS["passages"])
    floors = collection_floors(index, collection)
    out = []
    for kind, question in items:
        found = gate_passages(index, question, collection, floors)
        decision = decide(found, **{**RULE, "name_margin": 0.0}, question=question)
        out.append({"kind": kind, "q": question, "found": found, "passed": decision.passed, "score": decision.score,
                    "absent": list(decision.absent)})
    return out


def passes(row: dict, margin: float | None, add_up: bool | None = None, camel: bool | None = None) -> bool:
    """The Gate's decision with name margin `margin` (None: the clause off), each absent name adding it
    (`add_up`, gate_rule.NAMES_ADD_UP; None: as shipped) or all of them needing it once (stop 53), and a word like
    "iPhone" a name (`camel`, gate_rule.CAMEL_NAMES; None: as shipped) or not (before stop 55)."""
    shipped = gate_rule.NAMES_ADD_UP, gate_rule.CAMEL_NAMES
    gate_rule.NAMES_ADD_UP = shipped[0] if add_up is None else add_up
    gate_rule.CAMEL_NAMES = shipped[1] if camel is None else camel
    try:
        return decide(row["found"], **{**RULE, "name_margin": margin}, question=row["q"]).passed
    finally:
        gate_rule.NAMES_ADD_UP, gate_rule.CAMEL_NAMES = shipped


def tally(rows: list[dict], margin: float | None, add_up: bool | None = None, camel: bool | None = None) -> dict:
    real = [r for r in rows if r["kind"] == "real"]
    off = [r for r in rows if r["kind"] != "real"]
    return {"real": len(real), "wrong": sum(not passes(r, margin, add_up, camel) for r in real),
            "off_topic": len(off), "off_topic_passed": sum(passes(r, margin, add_up, camel) for r in off)}


def sets(dev_manuals: list[str], held_manuals: list[str]) -> dict[str, tuple[str, list[dict]]]:
    fresh = [("fresh", q) for qs in fresh_off_topic().values() for q in qs]
    unseen = [json.loads(line) for line in UNSEEN.read_text().splitlines() if line]
    everyday = [("off", r["q"]) for r in unseen if r["c"] == "off"]
    out: dict[str, tuple[str, list[dict]]] = {}
    for corpus in ("postgresql", "python"):
        for split in ("dev", "test"):
            items = ([("real", q["question"]) for q in questions(corpus, split)]
                     + [("off", q["question"]) for q in off_topic(corpus, split)] + fresh)
            out[f"{corpus} {split}"] = ("dev" if split == "dev" else "held", asked(
                str(REPO / f"var/oos/{corpus}.db"), corpus, items))
    cases = [("real" if c.kind in ("factual", "two_source") else "off", c.question) for c in load_cases()
             if c.kind != "unanswerable"]
    out["cmcp"] = ("dev", asked(str(REPO / "var/eval.db"), "cmcp", cases + fresh))
    for part, manuals in (("dev", dev_manuals), ("held", held_manuals)):
        for spec in manuals:
            name, db = spec.split("=", 1)
            items = [("real", r["q"]) for r in unseen if r["c"] == name] + everyday + fresh
            out[name] = (part, asked(db, name, items))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", action="append", default=[], metavar="NAME=DB", help="a dev manual")
    parser.add_argument("--held", action="append", default=[], metavar="NAME=DB", help="a held-out manual")
    args = parser.parse_args()
    shipped = RULE["name_margin"]
    data = sets(args.dev, args.held)
    by_set = {name: {"part": part, **{str(m): tally(rows, m) for m in MARGINS}} for name, (part, rows) in data.items()}
    pooled = {part: [r for p, rows in data.values() if p == part for r in rows] for part in ("dev", "held")}

    def per_margin(add_up: bool | None = None, camel: bool | None = None) -> dict[str, dict[str, dict]]:
        return {part: {str(m): tally(rows, m, add_up, camel) for m in MARGINS} for part, rows in pooled.items()}

    totals = per_margin()
    once = per_margin(add_up=False)         # stop 53's form: several absent names need the margin once
    uncameled = per_margin(camel=False)     # before stop 55: "iPhone" is no name
    once_by_set = {name: tally(rows, shipped, False) for name, (_, rows) in data.items()}
    named = {name: [{"kind": r["kind"], "q": r["q"], "score": round(r["score"], 3), "absent": r["absent"]}
                    for r in rows if r["absent"] and r["passed"]] for name, (_, rows) in data.items()}
    chosen = max(m for m in MARGINS if m is not None and totals["dev"][str(m)]["wrong"] == totals["dev"]["None"]["wrong"])
    payload = {"machine": machine(), "commit": _commit(), "shipped_margin": shipped, "chosen_margin": chosen,
               "margins": list(MARGINS),
               "names_add_up": gate_rule.NAMES_ADD_UP, "camel_names": gate_rule.CAMEL_NAMES, "totals": totals,
               "totals_names_once": once, "totals_no_camel_names": uncameled,
               "sets_names_once_at_shipped_margin": once_by_set, "sets": by_set,
               "passing_questions_with_absent_names": named}
    lines = ["# The Gate's name clause: a question naming what its collection never mentions needs a higher score", "",
             f"`benchmarks/gate_names.py` at {payload['commit']} on a {payload['machine']['machine']} "
             f"({payload['machine']['date']}, load {payload['machine']['load_avg_1m_at_start']}); shipped `gate_name_margin` = {shipped}, "
             f"chosen by the rule (the largest margin that refuses no more real dev questions): {chosen}. Each cell: real "
             "questions wrongly refused / asked; off-topic questions let through / asked.", "",
             "| sets | " + " | ".join("clause off" if m is None else f"margin {m:g}" for m in MARGINS) + " |",
             "|---|" + "---|" * len(MARGINS)]
    def cell(c: dict) -> str:
        return f"{c['wrong']}/{c['real']}; {c['off_topic_passed']}/{c['off_topic']}"

    for label, cells in [(f"**{p}** (all)", totals[p]) for p in ("dev", "held")] + \
                        [(f"{p} (all), each absent name counted once (stop 53)", once[p]) for p in ("dev", "held")] + \
                        [(f"{p} (all), \"iPhone\" no name (before stop 55)", uncameled[p]) for p in ("dev", "held")] + \
                        [(f"{n} ({s['part']})", s) for n, s in by_set.items()]:
        lines.append(f"| {label} | " + " | ".join(cell(cells[str(m)]) for m in MARGINS) + " |")
    lines += ["", f"At the shipped margin ({shipped}), each absent name adding it (since stop 54) against several "
              "needing it once (stop 53), per set where they differ:", ""]
    lines += [f"- {n}: {cell(once_by_set[n])} → {cell(s[str(shipped)])}" for n, s in by_set.items()
              if once_by_set[n] != s[str(shipped)]]
    lines += ["", "Real questions the clause-free Gate passes that name something their collection never mentions (score: the "
              "learned score; they pass with the clause while it is at least the margin):", ""]
    lines += [f"- {name}: {r['score']} {r['absent']} {r['q']}" for name, rows in named.items()
              for r in sorted(rows, key=lambda r: r["score"]) if r["kind"] == "real"]
    write_results("gate_names", payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""The Gate's noise-floor clause: which statistic of the probes' cosines, and which margin, chosen on dev data.

    .venv/bin/python benchmarks/gate_noise_floor.py --dev sdl=/tmp/sdl.db \
        --unseen exim=/tmp/exim.db --unseen apache=/tmp/apache.db ...

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
from docindex.noise_floor import FLOOR_RANK, PROBE_K, PROBES, probe_search  # noqa: E402
from docindex.ranking import RANKINGS  # noqa: E402
from serve_app.settings import Settings  # noqa: E402

UNSEEN = REPO / "benchmarks/oos/unseen/questions.jsonl"
MARGINS = [round(0.01 * m, 2) for m in range(8, 27)]
RANKS = (1, 2, 3, 4)


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


def measure(name: str, db: str) -> dict[str, Any]:
    index = Index(db, ranking=RANKINGS["passages"])
    probes = sorted((c for c in map(probe_search(index, name), PROBES) if c is not None), reverse=True)
    rows = []
    for split, kind, question in labelled(name):
        hits = index.search(question, PROBE_K, name)
        given = build_prompt(question, [Passage(h.source, h.text, h.cosine, h.bm25, h.fusion, h.anchor, h.title,
                                                coverage=h.coverage) for h in hits], PromptLimits(PROBE_K, 900))
        rows.append({"split": split, "kind": kind, "question": question, "passages": list(given.passages)})
    return {"probes": probes, "rows": rows}


def tally(data: dict[str, Any], rank: int | None, margin: float | None, split: str | None = None) -> tuple[int, int, int, int]:
    """wrong refusals, answerable, off-topic passed, off-topic; rank None: the evidence rule alone."""
    s = Settings(_env_file=None)
    floor = data["probes"][rank - 1] if rank else None
    wrong = real = passed = off = 0
    for row in data["rows"]:
        if split and row["split"] != split:
            continue
        given = [replace(p, noise_floor=floor) for p in row["passages"]]
        ok = decide(given, min_cosine=s.gate_min_cosine, coverage_weight=s.gate_coverage_weight,
                    min_evidence=s.gate_min_evidence, noise_margin=margin if rank else None).passed
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dev", action="append", default=[], metavar="NAME=DB", help="an unseen manual used as dev")
    parser.add_argument("--unseen", action="append", default=[], metavar="NAME=DB", help="a manual reported only")
    args = parser.parse_args()
    info = machine()
    sets = {"postgresql": "var/oos/postgresql.db", "python": "var/oos/python.db", "cmcp": "var/eval.db"}
    dev_names = ["postgresql", "python", "cmcp"] + [spec.split("=", 1)[0] for spec in args.dev]
    sets |= dict(spec.split("=", 1) for spec in args.dev + args.unseen)
    data = {name: measure(name, str(REPO / db) if not db.startswith("/") else db) for name, db in sets.items()}
    dev = [(data[n], "dev" if n in ("postgresql", "python") else None) for n in dev_names]
    rank, margin, grid = choose(dev)
    shipped = (FLOOR_RANK, Settings(_env_file=None).gate_noise_margin)
    lines = ["# The Gate's noise-floor clause (benchmarks/gate_noise_floor.py)", "",
             f"{info['date']} · {info['machine']} · commit {_commit()} · load {info['load_avg_1m_at_start']} · "
             f"dev sets: {', '.join(dev_names)}", "",
             f"Chosen on dev data (fewest wrong refusals + off-topic passes, then the middle of the widest run of "
             f"margins): the probes' **{rank}. best cosine + {margin}**; shipped: {shipped[0]}. best + {shipped[1]}.",
             "", "Dev errors (wrong + off-topic passed) by floor rank and margin:", "",
             "| rank | " + " | ".join(f"{m:.2f}" for m in MARGINS) + " |", "|---|" + "---:|" * len(MARGINS)]
    lines += [f"| {r} | " + " | ".join(str(grid[f'{r}:{m}']) for m in MARGINS) + " |" for r in RANKS]
    lines += ["", "Every set: wrong refusals · off-topic refused (dev sets marked *):", "",
              "| set | probes best / 3rd | evidence rule alone | stop 41: best + 0.155 | shipped |", "|---|---|---|---|---|"]
    report = {}
    for name, d in data.items():
        for split in (("dev", "test") if name in ("postgresql", "python") else (None,)):
            cells = []
            for rule in ((None, None), (1, 0.155), shipped):
                wrong, real, passed, off = tally(d, rule[0], rule[1], split)
                cells.append(f"{wrong}/{real} · {off - passed}/{off}")
            label = f"{name} {split}" if split else name
            star = "*" if name in dev_names and split != "test" else ""
            report[label] = cells
            lines.append(f"| {label}{star} | {d['probes'][0]:.3f} / {d['probes'][2]:.3f} | " + " | ".join(cells) + " |")
    write_results("gate_noise_floor", {"machine": info, "chosen": {"rank": rank, "margin": margin},
                                       "shipped": {"rank": shipped[0], "margin": shipped[1]}, "dev_errors": grid,
                                       "sets": report}, "\n".join(lines) + "\n")


def _commit() -> str:
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=REPO).stdout.strip()


if __name__ == "__main__":
    main()

"""A manual under AGGREGATE_RATIO times a page's size that holds several pages (stop 53, docindex/duplicates.py
`TwinFinder.holds`): the page ranking's MRR@10 with the test off and on, per set.

    .venv/bin/python benchmarks/page_holds.py --set ffmpeg=/tmp/ffmpeg.db --set kea=/tmp/kea.db ...

Sets: the PostgreSQL and Python halves (var/oos, `make corpora`; dev and test) and the manuals of
benchmarks/oos/unseen/questions.jsonl given as NAME=DB (the collection is NAME). Each question is searched as
`docindex search` does (the pages ranking, k = 10) twice, `holds` answering False for every document, then as
shipped; a question's rank is its gold page's (or an "also" page's) first place. Writes
benchmarks/results/page_holds.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.gate_noise_floor import _commit  # noqa: E402
from benchmarks.oos.questions import questions  # noqa: E402
from benchmarks.unseen_manuals import QUESTIONS, names  # noqa: E402
from docindex import duplicates  # noqa: E402
from docindex.index import Index  # noqa: E402
from docindex.ranking import RANKINGS, SEARCH_RANKING  # noqa: E402


def ranks(db: str, collection: str, asked: list[tuple[str, set[str]]]) -> list[int | None]:
    index = Index(db, ranking=RANKINGS[SEARCH_RANKING])
    out = []
    for question, wanted in asked:
        paths = [h.source for h in index.search(question, k=10, collection=collection)]
        out.append(next((i for i, s in enumerate(paths, 1) if names(s.removesuffix(".gz"), wanted)), None))
    return out


def mrr(found: list[int | None]) -> float:
    return round(sum(1 / r for r in found if r) / len(found), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", default=[], metavar="NAME=DB", help="a manual")
    args = parser.parse_args()
    unseen = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line]
    sets: list[tuple[str, str, str, list[tuple[str, set[str]]]]] = []
    for corpus in ("postgresql", "python"):
        for split in ("dev", "test"):
            sets.append((f"{corpus} {split}", str(REPO / f"var/oos/{corpus}.db"), corpus,
                         [(q["question"], {q["gold"].rsplit("/", 1)[-1], *(a.rsplit("/", 1)[-1] for a in q["also"])})
                          for q in questions(corpus, split)]))
    for spec in args.set:
        name, db = spec.split("=", 1)
        sets.append((name, db, name, [(r["q"], {r["gold"], *r.get("also", [])}) for r in unseen if r["c"] == name]))
    shipped = duplicates.TwinFinder.holds
    rows: dict[str, Any] = {}
    for name, db, collection, asked in sets:
        duplicates.TwinFinder.holds = lambda self, doc: False      # type: ignore[method-assign]
        off = ranks(db, collection, asked)
        duplicates.TwinFinder.holds = shipped                      # type: ignore[method-assign]
        on = ranks(db, collection, asked)
        rows[name] = {"questions": len(asked), "mrr_off": mrr(off), "mrr_on": mrr(on),
                      "first_off": sum(r == 1 for r in off), "first_on": sum(r == 1 for r in on),
                      "changed": [{"q": q, "off": a, "on": b} for (q, _), a, b in zip(asked, off, on) if a != b]}
        print(name, rows[name]["mrr_off"], rows[name]["mrr_on"], file=sys.stderr, flush=True)
    payload = {"machine": machine(), "commit": _commit(), "sets": rows}
    lines = ["# A manual under 4× a page's size that holds several pages (docindex/duplicates.py TwinFinder.holds)", "",
             f"`benchmarks/page_holds.py` at {payload['commit']} on a {payload['machine']['machine']} "
             f"({payload['machine']['date']}, load {payload['machine']['load_avg_1m_at_start']}). The pages ranking, "
             "k = 10; `holds` answering False (off) or as shipped (on).", "",
             "| set | questions | MRR@10 off | MRR@10 on | first off / on | questions whose rank moved |",
             "|---|---|---|---|---|---|"]
    for name, r in rows.items():
        moved = "; ".join(f"{c['off']} → {c['on']}" for c in r["changed"]) or "–"
        lines.append(f"| {name} | {r['questions']} | {r['mrr_off']} | {r['mrr_on']} | {r['first_off']} / "
                     f"{r['first_on']} | {moved} |")
    write_results("page_holds", payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

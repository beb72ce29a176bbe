"""A second noise floor from questions about other vendors' products (stop 54): measured, not built.

    .venv/bin/python benchmarks/gate_vendor_floor.py --dev NAME=DB ... --held NAME=DB ...

The Gate's noise floor (docindex/noise_floor.py) is the third best cosine that 40 everyday questions reach in a
collection. FFmpeg's manual still lets 10 of 152 off-topic questions through, most about another vendor's product
("How do I stop YouTube from autoplaying …?"), which meets a media manual closer than everyday ones do. Here the floor
is the higher of that one and the RANK-th best cosine of VENDOR_PROBES (20 questions about consumer products, written
for this, none naming a product that benchmarks/oos/unseen/off_topic_fresh*.jsonl names; checked at the start) less
DELTA, for its passages' cosine and its sentences' alike; the Gate (deployments.gate_rule.decide, shipped settings)
then decides every question of benchmarks/gate_names.py's sets again. Writes benchmarks/results/gate_vendor_floor.{json,md}.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks import gate_names  # noqa: E402
from benchmarks.docindex_common import machine, write_results  # noqa: E402
from benchmarks.gate_noise_floor import _commit  # noqa: E402
from benchmarks.oos.questions import fresh_off_topic  # noqa: E402
from deployments.gate_rule import question_names  # noqa: E402
from docindex import noise_floor  # noqa: E402

VENDOR_PROBES = (
    "How do I add a new channel to my Roku?",
    "How do I pause my Peloton membership for a month?",
    "How do I get a refund from Airbnb if the host cancels?",
    "How do I change my background in a Zoom meeting?",
    "How do I start streaming on Twitch from my laptop?",
    "How do I change the narration speed in Audible?",
    "How do I earn stars faster with the Starbucks app?",
    "How do I make a secret board on Pinterest?",
    "How do I get my Duolingo streak back after missing a day?",
    "How do I contact a seller on Etsy about a late order?",
    "How do I clean the filter of my Dyson vacuum?",
    "How do I update the firmware on my GoPro camera?",
    "How do I change the dates of a hotel booked on Expedia?",
    "How do I turn off autoplay previews on Hulu?",
    "How do I change my username on Reddit?",
    "How do I hide my activity from my connections on LinkedIn?",
    "How do I see the songs I identified with Shazam?",
    "How do I reset my matches on Tinder?",
    "How do I avoid toll roads in Waze?",
    "How do I redeem a Groupon voucher at a restaurant?",
)
CONFIGS = [(rank, delta) for rank in (3, 5) for delta in (0.0, 0.01, 0.02, 0.03, 0.05)]


def vendor_cosines() -> dict[str, tuple[noise_floor.Floors, list[tuple[float | None, float | None]]]]:
    """Wraps gate_names' floors so each collection's vendor-probe cosines are kept beside its shipped floors."""
    kept: dict[str, tuple[noise_floor.Floors, list[tuple[float | None, float | None]]]] = {}
    shipped = gate_names.collection_floors

    def floors(index, collection, ranking=None):
        found = shipped(index, collection, ranking)
        search = noise_floor.probe_hits(index, collection, ranking)
        kept[collection] = (found, [noise_floor.best_cosines(search(p)) for p in VENDOR_PROBES])
        return found
    gate_names.collection_floors = floors
    return kept


def raised(floors: noise_floor.Floors, vendor: list[tuple[float | None, float | None]], rank: int,
           delta: float) -> tuple[float, float | None]:
    def floor(shipped: float | None, values: list[float | None]) -> float | None:
        found = sorted((v for v in values if v is not None), reverse=True)
        return shipped if shipped is None or len(found) < rank else max(shipped, found[rank - 1] - delta)
    cosine = floor(floors.cosine, [v[0] for v in vendor])
    return cosine if cosine is not None else floors.cosine, floor(floors.sentence, [v[1] for v in vendor])


def tally(rows: list[dict], floors: tuple[float, float | None] | None) -> dict:
    """gate_names.tally at the shipped margin, over `rows` whose passages carry `floors` (None: as sent)."""
    if floors is not None:
        rows = [{**row, "found": [dataclasses.replace(
            p, noise_floor=floors[0] if p.noise_floor is not None else None,
            sentence_floor=floors[1] if p.sentence_floor is not None else None) for p in row["found"]]}
                for row in rows]
    return gate_names.tally(rows, gate_names.RULE["name_margin"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dev", action="append", default=[], metavar="NAME=DB")
    parser.add_argument("--held", action="append", default=[], metavar="NAME=DB")
    args = parser.parse_args()
    named = {n.lower() for qs in fresh_off_topic().values() for q in qs for n in question_names(q)}
    overlap = sorted({n for p in VENDOR_PROBES for n in question_names(p) if n.lower() in named})
    kept = vendor_cosines()
    data = gate_names.sets(args.dev, args.held)
    collection = {name: name.split()[0] for name in data}       # "postgresql dev" -> postgresql; a manual: its name
    labels = ["shipped", *(f"rank {r}, delta {d:g}" for r, d in CONFIGS)]
    by_set: dict[str, dict[str, dict]] = {}
    for name, (part, rows) in data.items():
        floors, vendor = kept[collection[name]]
        by_set[name] = {"part": part, "shipped": tally(rows, None),
                        **{f"rank {r}, delta {d:g}": tally(rows, raised(floors, vendor, r, d)) for r, d in CONFIGS}}
    totals = {part: {label: {key: sum(s[label][key] for s in by_set.values() if s["part"] == part)
                             for key in ("real", "wrong", "off_topic", "off_topic_passed")} for label in labels}
              for part in ("dev", "held")}
    payload = {"machine": machine(), "commit": _commit(), "vendor_probes": VENDOR_PROBES,
               "names_shared_with_the_fresh_sets": overlap, "totals": totals, "sets": by_set}

    def cell(c: dict) -> str:
        return f"{c['wrong']}/{c['real']}; {c['off_topic_passed']}/{c['off_topic']}"

    lines = ["# A noise floor from other vendors' products (stop 54, measured, not built)", "",
             f"`benchmarks/gate_vendor_floor.py` at {payload['commit']} ({payload['machine']['date']}). Each cell: real "
             "questions wrongly refused / asked; off-topic let through / asked. Names the probes share with the fresh "
             f"off-topic sets: {', '.join(overlap) or 'none'}.", "",
             "| sets | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for label, cells in [(f"**{p}** (all)", totals[p]) for p in ("dev", "held")] + \
                        [(f"{n} ({s['part']})", s) for n, s in by_set.items()]:
        lines.append(f"| {label} | " + " | ".join(cell(cells[k]) for k in labels) + " |")
    write_results("gate_vendor_floor", payload, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

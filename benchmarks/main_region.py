"""Stop 56: the text outside a page's `<main>` read as the site's (docindex/html_main.py), measured and not shipped
(`html_reader.MAIN_ONLY` stays False).

    .venv/bin/python benchmarks/main_region.py NAME=DIR ... [--ingest --out /tmp/main_region] [--name main_region]

Per manual (a folder of HTML pages; NAME is its collection in benchmarks/oos/unseen/questions.jsonl):
- every page read both ways (`_sources/`, `_modules/`, `_static/` left out, as ingest does in a Sphinx build): how
  many mark a main region, how many read otherwise with the rule, the texts it removes most often;
- with `--ingest`, where the rule reads a page otherwise, the folder ingested both ways (OUT/off/NAME.db, OUT/on/NAME.db) and
  `benchmarks/unseen_manuals.py --answers` run on each: the gold page first / in the top 5 / MRR@10, the share of the
  reference answers' words in the answers and in the best passage, real questions the Gate refused, off-topic ones
  it let through.

Writes benchmarks/results/<name>.{json,md}.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.docindex_common import machine, write_results  # noqa: E402
from docindex import html_reader  # noqa: E402
from docindex.bounds import NotADocument  # noqa: E402
from docindex.html_main import MAIN  # noqa: E402

SKIPPED = ("_sources", "_modules", "_static")
SUMMARY = ("first", "top5", "mrr@10", "gold_in_answer", "gold_in_best_passage", "gate_wrong_refusals")


def pages(folder: Path) -> list[Path]:
    return sorted(Path(root) / name for root, dirs, names in os.walk(folder) if not set(Path(root).parts) & set(SKIPPED)
                  for name in names if name.endswith((".html", ".htm", ".html.gz")))


def text_of(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8", "replace")


def read(text: str, main_only: bool) -> list[tuple[str, str]] | None:
    html_reader.MAIN_ONLY = main_only
    try:
        return [(block.kind, block.text) for block in html_reader.parse_html(text).blocks]
    except NotADocument:
        return None
    finally:
        html_reader.MAIN_ONLY = False


def scan(folder: Path) -> dict:
    """The pages of `folder` read without and with the rule."""
    from selectolax.lexbor import LexborHTMLParser

    read_pages = marked = changed = 0
    removed: Counter[str] = Counter()
    for path in pages(folder):
        text = text_of(path)
        before, after = read(text, False), read(text, True)
        if before is None or after is None:
            continue
        read_pages += 1
        marked += LexborHTMLParser(text).css_first(MAIN) is not None
        if before != after:
            changed += 1
            left = Counter(after)
            for block in before:
                if left[block]:
                    left[block] -= 1
                else:
                    removed[block[1][:80]] += 1
    return {"pages": read_pages, "main_marked": marked, "changed": changed, "removed_most": removed.most_common(5)}


def measured(name: str, folder: Path, out: Path) -> dict:
    """The manual ingested without and with the rule, and asked its questions on each."""
    from docindex.ingest import ingest

    result = {}
    for mode, main_only in (("off", False), ("on", True)):
        db = out / mode / f"{name}.db"
        db.parent.mkdir(parents=True, exist_ok=True)
        for stale in db.parent.glob(f"{name}.db*"):
            stale.unlink()
        html_reader.MAIN_ONLY = main_only
        try:
            ingest([folder], db, name)
        finally:
            html_reader.MAIN_ONLY = False
        run = subprocess.run([sys.executable, str(REPO / "benchmarks/unseen_manuals.py"), "--db", str(db),
                              "--collection", name, "--answers"], capture_output=True, text=True, check=True)
        summary = json.loads(run.stdout.splitlines()[-1])
        result[mode] = {key: summary[key] for key in SUMMARY} | {
            "off_topic_passed": sum(int(total) - int(refused) for refused, total in
                                    (value.split("/") for value in [summary["off_topic_refused"],
                                                                    *summary["fresh_off_topic_refused"].values()]))}
    return result


def markdown(payload: dict) -> str:
    lines = ["# The text outside a page's main region (docindex/html_main.py), measured and not shipped", "",
             f"`benchmarks/main_region.py` at {payload['commit']} on a {payload['machine']['machine']} "
             f"({payload['machine']['date']}, load {payload['machine']['load_avg_1m_at_start']} at the start).", "",
             "| manual | pages | main marked | read otherwise | removed most often | off → on: first / top 5 / MRR; "
             "answer words; Gate wrong; off-topic passed |", "|---|---|---|---|---|---|"]
    for name, row in payload["manuals"].items():
        scanned = row["scan"]
        cell = "; ".join(f"{text!r} {count}".replace("|", "\\|") for text, count in scanned["removed_most"])
        runs = ""
        if "ingested" in row:
            off, on = row["ingested"]["off"], row["ingested"]["on"]
            runs = (f"{off['first']}/{off['top5']}/{off['mrr@10']:.3f} → {on['first']}/{on['top5']}/{on['mrr@10']:.3f}; "
                    f"{off['gold_in_answer']:.3f} → {on['gold_in_answer']:.3f}; {off['gate_wrong_refusals']} → "
                    f"{on['gate_wrong_refusals']}; {off['off_topic_passed']} → {on['off_topic_passed']}")
        lines.append(f"| {name} | {scanned['pages']} | {scanned['main_marked']} | {scanned['changed']} | {cell} | {runs} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("manuals", nargs="+", metavar="NAME=DIR")
    parser.add_argument("--ingest", action="store_true", help="also ingest each manual the rule changes both ways and ask its questions")
    parser.add_argument("--out", type=Path, default=Path("/tmp/main_region"), help="where --ingest builds its indexes")
    parser.add_argument("--name", default="main_region", help="result file stem")
    args = parser.parse_args()
    info = machine()
    manuals = {}
    for spec in args.manuals:
        name, folder = spec.split("=", 1)
        manuals[name] = {"scan": scan(Path(folder))}
        if args.ingest and manuals[name]["scan"]["changed"]:      # else both builds are the same
            manuals[name]["ingested"] = measured(name, Path(folder), args.out)
        print(json.dumps({name: manuals[name]}), flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    payload = {"machine": info, "commit": commit.strip(), "manuals": manuals}
    write_results(args.name, payload, markdown(payload))


if __name__ == "__main__":
    main()

"""Out-of-sample retrieval: the project's search as shipped vs whole-document BM25.

    .venv/bin/python benchmarks/retrieval_oos.py --corpus postgresql [--split dev|test|all]

Needs `make corpora` (the pinned corpora and var/oos/<corpus>.db); the
baseline index is built on first use and reused. Per question, in one run:

* ours: `docindex.index.Index(db, ranking=RANKINGS[SEARCH_RANKING]).search(question,
  k=50, collection)`, in process, the call `docindex search --json` makes with its
  default `--rank pages` (checked: the CLI's chunk ids for one question must equal
  ours). Chunks are deduplicated by source in rank order into a document ranking.
* what the answer gets: the same search with the passages ranking (Index.search's
  default, the MCP search tools the Retriever calls): chunk recall@4 and the Gate.
* baseline: FTS5 bm25() over one row per whole document (benchmarks/oos/baseline.py).

Metrics (benchmarks/oos/metrics.py): distinct-document recall@1/3/5/10,
MRR@10, nDCG@10, and for ours chunk recall@4 (a gold page among the first 4
chunks, what the model receives), each with a 95 % bootstrap CI (2,000
resamples, fixed seed) and the paired difference to the baseline. Search
latency P50/P95 for both. The Gate out of sample: best cosine, coverage and
fusion among the first 4 chunks for answerable and off-topic questions, and
what the shipped Gate (serve_app/settings.py defaults: cosine floor, coverage,
sure cosine) and the cosine floor alone refuse.

Results: benchmarks/results/retrieval_oos_<corpus>_<split>.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

if str(Path(__file__).resolve().parents[1]) not in sys.path:   # after PYTHONPATH: a docindex given there wins
    sys.path.append(str(Path(__file__).resolve().parents[1]))

from benchmarks.docindex_common import REPO, machine, percentiles, write_results  # noqa: E402
from benchmarks.oos import metrics  # noqa: E402
from benchmarks.oos.baseline import WholeDocumentBM25  # noqa: E402
from benchmarks.oos.corpus import CORPORA  # noqa: E402
from benchmarks.oos.questions import off_topic, questions  # noqa: E402
from docindex.ranking import DEFAULT_RANKING, RANKINGS, SEARCH_RANKING  # noqa: E402

CHUNKS = 50            # chunks asked for: enough to fill 10 distinct documents


def shipped_gate() -> dict[str, float | None]:
    """The Gate's shipped settings (serve_app/settings.py defaults)."""
    from deployments.gate_rule import GateRule
    from serve_app.settings import Settings

    fields = Settings.model_fields
    return {name: fields[f"gate_{name}"].default for name in GateRule.__required_keys__}


def gate_passes(passages: list[tuple], absent: Sequence[str] = (), **rule: float | None) -> bool:
    """deployments.gate_rule.decide (the Gate's rule, Ray-free) over (cosine, coverage[, noise floor[, sentence
    cosine, sentence floor]]) tuples (what a tuple leaves out: not sent); `absent`: the question's names
    its collection never uses, as recorded (`run_ours`), replayed as a question naming them."""
    from deployments.gate_rule import decide
    from deployments.passage import Passage

    full = [(*p, None, None, None)[:5] for p in passages]
    return decide([Passage(source="", text="", cosine=c, coverage=v, noise_floor=f, sentence_cosine=sc,
                           sentence_floor=sf, unknown_terms=tuple(absent)) for c, v, f, sc, sf in full], **rule,
                  question=" ".join(["Q", *absent])).passed


def run_ours(index, question: str, collection: str, ranking=None) -> dict:
    from deployments.gate_rule import absent_names
    from deployments.passage import Passage
    from docindex.noise_floor import Floors, collection_floors

    started = time.perf_counter()
    hits = index.search(question, k=CHUNKS, collection=collection, ranking=ranking, sentences=ranking is not None)
    elapsed = (time.perf_counter() - started) * 1e3
    model = hits[:metrics.CHUNKS_TO_MODEL]
    floors = collection_floors(index, collection, ranking) if ranking is not None else Floors(0.0, None)
    return {"ms": elapsed, "chunk_ids": [h.chunk_id for h in hits], "sources": [h.source for h in hits],
            "gate_passages": [(h.cosine, h.coverage, floors.cosine if ranking is not None else None,
                               h.sentence_cosine, floors.sentence) for h in model],
            "gate_absent": list(absent_names(question, [Passage(h.source, h.text, h.cosine,
                                                                unknown_terms=h.unknown_terms) for h in model])),
            "best_cosine": max((h.cosine for h in model), default=None),
            "best_coverage": max((h.coverage for h in model), default=None),
            "best_fusion": max((h.fusion for h in model), default=None)}


def cli_matches(db: Path, collection: str, question: str, chunk_ids: list[int]) -> bool:
    """`docindex search --json` returns the same chunks, in the same order, as the in-process call."""
    import docindex

    code_root = str(Path(docindex.__file__).resolve().parents[1])     # the same docindex as in process
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [code_root, os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-m", "docindex.cli", "search", question, "--db", str(db.resolve()),
                          "-c", collection, "-k", str(CHUNKS), "--json"],
                         capture_output=True, text=True, check=True, env=env, cwd=code_root).stdout
    return [hit["chunk_id"] for hit in json.loads(out)] == chunk_ids


def score(qs: list[dict], ours: list[dict], base: list[list[str]], passages: list[dict]) -> dict:
    """Document metrics from `ours` (pages), chunk recall@4 from `passages` (what the answer gets)."""
    per_ours, per_base = [], []
    for q, o, b, c in zip(qs, ours, base, passages):
        relevant = {q["gold"], *q["also"]}
        per_ours.append(metrics.per_question(metrics.distinct(o["sources"])[:10], relevant, c["sources"]))
        per_base.append(metrics.per_question(b[:10], relevant, None))
    table = {}
    for name in per_ours[0]:
        a = [p[name] for p in per_ours]
        row = {"ours": metrics.bootstrap_ci(a)}
        if name in per_base[0]:
            b = [p[name] for p in per_base]
            row["baseline"] = metrics.bootstrap_ci(b)
            row["difference"] = metrics.paired_ci(a, b)
        table[name] = {k: [round(x, 4) for x in v] for k, v in row.items()}
    return {"table": table, "per_question": [
        {"id": q["id"], "gold": q["gold"], "ours": metrics.distinct(o["sources"])[:10], "baseline": b[:10],
         "ours_rank": metrics.first_hit(metrics.distinct(o["sources"]), {q["gold"], *q["also"]}),
         "baseline_rank": metrics.first_hit(b, {q["gold"], *q["also"]}),
         "best_cosine": o["best_cosine"]} for q, o, b in zip(qs, ours, base)]}


def gate_report(answerable: list[dict], off: list[dict]) -> dict:
    shipped = shipped_gate()
    report: dict = {"settings": shipped, "scored_over": f"first {metrics.CHUNKS_TO_MODEL} chunks",
                    "decision": "deployments.gate_rule.decide"}
    for score_name in ("best_cosine", "best_coverage", "best_fusion"):
        pos = [o[score_name] for o in answerable if o[score_name] is not None]
        neg = [o[score_name] for o in off if o[score_name] is not None]
        report[score_name] = {"answerable": metrics.spread(pos), "off_topic": metrics.spread(neg),
                              "auc_answerable_vs_off_topic": round(metrics.auc(pos, neg), 4)}
    clauses = {**shipped, "score_weights": None}
    rules = {"shipped": shipped, "no name clause (before stop 53)": {**shipped, "name_margin": None},
             "clauses (before stop 47)": clauses,
             "no sentence floor (before stop 43)": {**clauses, "sentence_margin": None},
             "evidence alone (no noise floor; before stop 41)": {**clauses, "noise_margin": None, "sentence_margin": None},
             "cosine only": {"min_cosine": shipped["min_cosine"]}}
    report["rules"] = {}
    for rule, kwargs in rules.items():
        refused = [o["id"] for o in answerable if not gate_passes(o["gate_passages"], o["gate_absent"], **kwargs)]
        passed = [o["id"] for o in off if gate_passes(o["gate_passages"], o["gate_absent"], **kwargs)]
        report["rules"][rule] = {"answerable_refused": len(refused), "answerable": len(answerable),
                                 "off_topic_refused": len(off) - len(passed), "off_topic": len(off),
                                 "answerable_refused_ids": refused, "off_topic_passed_ids": passed}
    return report


def provenance(index, name: str) -> dict:
    import docindex

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True).stdout.strip()

    code = Path(docindex.__file__).resolve().parent
    stamp = code.parent / "COMMIT"      # a `git archive` snapshot of docindex/ carries its commit here
    source = (f"git archive of {stamp.read_text().strip()} at {code}" if stamp.exists()
              else f"{code} (working tree{', uncommitted changes in docindex/' if git('status', '--porcelain', 'docindex') else ', clean'})")
    stats = index.stats()
    return {"commit": git("rev-parse", "HEAD"), "docindex_code": source, "db": str(index.path),
            "chunks": stats["chunks"], "documents": stats["documents"], "embed_model": stats["embed_model"],
            "ranking": asdict(index.ranking), "answer_ranking": asdict(DEFAULT_RANKING)}


def markdown(name: str, split: str, payload: dict) -> str:
    m, t, g = payload["machine"], payload["scores"]["table"], payload["gate"]
    lines = [f"# Out-of-sample retrieval: {name}, {split} split ({payload['questions']} questions)", "",
             f"{m['date']} · {m['machine']} · load {m['load_avg_1m_at_start']} at start · commit "
             f"{payload['provenance']['commit'][:10]} · docindex code: {payload['provenance']['docindex_code']} · "
             f"{payload['provenance']['chunks']} chunks in {payload['provenance']['documents']} documents · ranking "
             f"{payload['provenance']['ranking']}", "",
             f"Document metrics: `docindex search` ({'as shipped, --rank ' + SEARCH_RANKING if payload['shipped_ranking'] else 'candidate ranking above'}); "
             f"chunk_recall@{metrics.CHUNKS_TO_MODEL} and the Gate: the passages ranking the answer gets "
             f"({payload['provenance']['answer_ranking']}).", "",
             f"| metric | ours (hybrid, {'as shipped' if payload['shipped_ranking'] else 'candidate ranking above'}) "
             "| whole-doc BM25 | ours − BM25 |", "|---|---|---|---|"]
    fmt = lambda v: f"{v[0]:.3f} [{v[1]:.3f}, {v[2]:.3f}]"  # noqa: E731
    for metric, row in t.items():
        lines.append(f"| {metric} | {fmt(row['ours'])} | {fmt(row['baseline']) if 'baseline' in row else 'n/a'} | "
                     f"{fmt(row['difference']) if 'difference' in row else 'n/a'} |")
    lat = payload["latency_ms"]
    lines += ["", f"Search latency (ms, k={CHUNKS}): ours P50 {lat['ours']['p50']} P95 {lat['ours']['p95']}; "
              f"passages ranking P50 {lat['passages']['p50']} P95 {lat['passages']['p95']}; "
              f"BM25 P50 {lat['baseline']['p50']} P95 {lat['baseline']['p95']}. "
              f"`docindex search --json` equals the in-process call: {payload['cli_matches']}.", "",
              f"Gate over the first {metrics.CHUNKS_TO_MODEL} chunks ({g['decision']}); shipped settings "
              f"{g['settings']}:", "",
              "| rule | answerable refused (wrong) | off-topic refused |", "|---|---|---|"]
    for rule, r in g["rules"].items():
        lines.append(f"| {rule} | {r['answerable_refused']}/{r['answerable']} | "
                     f"{r['off_topic_refused']}/{r['off_topic']} |")
    lines += ["", "| score | answerable min / p5 / p50 / max | off-topic min / p50 / p95 / max | AUC |",
              "|---|---|---|---|"]
    for s in ("best_cosine", "best_coverage", "best_fusion"):
        a, o = g[s]["answerable"], g[s]["off_topic"]
        lines.append(f"| {s} | {a['min']} / {a['p5']} / {a['p50']} / {a['max']} | {o['min']} / {o['p50']} / "
                     f"{o['p95']} / {o['max']} | {g[s]['auc_answerable_vs_off_topic']} |")
    lines += ["", "CIs: 95 % percentile bootstrap, 2,000 resamples, fixed seed; differences are paired. "
              "Recall/MRR/nDCG over distinct documents (gold page or an accepted alternative); chunk_recall@4: "
              "a gold page among the first 4 chunks.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, choices=sorted(CORPORA))
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--rebuild-baseline", action="store_true", help="Rebuild the whole-document BM25 index.")
    parser.add_argument("--no-cli-check", action="store_true", help="Skip the `docindex search --json` check.")
    parser.add_argument("--db", type=Path, default=None, help="Index to score (default var/oos/<corpus>.db).")
    parser.add_argument("--name", default=None, help="Result file stem (default retrieval_oos_<corpus>_<split>).")
    parser.add_argument("--ranking", default=None, metavar="JSON",
                        help='Ranking knobs over the shipped default, e.g. \'{"doc_bm25_weight": 1}\' (dev only).')
    args = parser.parse_args()
    if args.ranking and args.split != "dev":
        sys.exit("retrieval_oos: --ranking is for tuning, on the dev half only")
    corpus = CORPORA[args.corpus]
    db = args.db or corpus.db
    if not db.exists():
        sys.exit(f"retrieval_oos: {db} missing: run `make corpora` first")
    from docindex.index import Index

    info = machine()
    qs, off = questions(args.corpus, args.split), off_topic(args.corpus, args.split)
    baseline = WholeDocumentBM25(corpus, rebuild=args.rebuild_baseline)
    pages = RANKINGS[SEARCH_RANKING]
    if args.ranking:
        pages = replace(pages, **json.loads(args.ranking))
        args.no_cli_check = True       # the CLI searches with the shipped ranking
    with Index(db, ranking=pages) as index:
        index.search("warm up", k=1, collection=args.corpus)
        ours = [{"id": q["id"], **run_ours(index, q["question"], args.corpus)} for q in qs]
        # what the Retriever gets: chunk recall@4, the Gate
        answer = [{"id": q["id"], **run_ours(index, q["question"], args.corpus, DEFAULT_RANKING)} for q in qs]
        off_answer = [{"id": q["id"], **run_ours(index, q["question"], args.corpus, DEFAULT_RANKING)} for q in off]
        base, base_ms = [], []
        for q in qs:
            started = time.perf_counter()
            base.append(baseline.search(q["question"], k=10))
            base_ms.append((time.perf_counter() - started) * 1e3)
        checked = None if args.no_cli_check else cli_matches(db, args.corpus, qs[0]["question"],
                                                              ours[0]["chunk_ids"])
        payload = {"corpus": args.corpus, "split": args.split, "questions": len(qs), "machine": info,
                   "provenance": provenance(index, args.corpus), "baseline_documents": baseline.documents(),
                   "chunks_asked": CHUNKS, "cli_matches": checked, "shipped_ranking": not args.ranking,
                   "latency_ms": {"ours": percentiles([o["ms"] for o in ours]),
                                  "passages": percentiles([o["ms"] for o in answer + off_answer]),
                                  "baseline": percentiles(base_ms)},
                   "scores": score(qs, ours, base, answer), "gate": gate_report(answer, off_answer)}
    baseline.close()
    name = args.name or f"retrieval_oos_{args.corpus}_{args.split}"
    write_results(name, payload, markdown(args.corpus, args.split, payload))


if __name__ == "__main__":
    main()

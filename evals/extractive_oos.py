"""The extractive engine out of sample: does the answer keep what retrieval found?

On an out-of-sample corpus's DEV half (benchmarks/oos/: the PostgreSQL manual,
the Python docs; `--split test` once a choice is made, to report it), each question is searched (k = the prompt's 4 sources) and
answered by `ExtractiveEngine.choose` with the shipped defaults (and with
`--embedders`, each of those embedders); the
question's `evidence` string (written with the question, before any tuning) is
looked for in the 4 passages (the upper bound) and in the answer. `--grid`
adds a small grid over cosine_weight, keep_ratio and rank_bonus (for tuning:
dev half only; refused on the test half). Needs var/oos/<corpus>.db (`make corpora`).

    python -m evals.extractive_oos --corpus postgresql     # → evals/results/extractive-oos-postgresql.json
    python -m evals.extractive_oos --corpus python --split test --embedders static minilm
                                                           # → evals/results/extractive-oos-python-test.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from deployments.engines import extractive as X
from deployments.passage import Passage
from deployments.prompt import PromptLimits, build_prompt
from evals.extractive_tune import Memo, ready
from evals.metrics import word_recall

RESULTS = Path(__file__).resolve().parent / "results"


def score(engine: X.ExtractiveEngine, questions: list[dict], contexts: dict[str, list[Passage]]) -> dict:
    """Evidence strings found in the answers; with gold answers, the mean share of their words
    the answers hold (`gold_in_answer`, what the maintainers' hidden set measures)."""
    found = refused = words = 0
    recall = []
    for q in questions:
        chosen = engine.choose(q["question"], contexts[q["id"]], 256)
        answer = " ".join(engine.render(chosen))
        found += q["evidence"].lower() in answer.lower()
        refused += not chosen
        words += len(answer.split())
        if "answer" in q:
            recall.append(word_recall(q["answer"], answer))
    out = {"evidence_in_answer": found, "refused": refused, "mean_words": round(words / len(questions), 1)}
    return out | ({"gold_in_answer": round(sum(recall) / len(recall), 3)} if recall else {})


def gold_bounds(questions: list[dict], contexts: dict[str, list[Passage]], *, hindsight: bool = False) -> dict:
    """How much of the gold answers the passages hold: the first passage, the best one, all;
    `hindsight`: also the best 3 quotable sentences chosen knowing the gold answer (the most a
    3-sentence extractive answer could keep)."""
    rows = [(word_recall(q["answer"], ps[0].text) if ps else 0.0,
             max((word_recall(q["answer"], p.text) for p in ps), default=0.0),
             word_recall(q["answer"], " ".join(p.text for p in ps)),
             best_three(q["answer"], ps) if hindsight else 0.0)
            for q in questions if "answer" in q for ps in [contexts[q["id"]]]]
    if not rows:
        return {}
    keys = ("gold_in_first_passage", "gold_in_best_passage", "gold_in_passages", "gold_in_best_3_sentences")
    return {key: round(sum(r[i] for r in rows) / len(rows), 3) for i, key in enumerate(keys[:3 + hindsight])}


def best_three(answer: str, passages: list[Passage]) -> float:
    """The largest share of `answer`'s words any 3 of the passages' quotable sentences hold."""
    texts = [c.text for c in X.candidates(passages)]
    return max((word_recall(answer, " ".join(combo)) for combo in itertools.combinations(texts, min(3, len(texts)))),
               default=0.0)


def gold_answers(corpus: str) -> dict[str, str]:
    """The reference answers written for the corpus's questions (benchmarks/oos/<corpus>/answers.jsonl)."""
    path = Path(f"benchmarks/oos/{corpus}/answers.jsonl")
    if not path.is_file():
        return {}
    return {row["id"]: row["answer"] for row in map(json.loads, path.read_text().splitlines()) if row}


def oos_contexts(corpus: str, split: str, k: int = 4, clip: int = 900,
                 ranking: Any = None) -> tuple[list[dict], dict[str, list[Passage]]]:
    """The split's questions and each one's passages as served (`k` sources of at most `clip`
    characters; `ranking`: a docindex Ranking other than the index's), from var/oos/<corpus>.db."""
    from docindex.index import Index

    rows = [json.loads(line) for line in open(f"benchmarks/oos/{corpus}/questions.jsonl")]
    answers = gold_answers(corpus)
    questions = [q | ({"answer": answers[q["id"]]} if q["id"] in answers else {}) for q in rows if q["split"] == split]
    index = Index(f"var/oos/{corpus}.db")
    contexts = {}
    for q in questions:
        hits = index.search(q["question"], k, corpus, ranking=ranking)
        passages = [Passage(h.source, h.text, h.cosine, h.bm25, h.fusion, h.anchor, h.title) for h in hits]
        contexts[q["id"]] = list(build_prompt(q["question"], passages, PromptLimits(k, clip)).passages)
    return questions, contexts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="postgresql", choices=("postgresql", "python"))
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--embedders", nargs="*", default=[], choices=("static", "minilm", "none"),
                        help="also score the shipped knobs with each of these embedders")
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--sentences", nargs="*", type=int, default=[], metavar="N",
                        help="also score the shipped knobs with max_sentences N (the answer's length trade-off)")
    parser.add_argument("--echoes", nargs="*", type=float, default=[], metavar="W",
                        help="also score the shipped knobs with echo W (stop 52; 0: before it)")
    parser.add_argument("--clips", nargs="*", type=int, default=[], metavar="CHARS",
                        help="also score the shipped engine on passages clipped at CHARS, not 900 (stop 54)")
    args = parser.parse_args()
    if args.grid and args.split != "dev":
        parser.error("--grid tunes: dev half only")
    from docindex.minilm import default_embedder

    questions, contexts = oos_contexts(args.corpus, args.split)
    embedder = Memo(default_embedder())
    bound = sum(q["evidence"].lower() in " ".join(p.text for p in contexts[q["id"]]).lower() for q in questions)
    shipped = score(ready(X.ExtractiveEngine(), embedder), questions, contexts)
    by_embedder = {name: score(ready(X.ExtractiveEngine(embedder=name), embedder), questions, contexts)
                   for name in args.embedders}
    by_sentences = {str(n): score(ready(X.ExtractiveEngine(max_sentences=n), embedder), questions, contexts)
                    for n in args.sentences}
    by_echo = {f"{w:g}": score(ready(X.ExtractiveEngine(echo=w), embedder), questions, contexts) for w in args.echoes}
    by_clip = {}
    for clip in args.clips:
        clipped = oos_contexts(args.corpus, args.split, clip=clip)[1]
        by_clip[str(clip)] = score(ready(X.ExtractiveEngine(), embedder), questions, clipped) | {
            key: value for key, value in gold_bounds(questions, clipped).items() if key == "gold_in_best_passage"}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    result = {"corpus": args.corpus, "split": args.split, "questions": len(questions), "evidence_in_passages": bound,
              **gold_bounds(questions, contexts, hindsight=True),
              "shipped": shipped, "by_embedder": by_embedder,
              **({"by_max_sentences": by_sentences} if by_sentences else {}),
              **({"by_echo": by_echo} if by_echo else {}), **({"by_clip": by_clip} if by_clip else {}), "commit": commit, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "machine": f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"}
    print(json.dumps(result), flush=True)
    RESULTS.mkdir(exist_ok=True)
    suffix = "" if args.split == "dev" else f"-{args.split}"
    (RESULTS / f"extractive-oos-{args.corpus}{suffix}.json").write_text(json.dumps(result, indent=2) + "\n")
    if args.grid:
        for weight, keep, bonus in itertools.product((0.4, 0.6), (0.5, 0.75), (0.05, 0.15, 0.25)):
            engine = ready(X.ExtractiveEngine(cosine_weight=weight, keep_ratio=keep, rank_bonus=bonus), embedder)
            print(json.dumps({"cosine_weight": weight, "keep_ratio": keep, "rank_bonus": bonus,
                              **score(engine, questions, contexts)}), flush=True)


if __name__ == "__main__":
    main()

"""The frozen question sets: reading, the dev/test split, anchors and the lock.

questions.jsonl, one object a line:
  id        "pg-001", unique in the corpus
  question  written by hand from the gold page, like a user would ask
  kind      howto | whatis | troubleshooting | version | limit
  gold      the page that answers it: a source of the corpus (corpus.lock)
  evidence  a string on the gold page, in the passage that answers it
  anchor    the docindex anchor (heading slug) of the section holding the evidence
  also      other pages that answer it too (accepted as hits)
  split     dev | test
off_topic.jsonl: id, question, kind ("everyday" | "vendor"), split.
answers.jsonl: id, answer: a reference answer to each question (1-3 sentences from
  the gold page, written by hand after the questions were frozen and before any
  answer lever was tried on them; stop 29). `word_recall` (evals/metrics.py) scores
  how much of it an answer or a passage holds.

The split is deterministic: ids sorted by sha256(id), the first half (rounded
up) is dev. `python -m benchmarks.oos.questions freeze NAME…` fills anchor and
split, checks every gold page and evidence, and writes questions.lock;
`check` verifies the lock without changing anything. `freeze-answers NAME FILE…`
merges hand-written answer files into answers.jsonl (one answer per question, in
the questions' order) and adds it to the lock.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .corpus import CORPORA, OOS, Corpus, read_lock

LOCK = OOS / "questions.lock"
FILES = ("questions.jsonl", "off_topic.jsonl")
KINDS = {"howto", "whatis", "troubleshooting", "version", "limit"}


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def questions(corpus: str, split: str = "all") -> list[dict]:
    return _pick(load(CORPORA[corpus].dir / "questions.jsonl"), split)


def off_topic(corpus: str, split: str = "all") -> list[dict]:
    return _pick(load(CORPORA[corpus].dir / "off_topic.jsonl"), split)


def fresh_off_topic() -> dict[str, list[str]]:
    """unseen/off_topic_fresh*.jsonl by file stem: stops 47's and 48's off-topic questions, asked of every manual,
    never fitted on (benchmarks/gate_learned.py, benchmarks/unseen_manuals.py)."""
    paths = sorted((OOS / "unseen").glob("off_topic_fresh*.jsonl"))
    return {path.stem: [row["q"] for row in load(path)] for path in paths}


def _pick(items: list[dict], split: str) -> list[dict]:
    if split not in ("dev", "test", "all"):
        raise ValueError(f"split must be dev, test or all, not {split!r}")
    return items if split == "all" else [q for q in items if q["split"] == split]


def split_of(ids: list[str]) -> dict[str, str]:
    """Half dev (rounded up), half test, by the order of sha256(id)."""
    ranked = sorted(ids, key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    half = (len(ranked) + 1) // 2
    return {i: ("dev" if n < half else "test") for n, i in enumerate(ranked)}


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _norm(text: str) -> str:
    return " ".join(text.split()).lower()


def locate(corpus: Corpus, source: str, evidence: str) -> str | None:
    """The anchor of the section of `source` that holds `evidence`; None if the page lacks it.

    A heading holding the evidence wins (its own section, not a table of
    contents that lists it); then the first section whose text holds it. Text
    before the page's first heading, or before its first level-1 heading when
    it has one (Sphinx puts its sidebar table of contents there), counts only
    when the body does not have the evidence.
    """
    from docindex.extract import parse_html
    from docindex.slugs import Slugger

    blocks = parse_html((corpus.root / source).read_text(encoding="utf-8")).blocks
    has_title = any(b.kind == "heading" and b.level == 1 for b in blocks)
    wanted = _norm(evidence)
    slugger, anchor, in_body_yet = Slugger(), None, False
    in_heading, in_body, preamble = None, None, None
    for block in blocks:
        if block.kind == "heading":
            anchor = slugger.slug(block.text)
            in_body_yet = in_body_yet or block.level == 1 or not has_title
            if in_body_yet and in_heading is None and wanted in _norm(block.text):
                in_heading = anchor
        elif wanted in _norm(block.text):
            if not in_body_yet or anchor is None:
                preamble = anchor or "" if preamble is None else preamble
            elif in_body is None:
                in_body = anchor
    return next((a for a in (in_heading, in_body, preamble) if a is not None), None)


def freeze(name: str) -> None:
    corpus = CORPORA[name]
    files = read_lock(corpus)["files"]
    path = corpus.dir / "questions.jsonl"
    items = load(path)
    ids = [q["id"] for q in items]
    if len(set(ids)) != len(ids):
        raise SystemExit(f"{name}: duplicate ids")
    split = split_of(ids)
    problems = []
    for q in items:
        if q["kind"] not in KINDS:
            problems.append(f"{q['id']}: kind {q['kind']!r}")
        for page in [q["gold"], *q.get("also", [])]:
            if page not in files:
                problems.append(f"{q['id']}: {page} is not in the corpus")
        if q["gold"] in files:
            anchor = locate(corpus, q["gold"], q["evidence"])
            if anchor is None:
                problems.append(f"{q['id']}: evidence {q['evidence']!r} not on {q['gold']}")
            q["anchor"] = anchor or ""
        q["split"] = split[q["id"]]
    if problems:
        raise SystemExit("\n".join(problems))
    keys = ("id", "question", "kind", "gold", "anchor", "evidence", "also", "split")
    path.write_text("".join(json.dumps({k: q.get(k, []) for k in keys}, ensure_ascii=False) + "\n"
                            for q in items))
    off_path = corpus.dir / "off_topic.jsonl"
    off = load(off_path)
    off_split = split_of([q["id"] for q in off])
    off_path.write_text("".join(json.dumps({"id": q["id"], "question": q["question"], "kind": q["kind"],
                                            "split": off_split[q["id"]]}, ensure_ascii=False) + "\n"
                                for q in off))
    lock = json.loads(LOCK.read_text()) if LOCK.exists() else {}
    for file in FILES:
        lock[f"{name}/{file}"] = file_sha256(corpus.dir / file)
    LOCK.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    print(f"{name}: {len(items)} questions, {len(off)} off-topic frozen")


def freeze_answers(name: str, parts: list[Path]) -> None:
    corpus = CORPORA[name]
    ids = [q["id"] for q in load(corpus.dir / "questions.jsonl")]
    answers: dict[str, str] = {}
    for part in parts:
        for row in load(part):
            if row["id"] in answers:
                raise SystemExit(f"{name}: {row['id']} answered twice")
            answers[row["id"]] = " ".join(str(row["answer"]).split())
    problems = [f"{i}: no answer" for i in ids if not answers.get(i)] + [
        f"{i}: not a question of {name}" for i in answers if i not in ids]
    if problems:
        raise SystemExit("\n".join(problems))
    (corpus.dir / "answers.jsonl").write_text(
        "".join(json.dumps({"id": i, "answer": answers[i]}, ensure_ascii=False) + "\n" for i in ids))
    lock = json.loads(LOCK.read_text())
    lock[f"{name}/answers.jsonl"] = file_sha256(corpus.dir / "answers.jsonl")
    LOCK.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
    print(f"{name}: {len(ids)} answers frozen")


def check() -> list[str]:
    lock = json.loads(LOCK.read_text())
    return [f"{rel}: sha256 differs from questions.lock" for rel, sha in sorted(lock.items())
            if file_sha256(OOS / rel) != sha]


if __name__ == "__main__":
    import sys

    command, names = sys.argv[1], sys.argv[2:] or list(CORPORA)
    if command == "freeze":
        for name in names:
            freeze(name)
    elif command == "freeze-answers":
        freeze_answers(names[0], [Path(p) for p in names[1:]])
    elif command == "check":
        problems = check()
        print("\n".join(problems) or "questions.lock: ok")
        sys.exit(1 if problems else 0)
    else:
        sys.exit(f"unknown command {command!r}: use freeze, freeze-answers or check")

"""The frozen question sets of benchmarks/unseen_manuals.py read as the script reads them."""
from __future__ import annotations

import json
from pathlib import Path

UNSEEN = Path(__file__).resolve().parents[2] / "benchmarks/oos/unseen"


def rows(name: str) -> list[dict]:
    return [json.loads(line) for line in (UNSEEN / name).read_text().splitlines() if line]


def test_every_real_question_names_its_page_once_and_no_question_repeats() -> None:
    questions = rows("questions.jsonl")
    assert len({q["q"] for q in questions}) == len(questions)
    for q in questions:
        assert {"c", "q"} <= set(q) <= {"c", "q", "gold", "also", "answer"}, q
        assert ("gold" in q) == (q["c"] != "off"), q     # the everyday ones ("off") have no page
        if "gold" in q:
            assert q["gold"] and q["gold"] not in q.get("also", []), q


def test_unanswerable_questions_belong_to_a_manual_asked_about_and_say_why() -> None:
    manuals = {q["c"] for q in rows("questions.jsonl")} - {"off"}
    unanswerable = rows("unanswerable.jsonl")
    assert unanswerable
    asked = {q["q"] for q in rows("questions.jsonl")}
    for q in unanswerable:
        assert set(q) == {"c", "q", "note"} and q["c"] in manuals and q["note"].strip(), q
        assert q["q"] not in asked, q
    assert len({q["q"] for q in unanswerable}) == len(unanswerable)

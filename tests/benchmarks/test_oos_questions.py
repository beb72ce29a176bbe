"""The out-of-sample question sets are frozen, split in halves and point at real pages."""
from __future__ import annotations

import json

import pytest

from benchmarks.oos import questions as qs
from benchmarks.oos.corpus import CORPORA, read_lock

NAMES = sorted(CORPORA)


def test_question_files_match_the_lock():
    lock = json.loads(qs.LOCK.read_text())
    assert sorted(lock) == sorted(f"{name}/{file}" for name in NAMES for file in (*qs.FILES, "answers.jsonl"))
    assert qs.check() == []


@pytest.mark.parametrize("name", NAMES)
def test_every_question_has_one_reference_answer_of_a_few_sentences(name):
    answers = qs.load(CORPORA[name].dir / "answers.jsonl")
    assert [a["id"] for a in answers] == [q["id"] for q in qs.questions(name)]
    for a in answers:
        assert 5 <= len(a["answer"].split()) <= 90, a["id"]


@pytest.mark.parametrize("name", NAMES)
def test_every_gold_page_is_a_locked_corpus_file(name):
    files = read_lock(CORPORA[name])["files"]
    for q in qs.questions(name):
        assert q["gold"] in files, q["id"]
        assert all(page in files for page in q["also"]), q["id"]
        assert q["gold"] not in q["also"], q["id"]


@pytest.mark.parametrize("name", NAMES)
def test_each_corpus_has_enough_distinct_questions(name):
    answerable, off = qs.questions(name), qs.off_topic(name)
    assert len(answerable) >= 100 and len(off) >= 40
    ids = [q["id"] for q in answerable + off]
    texts = [q["question"] for q in answerable + off]
    assert len(set(ids)) == len(ids) and len(set(texts)) == len(texts)
    assert {q["kind"] for q in answerable} <= qs.KINDS
    assert {q["kind"] for q in off} <= {"everyday", "vendor"}
    assert all(isinstance(q["anchor"], str) and q["evidence"] for q in answerable)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("loader", [qs.questions, qs.off_topic])
def test_split_is_the_deterministic_half_by_id_hash(name, loader):
    items = loader(name)
    assert {q["id"]: q["split"] for q in items} == qs.split_of([q["id"] for q in items])
    dev, test = loader(name, "dev"), loader(name, "test")
    assert len(dev) - len(test) in (0, 1) and len(dev) + len(test) == len(items)


def test_split_of_does_not_depend_on_order():
    ids = [f"x-{n}" for n in range(11)]
    assert qs.split_of(ids) == qs.split_of(list(reversed(ids)))
    assert list(qs.split_of(ids).values()).count("dev") == 6


def test_an_unknown_split_is_refused():
    with pytest.raises(ValueError, match="dev, test or all"):
        qs.questions(NAMES[0], "train")

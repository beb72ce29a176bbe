"""The labelled cases are well-formed, locked to the corpus, and their labels hold."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from evals.build_index import LOCK_PATH, load_lock, sha256_file, verify_corpus
from evals.cases import CaseError, load_cases, parse_case
from evals.metrics import fact_present

CORPUS = Path(__file__).resolve().parents[2] / "corpora" / "cmcp"


def test_case_file_meets_the_issue_minimums():
    kinds = Counter(c.kind for c in load_cases())
    assert sum(kinds.values()) >= 45
    assert kinds["factual"] >= 30 and kinds["two_source"] >= 5
    assert kinds["unanswerable"] >= 6 and kinds["off_topic"] >= 4


def test_two_source_cases_require_two_distinct_groups():
    for case in load_cases():
        if case.kind == "two_source":
            assert len(case.sources) == 2 and not set(case.sources[0]) & set(case.sources[1]), case.id


def test_every_labelled_path_is_a_locked_corpus_file():
    locked = set(load_lock()["files"])
    for case in load_cases():
        for group in case.sources:
            assert set(group) <= locked, case.id
        for anchor in case.anchors:
            assert anchor.partition("#")[0] in locked, (case.id, anchor)


def test_unanswerable_cases_say_why():
    assert all(c.note for c in load_cases() if c.kind == "unanswerable")


def test_malformed_cases_are_rejected_with_the_case_id():
    with pytest.raises(CaseError, match="x1"):
        parse_case({"id": "x1", "kind": "factual", "question": "q?", "sources": [], "key_facts": []})
    with pytest.raises(CaseError, match="unknown kind"):
        parse_case({"id": "x2", "kind": "trivia", "question": "q?"})
    with pytest.raises(CaseError, match="must not list sources"):
        parse_case({"id": "x3", "kind": "off_topic", "question": "q?", "sources": [["README.md"]]})


def test_changing_a_case_changes_its_sha_but_not_its_id():
    raw = {"id": "a", "kind": "off_topic", "question": "Capital of France?"}
    assert parse_case(raw).sha != parse_case({**raw, "question": "Capital of Spain?"}).sha


def test_lock_matches_the_dev_corpus():
    verify_corpus(CORPUS, load_lock())
    lock = json.loads(LOCK_PATH.read_text())
    assert len(lock["files"]) == len(list(CORPUS.rglob("*.md")))


def test_each_key_fact_occurs_in_a_labelled_source_of_the_case():
    """Labels hold: some labelled file states each key fact (else the label is wrong)."""
    texts = {rel: (CORPUS / rel).read_text(encoding="utf-8") for rel in load_lock()["files"]}
    for case in load_cases():
        labelled = [p for group in case.sources for p in group]
        for fact in case.key_facts:
            assert any(fact_present(texts[p], fact) for p in labelled), (case.id, fact)


def test_a_changed_corpus_file_is_reported(tmp_path):
    lock = load_lock()
    for rel in list(lock["files"])[:2]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("edited")
    with pytest.raises(Exception, match="changed"):
        verify_corpus(tmp_path, {**lock, "files": dict(list(lock["files"].items())[:2])})
    assert sha256_file(tmp_path / list(lock["files"])[0]) != list(lock["files"].values())[0]

"""The labelled cases (`evals/cases.jsonl`) and how they are read.

One JSON object per line:

    id          unique, stable; results are matched to cases by it
    kind        factual | two_source | unanswerable | off_topic
    question    what is sent to the service
    sources     answerable kinds: a list of groups, each a list of alternative
                paths (relative to the corpus root, as the index stores them);
                every group must be retrieved, any path of a group will do.
                A factual case has one group, a two_source case two.
    anchors     "path#slug" of the sections holding the answer (informational)
    key_facts   answerable kinds: short strings an answer must contain; each
                is "alt1|alt2|..." matched case-insensitively as substrings
    note        unanswerable kind: why the corpus does not answer it

`case_sha` hashes everything but the id, so results recorded against an
older wording of a case are recognised as stale by the gate.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

EVALS_DIR = Path(__file__).resolve().parent
CASES_PATH = EVALS_DIR / "cases.jsonl"

ANSWERABLE_KINDS = frozenset({"factual", "two_source"})
REFUSABLE_KINDS = frozenset({"unanswerable", "off_topic"})
KINDS = ANSWERABLE_KINDS | REFUSABLE_KINDS


class CaseError(ValueError):
    """A case file line is malformed or inconsistent."""


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    question: str
    sources: tuple[tuple[str, ...], ...] = ()
    anchors: tuple[str, ...] = ()
    key_facts: tuple[str, ...] = ()
    note: str = ""
    sha: str = field(default="", compare=False)

    @property
    def answerable(self) -> bool:
        return self.kind in ANSWERABLE_KINDS


def _case_sha(raw: dict) -> str:
    body = {k: v for k, v in raw.items() if k != "id"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def parse_case(raw: dict) -> Case:
    try:
        case = Case(
            id=str(raw["id"]),
            kind=str(raw["kind"]),
            question=str(raw["question"]),
            sources=tuple(tuple(str(p) for p in group) for group in raw.get("sources", [])),
            anchors=tuple(str(a) for a in raw.get("anchors", [])),
            key_facts=tuple(str(f) for f in raw.get("key_facts", [])),
            note=str(raw.get("note", "")),
            sha=_case_sha(raw),
        )
    except KeyError as exc:
        raise CaseError(f"case {raw.get('id', '?')}: missing field {exc}") from None
    if case.kind not in KINDS:
        raise CaseError(f"case {case.id}: unknown kind {case.kind!r} (one of {sorted(KINDS)})")
    if case.answerable and not (case.sources and all(case.sources) and case.key_facts):
        raise CaseError(f"case {case.id}: an answerable case needs sources and key_facts")
    if not case.answerable and (case.sources or case.key_facts):
        raise CaseError(f"case {case.id}: a {case.kind} case must not list sources or key facts")
    return case


def load_cases(path: Path = CASES_PATH) -> list[Case]:
    cases: list[Case] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaseError(f"{path}:{lineno}: {exc}") from None
        cases.append(parse_case(raw))
    ids = [c.id for c in cases]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CaseError(f"{path}: duplicate case ids {duplicates}")
    return cases

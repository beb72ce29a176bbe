"""The Gate's rule: is any retrieved passage relevant enough to ask the model?

Cosine is the only calibrated score of the embedder (BM25 and RRF fusion are
rank-relative), so the first test is a cosine floor on the index's embedding
model: the best passage's cosine must reach `min_cosine`. An everyday question
("how do I tune a guitar?") can still reach a cosine of 0.3-0.5 on technical
documentation, but its words are not there; so, with `coverage_weight` set,
the Gate also asks for lexical agreement. `coverage` is the idf-weighted
share of the question's words found in a passage (docindex computes it per
hit, 0-1; a word the collection never uses weighs most). The question's
evidence is

    best cosine + coverage_weight × best coverage      (over the passages given)

and it passes when that reaches `min_evidence`: a high cosine makes up for
paraphrased words, many of the question's rare words make up for a modest
cosine. Passages that carry no coverage (an older or foreign MCP server) are
judged on the cosine floor alone. Figures and the sweep that chose the
settings: benchmarks/results/gate_evidence.md.

With `noise_margin` set, a question whose evidence falls short still passes
when its best cosine clears its collection's noise floor (docindex/noise_floor.py:
the third best cosine 40 everyday questions reach there, sent with each passage)
by `noise_margin`. A question told as a user's situation, in words an API
reference does not use, has little coverage but a cosine far above what
everyday questions reach on that reference (SDL2: 0.40-0.55 against a floor
of 0.24); on a manual where everyday questions reach 0.42-0.48 (PostgreSQL's,
Python's) the floor is higher too (0.30, 0.31). Figures and the choice:
benchmarks/results/gate_noise_floor.md. Passages without a floor: the rule above alone.

With `sentence_margin` set, such a question also passes when the best cosine of a quotable sentence of
its passages (docindex's per-hit sentence_cosine, from the stored quote vectors) reaches the collection's
sentence floor (the same third best, over everyday questions' best sentences) by `sentence_margin`: a
user's words can meet one sentence closely where they meet the whole passage loosely (stop 43: pandas'
"turn one-hot indicator columns back into one categorical column", chunk 0.48 against a floor of 0.33,
sentence 0.52 against 0.35). The passage cosine must still reach `min_cosine`.

With `score_weights` set (stop 47: the shipped default), those three clauses give way, where the passages
carry a noise floor and coverage, to one learned score: a logistic regression over `features` (how far the
best passage and the best sentence clear their collection's floors, the best coverage, how far the mean of
the passages given clears the floor), fitted by benchmarks/gate_learned.py on the dev sets (PostgreSQL and
Python dev halves, cMCP, 20 manuals), its threshold folded into the bias: the question passes when
bias + weights · features >= 0. The same script chose, on leave-one-set-out errors, to weigh the mean alone:
as shipped, the passages' mean cosine must reach the noise floor - 0.004, so one passage that happens to meet
an everyday question no longer carries it, and several middling ones carry a question told in a user's own
words. Held out (benchmarks/results/gate_learned.md): 20 of 781 real questions refused against 32 with the
clauses, 119 of 4,032 fresh off-topic ones let through against 64. The mean is over the passages the Gate is
given: the first GATE_PASSAGES retrieved, whatever the request's k. Passages without a floor or coverage (an
older or foreign MCP server): the clauses above.

With `name_margin` set (stop 53), a question that names something its collection never mentions (a capitalized
name after its first word, with a lower-case letter, that docindex lists among the question's words no chunk of
the collection holds: each passage's `unknown_terms`) must score `name_margin` or more, not 0: "How do I group two
Sonos speakers so they play the same song?" meets an audio manual (FFmpeg's) about as well as a real question
does, but its subject is nowhere in it. Acronyms, plural too ("RAM", "URLs"), and the first word are no names;
passages that carry no `unknown_terms` (an older or foreign MCP server) weigh no names. Chosen on dev data
(benchmarks/gate_names.py, results/gate_names.md): the largest margin that refuses no more real questions there
(1: the passages' mean cosine ~0.03 further over the noise floor). Since stop 54 each such name adds `name_margin`
(NAMES_ADD_UP): "How do I change my heart rate zones on a Garmin Forerunner?" names two things Cockpit's guide never
mentions and needs 2. Dev: off-topic passes 61 -> 58 of 4,438, real refusals 6 -> 6 of 578 (the one real dev question
with two such names, "… OrderLineItem … CamelCase …" on peewee's manual, scores 5.6); held out: results/gate_names.md.
Since stop 55 a word that starts in lower case with a capital after is a name too, wherever it stands (CAMEL_NAMES):
openstackclient's reference passed "How do I cancel my Netflix subscription on an iPhone?" on zaqar's subscriptions
(it still does: 2.84, over 2; "How do I reset my iPhone to factory settings?", 0.61, no longer). Dev: off-topic
passes 58 -> 56 of 4,438, real refusals 6 -> 6 of 578 (Requests' "… app for iPhone and iPad …" scores 6.9); held
out (the test halves, 17 manuals): 23 -> 23 of 2,916, real 2 -> 2 of 422.

Ray-free (benchmarks replay it over recorded scores); deployments/gate.py
wraps it in a Serve deployment.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from deployments.passage import Passage


class GateRule(TypedDict):
    """`decide`'s settings, as the service's Settings.gate_rule() gives them."""

    min_cosine: float
    coverage_weight: float | None
    min_evidence: float | None
    noise_margin: float | None
    sentence_margin: float | None
    score_weights: tuple[float, ...] | None     # bias, then one weight per FEATURES entry
    name_margin: float | None                   # the score each name its collection lacks adds to what is needed


NAMES_ADD_UP = True
"""Each name its collection never mentions adds `name_margin` to the score needed (stop 54); False: one name or
several need `name_margin` once, as at stop 53 (benchmarks/gate_names.py replays both)."""

GATE_PASSAGES = 4
"""The passages the Gate weighs, whatever a request's k: the first 4, as docindex's noise floors
(noise_floor.PROBE_K) and benchmarks/gate_learned.py's fit count them. A request for k=1 would otherwise
make the mean the best cosine alone, and one for k=10 (a larger prompt_max_sources) a stricter mean."""

# What the learned score weighs, in this order (`features`); a sentence gap falls back to the passage's
# where no sentence cosine or sentence floor was sent (an index without quote vectors).
FEATURES = ("best cosine - noise floor", "best sentence cosine - sentence floor", "best coverage",
            "mean cosine - noise floor")


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    best_cosine: float | None   # None when nothing was retrieved
    score: float | None = None  # the learned score where it decided (>= 0 passes); None: the clauses did
    absent: tuple[str, ...] = ()  # names of the question its collection never uses (`absent_names`; name_margin set)
    unmentioned: tuple[str, ...] = ()  # those names and identifiers (`unmentioned`): reported, never weighed


def evidence(passages: Sequence[Passage], coverage_weight: float) -> float | None:
    """best cosine + coverage_weight × best coverage; None when no passage carries coverage (or none given)."""
    coverages = [p.coverage for p in passages if p.coverage is not None]
    if not coverages:
        return None
    return max(p.cosine for p in passages) + coverage_weight * max(coverages)


def decide(passages: Sequence[Passage], *, min_cosine: float, coverage_weight: float | None = None,
           min_evidence: float | None = None, noise_margin: float | None = None,
           sentence_margin: float | None = None, score_weights: Sequence[float] | None = None,
           name_margin: float | None = None, question: str = "") -> GateDecision:
    """Pass when the best cosine reaches `min_cosine` and, with `score_weights` set and the passages
    carrying a noise floor and coverage, the learned score is >= 0 (>= `name_margin` for each name of `question`
    its collection never mentions); otherwise, with both
    `coverage_weight` and `min_evidence` set, the evidence (module docstring) reaches `min_evidence` or,
    with `noise_margin` set, the best cosine reaches the passages' noise floor + `noise_margin`, or, with
    `sentence_margin` set, their best sentence's cosine reaches the sentence floor + `sentence_margin`."""
    if not passages:
        return GateDecision(passed=False, best_cosine=None)
    best = max(p.cosine for p in passages)
    passed = best >= min_cosine
    absent = absent_names(question, passages) if name_margin is not None else ()    # reported on every path
    told = unmentioned(question, passages)
    scored = score(passages, score_weights) if passed and score_weights is not None else None
    if scored is not None:
        names = len(absent) if NAMES_ADD_UP else min(1, len(absent))     # () where name_margin is None
        needed = max(0.0, name_margin or 0.0) * names
        return GateDecision(passed=scored >= needed, best_cosine=best, score=scored, absent=absent, unmentioned=told)
    if passed and coverage_weight is not None and min_evidence is not None:
        weighed = evidence(passages, coverage_weight)
        passed = (weighed is None or weighed >= min_evidence or above_noise(passages, best, noise_margin)
                  or sentence_above_noise(passages, sentence_margin))
    return GateDecision(passed=passed, best_cosine=best, absent=absent, unmentioned=told)


def features(passages: Sequence[Passage]) -> tuple[float, ...] | None:
    """The learned score's inputs (FEATURES), or None when no passage carries a noise floor or coverage."""
    floors = [p.noise_floor for p in passages if p.noise_floor is not None]
    coverages = [p.coverage for p in passages if p.coverage is not None]
    if not floors or not coverages:
        return None
    floor = max(floors)
    cosines = [p.cosine for p in passages]
    best = max(cosines)
    sentences = [p.sentence_cosine for p in passages if p.sentence_cosine is not None]
    sentence_floors = [p.sentence_floor for p in passages if p.sentence_floor is not None]
    sentence_gap = max(sentences) - max(sentence_floors) if sentences and sentence_floors else best - floor
    return best - floor, sentence_gap, max(coverages), sum(cosines) / len(cosines) - floor


def score(passages: Sequence[Passage], weights: Sequence[float]) -> float | None:
    """bias + weights · features(passages); None where `features` is None."""
    values = features(passages)
    if values is None:
        return None
    return weights[0] + sum(w * x for w, x in zip(weights[1:], values))


def above_noise(passages: Sequence[Passage], best: float, noise_margin: float | None) -> bool:
    """True when `best` reaches the passages' noise floor + `noise_margin` (False without either)."""
    return _clears(best, [p.noise_floor for p in passages], noise_margin)


def sentence_above_noise(passages: Sequence[Passage], sentence_margin: float | None) -> bool:
    """True when the passages' best sentence cosine reaches their sentence floor + `sentence_margin`
    (False without either, or without a sentence cosine)."""
    cosines = [p.sentence_cosine for p in passages if p.sentence_cosine is not None]
    return bool(cosines) and _clears(max(cosines), [p.sentence_floor for p in passages], sentence_margin)


def _clears(value: float, floors: Sequence[float | None], margin: float | None) -> bool:
    """`value` reaches the highest of the floors sent + `margin` (False without a margin or a floor)."""
    sent = [floor for floor in floors if floor is not None]
    return margin is not None and bool(sent) and value >= max(sent) + margin


_WORD = re.compile(r"\S+")
_NAME = re.compile(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*")   # "Netflix", "YouTube", "Xbox"; not "RAM"
_CAMEL_NAME = re.compile(r"[a-z]+[A-Z][A-Za-z0-9]*")        # "iPhone", "eBay", "macOS"; also "nextCmd"
CAMEL_NAMES = True
"""A word that starts in lower case with a capital after ("iPhone") is a name too (stop 55, measured)."""
_ACRONYM_PLURAL = re.compile(r"[A-Z0-9]{2,}s")                # "URLs", "VMs", "APIs"
_EDGES = re.compile(r"^[\"'(\[“‘]+|(?:'s|’s)?[\"'),.?!:;\]”’]*$")


def question_names(question: str) -> list[str]:
    """The names of `question`, quotes and a possessive 's stripped: capitalized words after its first and after no
    sentence's end, each with a lower-case letter after its capital (a name, not an acronym or an acronym's plural),
    and, with CAMEL_NAMES, any word that starts in lower case with a capital after ("iPhone")."""
    words = _WORD.findall(question)
    found = []
    for i, word in enumerate(words):
        bare = _EDGES.sub("", word)
        if CAMEL_NAMES and _CAMEL_NAME.fullmatch(bare):
            found.append(bare)
        elif i and words[i - 1][-1:] not in ".?!:" and _NAME.fullmatch(bare) and not _ACRONYM_PLURAL.fullmatch(bare):
            found.append(bare)
    return found


def absent_names(question: str, passages: Sequence[Passage]) -> tuple[str, ...]:
    """The names of `question` (`question_names`) its collection never uses: among the words docindex sent as no
    chunk's (`Passage.unknown_terms`), case aside; () where no passage carries them."""
    return _absent(question_names(question), passages)


def _absent(words: Sequence[str], passages: Sequence[Passage]) -> tuple[str, ...]:
    """`words`, once each, that are among the words docindex sent as no chunk's (`Passage.unknown_terms`), case
    aside; () where no passage carries them."""
    unknown = {t.lower() for p in passages if p.unknown_terms for t in p.unknown_terms}
    return tuple(dict.fromkeys(word for word in words if word.lower() in unknown))


_IDENTIFIER = re.compile(r"(?=.*[A-Za-z])(?:[A-Za-z0-9]*_[A-Za-z0-9_]+|[A-Za-z]{2,}[0-9][A-Za-z0-9]*|[A-Z]{3,}[0-9]*)")
"""An identifier or an acronym: "code_challenge", "SOCKS5", "ARM64", "PKCE", "WPAD" (not "MB", "4k", "v2")."""


def question_identifiers(question: str, names: Sequence[str] | None = None) -> list[str]:
    """The words of `question` shaped like an identifier or an acronym of three or more capitals (`_IDENTIFIER`) that
    are no name (`names`: its `question_names`, found here when not given), quotes and a possessive 's stripped."""
    named = set(question_names(question) if names is None else names)
    bare = (_EDGES.sub("", word) for word in _WORD.findall(question))
    return [word for word in bare if word not in named and _IDENTIFIER.fullmatch(word)]


def unmentioned(question: str, passages: Sequence[Passage]) -> tuple[str, ...]:
    """What the question names that its collection never uses, as a user is told it (the done event's
    `unknown_names`): its absent names and its absent identifiers and acronyms. Only names weigh in the Gate
    (`name_margin`); the rest is said, not weighed. Stop 57: of 96 in-domain questions no page answers (8 manuals), 38
    name such a thing (28 by names alone); of 840 real questions of 51 manuals, 20 (12); KNOWN_LIMITATIONS.md."""
    names = question_names(question)
    return _absent([*names, *question_identifiers(question, names)], passages)

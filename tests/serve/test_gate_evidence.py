"""The Gate's rule: a cosine floor, then best cosine + weight × best coverage against a threshold."""
from __future__ import annotations

from deployments.gate_rule import decide, evidence
from deployments.passage import Passage
from serve_app.settings import Settings

RULE = {"min_cosine": 0.29, "coverage_weight": 0.65, "min_evidence": 0.68}


def passage(cosine: float, coverage: float | None) -> Passage:
    return Passage(source="a.md", text="t", cosine=cosine, coverage=coverage)


def test_without_a_coverage_weight_the_gate_is_the_cosine_floor_alone():
    assert decide([passage(0.30, 0.0)], min_cosine=0.29).passed
    assert not decide([passage(0.28, 1.0)], min_cosine=0.29).passed
    assert decide([passage(0.30, 0.0)], min_cosine=0.29, coverage_weight=0.65).passed   # no threshold: off


def test_an_everyday_question_with_a_fair_cosine_but_none_of_its_words_is_refused():
    # "How do I record a voiceover in Final Cut Pro?" on the Python docs: 0.47 / 0.00, 0.10 / 0.24
    decision = decide([passage(0.47, 0.0), passage(0.10, 0.24)], **RULE)
    assert not decision.passed and decision.best_cosine == 0.47


def test_a_modest_cosine_passes_with_the_questions_words():
    # "How do I create an isolated virtual environment for a project?": 0.42 / 0.48 (the rule before refused it)
    assert decide([passage(0.42, 0.48), passage(0.38, 0.40)], **RULE).passed
    assert not decide([passage(0.42, 0.30)], **RULE).passed


def test_the_best_cosine_and_the_best_coverage_may_come_from_different_passages():
    passages = [passage(0.50, 0.10), passage(0.20, 0.40)]
    assert evidence(passages, 0.65) == 0.50 + 0.65 * 0.40
    assert decide(passages, **RULE).passed
    assert not decide(passages[:1], **RULE).passed


def test_the_cosine_floor_holds_whatever_the_words():
    assert not decide([passage(0.28, 1.0)], **RULE).passed
    assert decide([passage(0.29, 0.7)], **RULE).passed


def test_passages_without_coverage_are_judged_on_cosine_alone():
    assert decide([passage(0.30, None)], **RULE).passed
    assert not decide([passage(0.20, None)], **RULE).passed
    assert evidence([passage(0.30, None)], 0.65) is None
    # only the passages that carry coverage give the best coverage
    assert not decide([passage(0.40, None), passage(0.30, 0.1)], **RULE).passed


def test_nothing_retrieved_is_refused():
    decision = decide([], **RULE)
    assert not decision.passed and decision.best_cosine is None


def test_a_cosine_well_above_the_collections_noise_floor_passes_without_the_words():
    """SDL2's reference: "My sprite sheet bitmap uses bright magenta as its background …" reaches
    cosine 0.487 at coverage 0.244 (evidence 0.646) where everyday questions reach 0.311."""
    def floored(cosine: float, coverage: float, floor: float | None) -> Passage:
        return Passage(source="a.md", text="t", cosine=cosine, coverage=coverage, noise_floor=floor)
    rule = {**RULE, "noise_margin": 0.155}
    assert decide([floored(0.487, 0.244, 0.311)], **rule).passed
    assert not decide([floored(0.487, 0.244, 0.311)], **RULE).passed              # the evidence rule alone
    assert not decide([floored(0.45, 0.244, 0.311)], **rule).passed               # under floor + margin
    assert not decide([floored(0.42, 0.313, 0.35)], **rule).passed                # "How far is the Moon …" (PG)
    assert not decide([floored(0.487, 0.244, None)], **rule).passed               # no floor sent: evidence alone
    assert not decide([floored(0.28, 0.0, 0.0)], **rule).passed                   # the cosine floor still holds


def test_a_sentence_well_above_the_collections_sentence_floor_passes_a_question_the_passages_do_not():
    """pandas: "Is there a function that turns one-hot encoded 0/1 indicator columns back into a single
    categorical column?" reaches chunk cosine 0.476 (coverage 0.22, floor 0.332) and, in from_dummies'
    page, a sentence at 0.515 where everyday questions' best sentences reach 0.349 (stop 43)."""
    def sentenced(cosine: float, sentence: float | None, sentence_floor: float | None) -> Passage:
        return Passage(source="a.md", text="t", cosine=cosine, coverage=0.22, noise_floor=0.332,
                       sentence_cosine=sentence, sentence_floor=sentence_floor)
    rule = {**RULE, "noise_margin": 0.15, "sentence_margin": 0.08}
    assert decide([sentenced(0.476, 0.515, 0.349)], **rule).passed
    assert not decide([sentenced(0.476, 0.515, 0.349)], **{**rule, "sentence_margin": None}).passed     # off
    assert not decide([sentenced(0.476, 0.42, 0.349)], **rule).passed         # under the sentence floor + margin
    assert not decide([sentenced(0.476, 0.515, None)], **rule).passed         # no floor sent (no quote vectors)
    assert not decide([sentenced(0.476, None, 0.349)], **rule).passed
    assert not decide([sentenced(0.27, 0.9, 0.349)], **rule).passed           # the cosine floor still holds
    # the best sentence of any passage counts, against the highest floor sent
    assert decide([sentenced(0.476, None, 0.349), sentenced(0.40, 0.515, 0.30)], **rule).passed
    assert not decide([sentenced(0.476, 0.40, 0.349), sentenced(0.40, 0.40, 0.30)], **rule).passed


def test_the_shipped_settings_are_the_rule_chosen_on_the_dev_halves():
    s = Settings(_env_file=None)
    assert (s.gate_min_cosine, s.gate_coverage_weight, s.gate_min_evidence) == (0.29, 0.65, 0.68)
    assert (s.gate_noise_margin, s.gate_sentence_margin) == (0.15, 0.08)
    assert s.gate_rule() == {"min_cosine": 0.29, "coverage_weight": 0.65, "min_evidence": 0.68,
                             "noise_margin": 0.15, "sentence_margin": 0.08, "score_weights": s.gate_score_weights,
                             "name_margin": 1.0}


def test_the_deployment_module_decides_with_the_same_rule():
    from deployments import gate
    assert gate.decide is decide


def test_the_deployment_gives_the_rule_the_question_for_the_name_clause():
    import asyncio

    from deployments import gate
    rule = Settings(_env_file=None).gate_rule()
    replica = gate.Gate.func_or_class(rule)
    audio = [Passage(source="f.html", text="Mix several audio streams so they play together.", cosine=c,
                     coverage=0.2, noise_floor=0.30, unknown_terms=("sonos",)) for c in (0.33, 0.31, 0.30, 0.29)]
    named = asyncio.run(replica.decide("How do I group two Sonos speakers so they play the same song?", audio))
    plain = asyncio.run(replica.decide("How do I make several audio streams play together?", audio))
    assert (named.passed, named.absent, plain.passed) == (False, ("Sonos",), True)

"""evals/extractive_levers.py's levers: off, the engine is the shipped one; each lever does what it says."""
import pytest

from deployments.engines import extractive as X
from deployments.engines.extractive import ExtractiveEngine
from deployments.passage import Passage
from docindex import quotable
from evals.extractive_levers import LeverEngine, _setting, _suffix_stems

PASSAGES = [
    Passage("a.md", "The server listens on port 8080 by default. Its port is set with --port on the command line. "
                    "The port is printed at start.", 0.6, 2.0, 0.03),
    Passage("b.md", "Requests time out after 30 seconds. The timeout is set with --timeout.", 0.5, 1.5, 0.02),
]
QUESTION = "Which port does the server listen on, and when do requests time out?"


async def started(engine: ExtractiveEngine) -> ExtractiveEngine:
    await engine.start()
    return engine


def test_suffix_stems_fold_inflections_and_leave_short_words() -> None:
    assert _suffix_stems({"fixed", "fixing", "fix"}) == {"fix"}
    assert _suffix_stems({"listens", "timeouts"}) == {"liste", "timeo"}


async def test_with_every_lever_off_it_answers_as_the_shipped_engine() -> None:
    shipped = await started(ExtractiveEngine(embedder="none", min_score=0.1))
    lever = await started(LeverEngine(embedder="none", min_score=0.1))
    assert lever.choose(QUESTION, PASSAGES, 256) == shipped.choose(QUESTION, PASSAGES, 256)


@pytest.mark.parametrize("knobs", [{"cover": 0.3}, {"number_cue": 0.1}, {"code_cue": 0.1}, {"adjacent": 0.2},
                                   {"same_passage": 0.2}])
async def test_each_lever_still_answers_with_cited_passage_sentences(knobs) -> None:
    engine = await started(LeverEngine(embedder="none", min_score=0.1, **knobs))
    with _setting(X, "_stems", _suffix_stems):
        chosen = engine.choose(QUESTION, PASSAGES, 256)
    assert 1 <= len(chosen) <= 3 and {c.n for c in chosen} <= {1, 2}
    assert any("port" in c.text for c in chosen)


def test_a_setting_is_patched_inside_its_block_only_and_none_leaves_it() -> None:
    shipped = X.NEAR_DUPLICATE
    with _setting(X, "NEAR_DUPLICATE", 0.6), _setting(quotable, "SIGNATURE_TERMS", None):
        assert X.NEAR_DUPLICATE == 0.6 and quotable.SIGNATURE_TERMS is True
    assert X.NEAR_DUPLICATE == shipped


async def test_adjacent_prefers_the_sentence_after_a_chosen_one_in_its_passage() -> None:
    passages = [Passage("a.md", "The cache lives in var/cache by default. Delete it to rebuild every index. "
                                "Cache files are small.", 0.6, 2.0, 0.03)]
    plain = await started(LeverEngine(embedder="none", min_score=0.1, max_sentences=2, keep_ratio=0.0))
    nextdoor = await started(LeverEngine(embedder="none", min_score=0.1, max_sentences=2, keep_ratio=0.0,
                                         adjacent=1.0))
    question = "Where does the cache live?"
    assert [c.text for c in nextdoor.choose(question, passages, 256)][1] == "Delete it to rebuild every index"
    assert plain.choose(question, passages, 256)[0] == nextdoor.choose(question, passages, 256)[0]

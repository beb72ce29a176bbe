"""benchmarks/sentence_rerank.py's reordering: only the first N move, and weight 0 is the shipped order."""
import pytest

from benchmarks.sentence_rerank import rerank

ORDER = ["a", "b", "c", "d", "e"]
FUSION = [0.9, 0.8, 0.7, 0.6, 0.5]


def test_weight_zero_is_the_shipped_order() -> None:
    assert rerank(ORDER, FUSION, [0.1, 0.9, 0.5], "rrf", 0.0) == ORDER


@pytest.mark.parametrize("mode,w", [("rrf", 2.0), ("lin", 2.0)])
def test_a_strong_sentence_moves_its_chunk_up_and_the_tail_stays(mode: str, w: float) -> None:
    moved = rerank(ORDER, FUSION, [0.1, 0.2, 0.95], mode, w)
    assert moved[0] == "c"
    assert moved[3:] == ["d", "e"]
    assert sorted(moved) == ORDER


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="rrf or lin"):
        rerank(ORDER, FUSION, [0.1, 0.2], "max", 1.0)

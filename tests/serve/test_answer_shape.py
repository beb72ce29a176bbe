"""What an answer may look like: the citation grammar, the scaffolding filter,
the checker's notion of a citation (shared with the page), support and evidence."""
from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from deployments.citation_grammar import MAX_SENTENCES, answer_regex, citation_gbnf, matches
from deployments.citations import check
from deployments.passage import Passage
from deployments.prompt import INSTRUCTION, REFUSAL_SENTENCE
from deployments.scaffold import ScaffoldFilter, strip_scaffolding
from docindex.sentences import CITATION_PATTERN, sentence_spans

PAGE = Path(__file__).resolve().parents[2] / "serve_app" / "static" / "index.html"
NONCE = "0f6ff751350472af"
P1 = Passage("a.md", "cMCP needs only libcurl at run time. It builds with CMake 3.20.", 0.6)
P2 = Passage("b.md", "The crag-mcp server answers crag_search over stdio.\nIts default k is 5.", 0.5)


# ---------------------------------------------------------------- grammar

def test_the_grammar_language_accepts_cited_sentences_and_the_refusal() -> None:
    assert matches("cMCP needs only libcurl [1].", 2)
    assert matches("It builds with CMake 3.20 [1]. The server uses stdio [2, 1].", 2)
    assert matches("See llama.cpp for details [1][2].", 2)
    assert matches(REFUSAL_SENTENCE, 2)


def test_the_grammar_language_rejects_invalid_numbers_uncited_and_forged_text() -> None:
    assert not matches("cMCP needs only libcurl [3].", 2)        # no source 3
    assert not matches("cMCP needs only libcurl [0].", 2)
    assert not matches("cMCP needs only libcurl.", 2)            # uncited
    assert not matches("The [1] is a [2].", 2)                   # a marker inside a sentence
    assert not matches("<<<SRC-00 [1] x [1].", 2)                # fence syntax
    assert not matches(" ".join(["A claim [1]."] * (MAX_SENTENCES + 1)), 2)


def test_the_gbnf_names_exactly_the_sources_of_this_request() -> None:
    gbnf = citation_gbnf(3)
    num = re.search(r"^num ::= (.*)$", gbnf, re.M).group(1)
    assert sorted(re.findall(r'"(\d+)"', num), key=int) == ["1", "2", "3"]
    assert REFUSAL_SENTENCE.replace('"', '\\"') in gbnf
    assert "[11]" not in answer_regex(3)


# ---------------------------------------------------------------- scaffolding

SCAFFOLD = f"<<<SRC-{NONCE} [1] a.md#x\nbody\nSRC-{NONCE}>>>"


def test_scaffolding_is_removed_from_a_whole_answer() -> None:
    echoed = f"The [SRC-{NONCE}] is a [SRC-{NONCE}]. {INSTRUCTION} Question: <<<Q-{NONCE}\nwhy\nQ-{NONCE}>>> {NONCE}"
    out = strip_scaffolding(echoed, NONCE)
    assert NONCE not in out and "SRC-" not in out and "<<<" not in out and ">>>" not in out
    assert INSTRUCTION not in out and "[1]" not in out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=40))
def test_streamed_scaffolding_is_removed_however_the_tokens_are_cut(cuts: list[int]) -> None:
    text = f"Replicas scale out [1]. {SCAFFOLD} {INSTRUCTION} Queues answer 503 [2]. {NONCE} Done [1]."
    f = ScaffoldFilter(NONCE)
    out, i = [], 0
    for n in cuts:
        out.append(f.feed(text[i:i + n]))
        i += n
    out.append(f.feed(text[i:]))
    out.append(f.flush())
    streamed = "".join(out)
    assert streamed == strip_scaffolding(text, NONCE)
    assert NONCE not in streamed and "SRC-" not in streamed and INSTRUCTION not in streamed
    assert "Replicas scale out [1]." in streamed and "Queues answer 503 [2]." in streamed


def test_an_ordinary_answer_passes_through_token_by_token() -> None:
    f = ScaffoldFilter(NONCE)
    tokens = ["Serve ", "adds ", "replicas ", "under ", "load ", "[1]", "."]
    seen = [f.feed(t) for t in tokens] + [f.flush()]
    assert "".join(seen) == "".join(tokens)
    assert all(seen[:5]), "ordinary words are not held back"


# ---------------------------------------------------------------- checker

def test_the_page_and_the_checker_share_one_citation_pattern() -> None:
    page = PAGE.read_text()
    js = re.search(r"const MARKER = /(.*)/;", page).group(1)
    assert js == "^" + CITATION_PATTERN


def test_a_spaced_marker_is_a_citation_and_is_checked() -> None:
    result = check("cMCP needs only libcurl [1][ 9 ].", [P1, P2])
    assert result.invalid_citations == [9] and result.citations == [1]


def test_an_answer_with_no_scorable_sentence_has_no_support() -> None:
    for answer in ("[1] is a [2].", "[1]", "", "The of and [1]."):
        assert check(answer, [P1, P2]).support == 0.0, answer
    assert check(REFUSAL_SENTENCE, [P1, P2]).support == 1.0


def test_evidence_points_at_the_passage_sentence_that_supports_each_answer_sentence() -> None:
    result = check("cMCP needs only libcurl [1]. The default k is 5 [2].", [P1, P2])
    spans = {(e.sentence, e.n): P1.text[e.start:e.end] if e.n == 1 else P2.text[e.start:e.end]
             for e in result.evidence}
    assert spans == {(0, 1): "cMCP needs only libcurl at run time.", (1, 2): "Its default k is 5."}


def test_sentence_spans_cover_lines_and_full_stops() -> None:
    text = "One. Two here.\nThree"
    assert [text[a:b] for a, b in sentence_spans(text)] == ["One.", "Two here.", "Three"]


def test_wrapped_markdown_lines_are_one_sentence_and_lists_rows_code_are_units() -> None:
    from docindex.sentences import units

    text = ("# Title\n\nThe server drops results whose cosine\nfalls below a cutoff. It is 0.3.\n\n"
            "- `fs_list` lists\n  a dir\n- `fs_read` reads\n\n| a | b |\n\n```sh\nmake run\n```\n")
    assert [u.kind for u in units(text)] == ["heading", "prose", "item", "item", "row", "code"]
    sentences = [text[a:b] for a, b in sentence_spans(text)]
    assert "The server drops results whose cosine\nfalls below a cutoff." in sentences
    assert "It is 0.3." in sentences and not any("make run" in s for s in sentences)


def test_a_sentence_carries_at_most_three_markers() -> None:
    assert matches("Replicas scale [1][2][1].", 2)
    assert not matches("Replicas scale [1][2][1][2].", 2)       # the "[4][4][4]…" loop SmolLM2 fell into
    assert not matches("Replicas scale [1, 2, 1, 2].", 2)
    assert "marker marker? marker?" in citation_gbnf(2)

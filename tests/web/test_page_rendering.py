"""How the page renders protocol cases the fake engine cannot produce on
demand: a citation naming no source next to an unsupported sentence, events
cut at arbitrary bytes with CRLF line ends, markup inside document text. The
server is `stand_in.py`, which speaks DESIGN.md §4's SSE protocol exactly;
the page against the real ingress is tested in test_page.py."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser import ask_by_keyboard, browser_missing, serve_in_thread

pytestmark = pytest.mark.browser
if browser_missing():
    pytest.skip(browser_missing(), allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

from tests.web.stand_in import app as stand_in_app  # noqa: E402


@pytest.fixture(scope="module")
def stand_in_url() -> Iterator[str]:
    with serve_in_thread(stand_in_app) as url:
        yield url


@pytest.fixture
def page(open_page: Callable[..., Any], stand_in_url: str) -> Any:
    return open_page(stand_in_url)


def test_invalid_citations_and_unsupported_sentences_are_marked(page: Any) -> None:
    ask_by_keyboard(page, "How do replicas scale?")
    expect(page.locator("#answer")).to_have_attribute("data-state", "done")
    # The stand-in cuts `sources` and `done` mid-JSON and between CR and LF.
    expect(page.locator("#sources li")).to_have_count(2)
    expect(page.locator("#answer")).to_contain_text("Replicas scale between min and max [1].")

    invalid = page.locator("#answer [data-cite='7']")
    expect(invalid).to_have_class("cite cite-invalid")
    expect(invalid).to_have_attribute("aria-label", "Citation 7: invalid, no passage 7 was returned")
    unsupported = page.locator("#answer mark.unsupported")
    expect(unsupported).to_have_count(1)
    expect(unsupported).to_have_attribute("data-sentence", "2")
    expect(unsupported).to_contain_text("It also bakes bread")
    expect(page.locator("#answer-summary")).to_have_text(
        "3 citations · 1 invalid citation · 1 unsupported sentence · support 0.61")
    expect(page.locator("#legend")).to_be_visible()

    invalid.click()
    expect(page.locator("#passage-heading")).to_have_text("[7] Invalid citation")
    expect(page.locator("#passage-text")).to_contain_text("only 2 passages were returned")


def test_document_text_is_shown_as_text_never_as_markup(page: Any) -> None:
    ask_by_keyboard(page, "How do replicas scale?")
    expect(page.locator("#answer")).to_have_attribute("data-state", "done")
    page.locator("#sources [data-source='1']").click()
    expect(page.locator("#passage-text")).to_contain_text("<b>not bold</b> & raw <script>x</script>")
    assert page.locator("#passage b, #passage script").count() == 0


def test_the_sse_parser_reassembles_events_cut_at_any_character(page: Any) -> None:
    runs = page.evaluate(r"""() => {
        const stream = ': keep-alive\r\n\r\nevent: token\r\ndata: {"text": "a"}\r\n\r\n'
            + 'event: token\ndata: {"text":\ndata:  "b"}\n\n'
            + 'event: done\rdata: {}\r\r'
            + 'event: token\r\ndata: {"text": "never terminated"}';
        const runs = [];
        for (const size of [1, 2, 3, 7, stream.length]) {
            const got = [];
            const parser = new window.askdocs.SSEParser((name, data) => got.push([name, data]));
            for (let i = 0; i < stream.length; i += size) parser.push(stream.slice(i, i + size));
            parser.end();
            runs.push(got);
        }
        return runs;
    }""")
    expected = [["token", '{"text": "a"}'], ["token", '{"text":\n "b"}'], ["done", "{}"]]
    assert all(run == expected for run in runs), runs


def test_citation_markers_split_across_tokens_become_buttons(page: Any) -> None:
    parts = page.evaluate("""() => {
        const {tokenize} = window.askdocs;
        const first = tokenize('max [', false);
        const second = tokenize(first.rest + '1, 2][3].', false);
        return [first.parts, first.rest, second.parts, tokenize('a [b] [12', true).parts];
    }""")
    assert parts == [
        [{"text": "max "}], "[",
        [{"cite": 1}, {"cite": 2}, {"cite": 3}, {"text": "."}],
        [{"text": "a [b] [12"}],
    ]


SENTENCE_CASES = [
    "Replicas scale [1]. Beyond the queue, 503 [2] [7]. It also bakes bread [1].",
    "First claim. [2] Second claim [1][3]! Third? Yes.",
    "  Leading space. \"Quoted end.\" Next [1, 2].\n\nNew paragraph (aside.) Last",
    "No full stop at all [1]",
    "e.g. this... and that. [4]",
    "See e.g. the docs [1]. Should it? — no [2]. fs_read works [3]. Done. ok then.] fine. Ends (see [x]). here",
    "The default driver (i.e. `bridge`) has options [1]. Compare cf. Figure 2, vs. Figure 3 [2]. Done e.g. [3]. Next.",
    "See e.g. [1] The next. And e.g. [2] the last.",
    "Use a pool (e.g. [1]). Next. See e.g. [1], [2] for more. Tools (i.e. [3]) work.",
    "The locale (eg. 21-May-2001) is English [1]. Ie. Next. Done ie. [2]. Fin.",
    "The json_extract(X,P1,P2,...) extracts values [1]. Next one [2].",
    "? (question mark) matches any single character [1]. * (asterisk) matches any sequence [1].",
]


def test_the_page_splits_sentences_like_the_citation_checker(page: Any) -> None:
    from docindex.sentences import split_sentences

    # The checker's re.split swallows closing quotes/brackets after the full
    # stop; the page keeps them on screen. Compare everything else.
    def same_form(text: str) -> str:
        return " ".join(text.translate(str.maketrans("", "", "\"')]")).split())

    for answer in SENTENCE_CASES:
        pieces = page.evaluate("(a) => window.askdocs.splitSentences(a)", answer)
        assert "".join(p["text"] for p in pieces) == answer
        on_page = [same_form(p["text"]) for p in pieces if p["index"] is not None]
        assert [p["index"] for p in pieces if p["index"] is not None] == list(range(len(on_page)))
        assert on_page == [same_form(s) for s in split_sentences(answer)], answer

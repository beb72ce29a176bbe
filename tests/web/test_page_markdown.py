"""Sources and passages on the page (issue 18 item 6), in headless Chromium
against the protocol stand-in: four passages of one section are told apart by
their excerpts, a passage is rendered from Markdown with DOM nodes only (no
raw `**`, code blocks as code, no HTML from the document created or run),
the evidence span is marked inside the rendered text, and the collection
selector lists the index's collections and sends the chosen one."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser import ask_by_keyboard, browser_missing, serve_in_thread

pytestmark = pytest.mark.browser
if browser_missing():
    pytest.skip(browser_missing(), allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

from tests.web import stand_in  # noqa: E402

SECTION_QUESTION = "How do I set up the section?"


@pytest.fixture(scope="module")
def stand_in_url() -> Iterator[str]:
    with serve_in_thread(stand_in.app) as url:
        yield url


@pytest.fixture
def page(open_page: Callable[..., Any], stand_in_url: str) -> Any:
    page = open_page(stand_in_url)
    expect(page.locator("#collection")).to_have_attribute("data-loaded", "2")
    return page


def ask_section(page: Any) -> None:
    ask_by_keyboard(page, SECTION_QUESTION)
    expect(page.locator("#answer")).to_have_attribute("data-state", "done")


def test_four_sources_of_one_section_say_which_part_they_are(page: Any) -> None:
    ask_section(page)
    rows = page.locator("#sources .source-button")
    expect(rows).to_have_count(4)
    texts = rows.all_text_contents()
    assert len(set(texts)) == 4, texts
    for row in range(4):
        expect(rows.nth(row).locator(".source-title")).to_have_text("Guide › Setup")
        expect(rows.nth(row).locator(".source-path")).to_have_text("guide.md#setup")
    excerpts = page.locator("#sources .source-excerpt").all_text_contents()
    assert excerpts[0].startswith("Run the installer first.") and excerpts[1] == "Then set ASKDOCS_MODEL to a GGUF file."
    assert excerpts[2] == "Options first option second option" and excerpts[3] == "A quoted *note* about the setup."
    assert not any("**" in e or "`" in e for e in excerpts)


def test_a_passage_is_rendered_from_markdown_and_its_html_never_runs(page: Any) -> None:
    ask_section(page)
    page.locator("#sources [data-source='1']").click()
    text = page.locator("#passage-text")
    expect(text.locator("strong").first).to_have_text("installer")
    expect(text.locator("pre code")).to_have_text('make install && echo "<b>done</b>"')
    expect(text.locator("ul li")).to_have_count(2)
    expect(text.locator("ul li code")).to_have_text("inline code")
    expect(text.locator("ul li em")).to_have_text("two")
    expect(text.locator(".md-link")).to_have_text("a link")
    shown = text.text_content()
    assert "**" not in shown and "```" not in shown and '<img src=x onerror="window.pwned=1">' in shown
    assert text.locator("img, b, script, a, iframe").count() == 0
    assert page.evaluate("window.pwned") is None

    page.locator("#sources [data-source='3']").click()
    expect(text.locator("h4")).to_have_text("Options")
    expect(text.locator("ol li")).to_have_text(["first option", "second option"])
    page.locator("#sources [data-source='4']").click()
    expect(text.locator("blockquote em")).to_have_text("note")


def test_the_evidence_span_is_marked_inside_the_rendered_text(page: Any) -> None:
    ask_section(page)
    page.locator("#answer [data-cite='1']").first.click()
    marks = page.locator("#passage-text mark.evidence")
    expect(marks.first).to_be_visible()
    assert "".join(marks.all_text_contents()) == "Run the installer first."
    expect(page.locator("#passage-text strong mark.evidence")).to_have_text("installer")


def test_markdown_text_nodes_are_verbatim_slices_of_the_passage(page: Any) -> None:
    """What makes evidence offsets work: each text node is raw[offset:offset+len]."""
    bad = page.evaluate("""(cases) => {
        const bad = [];
        for (const raw of cases) {
            const {slices} = window.askdocs.renderMarkdown(raw);
            for (const [node, offset] of slices) {
                if (raw.slice(offset, offset + node.length) !== node.data) bad.push([raw, offset, node.data]);
            }
        }
        return bad;
    }""", stand_in.SECTION_TEXTS + [r"a \*not em\* b", "# Title #\n\ntext **bold *both*** end",
                                    "x_y_z __a__ `` b ` c ``"])
    assert bad == []


def test_the_collection_selector_sends_the_chosen_collection(page: Any) -> None:
    select = page.locator("#collection")
    expect(select.locator("option")).to_have_text(["All collections", "guides", "recipes"])
    expect(page.locator("#collection-hint")).to_have_text("Search one collection, or all of them.")
    stand_in.REQUESTS.clear()
    select.select_option("recipes")
    page.fill("#question", "How do replicas scale?")
    page.locator("#ask-button").click()
    expect(page.locator("#answer")).to_have_attribute("data-state", "done")
    select.select_option("")
    page.locator("#ask-button").click()
    expect(page.locator("#answer")).to_have_attribute("data-state", "done")
    assert [body.get("collection") for body in stand_in.REQUESTS] == ["recipes", None]


def test_a_source_link_opens_the_page_and_only_http_links_are_made(page: Any) -> None:
    ask_section(page)
    page.locator("#sources [data-source='1']").click()
    link = page.locator("#passage-link a")
    expect(link).to_have_attribute("href", "https://docs.example/v2/guide.md#setup")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    page.locator("#sources [data-source='2']").click()          # its url is javascript:
    expect(page.locator("#passage-heading")).to_contain_text("[2]")
    assert page.locator("#passage-link a").count() == 0 and page.evaluate("window.pwned") is None
    page.locator("#sources [data-source='3']").click()          # no url at all
    assert page.locator("#passage-link a").count() == 0


def test_a_gate_refusal_names_what_the_documents_never_mention(page: Any) -> None:
    ask_by_keyboard(page, "How is the weather for my Sonos speakers?")       # the stand-in's gate refusal
    expect(page.locator("#answer")).to_have_attribute("data-state", "refused")
    notice = page.locator("#notice")
    expect(notice).to_contain_text("Refused before the model was asked (relevance gate).")
    expect(notice).to_contain_text("The documents never mention: Sonos.")


def test_an_answer_says_what_the_documents_never_mention(page: Any) -> None:
    ask_section(page)                   # the stand-in answers, and names what no chunk uses (done.unknown_names)
    notice = page.locator("#notice")
    expect(notice).to_have_attribute("data-kind", "info")
    expect(notice).to_contain_text("The documents never mention: PKCE, code_challenge.")
    expect(page.locator("#answer")).to_contain_text("Run the installer first")

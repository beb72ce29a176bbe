"""The web page at GET /, in a real headless Chromium, against the real
ingress (`serve_app.ingress.create_app`) over the in-process pipeline: a
docindex MCP server on a one-file index of the dev corpus, the real gate and
citation checker, and the fake engine (steered by `[[fake:…]]` directives in
the question). API keys are on, so every request carries the bearer token the
page keeps in session storage.

Set ASKDOCS_WEB_SCREENSHOT=docs/web-page.png to refresh the README screenshot.
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.browser import ask_by_keyboard, browser_missing, serve_in_thread

pytestmark = pytest.mark.browser
if browser_missing():
    pytest.skip(browser_missing(), allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from deployments.errors import Busy  # noqa: E402
from docindex.ingest import ingest  # noqa: E402
from serve_app.ingress import create_app  # noqa: E402
from serve_app.local import LocalPipeline, build_local_pipeline  # noqa: E402
from serve_app.settings import Settings  # noqa: E402

CORPUS_DOC = Path(__file__).resolve().parents[2] / "corpora" / "cmcp" / "tools" / "crag-mcp"
API_KEY = "web-test-key"
QUESTION = "How does crag-mcp rank the passages it returns?"
OFF_TOPIC = "What is a good recipe for banana bread?"


class SwitchablePipeline:
    """The local pipeline, plus one switch: while `busy_retry_after_s` is set,
    searches raise `Busy` the way a Retriever at capacity does in the
    deployed graph (its BackPressureError), so the ingress answers 503."""

    def __init__(self) -> None:
        self.inner: LocalPipeline | None = None
        self.busy_retry_after_s: float | None = None

    async def search(self, question: str, k: int, collection: str | None, trace: Any = None) -> Any:
        if self.busy_retry_after_s is not None:
            raise Busy(retry_after_s=self.busy_retry_after_s)
        return await self.inner.search(question, k, collection, trace)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def index_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not CORPUS_DOC.is_dir():
        pytest.skip(f"dev corpus missing: {CORPUS_DOC}")
    db = tmp_path_factory.mktemp("web_index") / "askdocs.db"
    ingest([CORPUS_DOC], db, "cmcp")
    return db


@pytest.fixture(scope="module")
def pipeline() -> SwitchablePipeline:
    return SwitchablePipeline()


@pytest.fixture(scope="module")
def app_url(index_db: Path, pipeline: SwitchablePipeline) -> Iterator[str]:
    settings = Settings(
        _env_file=None, engine="fake", db=str(index_db), api_keys=[API_KEY], mcp_pool_size=1,
        mcp_call_timeout_s=60,  # a search takes ms; the shared 2-core CI box can stall for seconds
        # The page's tests steer the fake engine with [[fake:…]] in the question: words no passage
        # has, which the Gate's coverage term counts against it. These tests are about the page:
        # its Gate is the cosine floor alone (the coverage rule is tested in tests/serve).
        gate_coverage_weight=None,
        # A visible stream: the fake engine waits 15 ms between tokens.
        engine_options={"token_s": 0.015})
    app = create_app(pipeline, settings)  # type: ignore[arg-type]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        pipeline.inner = await build_local_pipeline(settings)  # in the server's own event loop
        try:
            yield
        finally:
            await pipeline.inner.close()

    app.router.lifespan_context = lifespan
    with serve_in_thread(app) as url:
        yield url


@pytest.fixture
def page(open_page: Callable[..., Any], app_url: str) -> Any:
    return open_page(app_url, api_key=API_KEY)


def words(text: str) -> str:
    """Letters and digits only: what the rendered passage must keep of the raw one."""
    return re.sub(r"[\W_]+", "", text)


def wait_for_state(page: Any, state: str) -> None:
    try:
        expect(page.locator("#answer")).to_have_attribute("data-state", state, timeout=30_000)
    except AssertionError as e:
        raise AssertionError(f"{e}\nthe page says: {page.locator('#notice').text_content()!r}") from None


def test_the_answer_streams_in_and_a_citation_opens_its_passage(page: Any) -> None:
    # Record every distinct answer text the page shows while it streams.
    page.evaluate("""() => {
        window.seen = [];
        const answer = document.getElementById('answer');
        new MutationObserver(() => {
            if (answer.dataset.state === 'streaming') window.seen.push(answer.textContent);
        }).observe(answer, {childList: true, subtree: true, characterData: true});
    }""")
    ask_by_keyboard(page, QUESTION)
    wait_for_state(page, "done")

    partials = [s for s in dict.fromkeys(page.evaluate("window.seen")) if s]
    assert len(partials) > 1, "the answer did not grow token by token"
    assert all(b.startswith(a) for a, b in zip(partials, partials[1:])), "streamed text was rewritten"
    assert page.evaluate("Number(document.getElementById('answer').dataset.tokens)") > 1
    expect(page.locator("#answer-summary")).to_contain_text("2 citations")
    expect(page.locator("#notice")).to_be_hidden()
    expect(page.locator("#legend")).to_be_hidden()

    citation = page.locator("#answer [data-cite='1']").first
    citation.click()
    expect(page.locator("#passage")).to_be_visible()
    expect(citation).to_have_attribute("aria-expanded", "true")
    sources = page.evaluate("""async () => {
        // What the server sent for [1], fetched outside the page's own parser.
        const r = await fetch('/ask?stream=false', {method: 'POST',
            headers: {'Content-Type': 'application/json',
                      'Authorization': 'Bearer ' + sessionStorage.getItem('askdocs.apiKey')},
            body: JSON.stringify({question: document.getElementById('question').value})});
        return (await r.json()).data.sources;
    }""")
    first = sources[0]
    expect(page.locator("#passage-heading")).to_have_text(f"[1] {first['title']}")
    expect(page.locator("#passage-source")).to_have_text(f"{first['source']}#{first['anchor']}")
    expect(page.locator("#passage-scores")).to_contain_text(f"cosine{first['cosine']:.3f}")
    # Rendered from Markdown: the passage's words, none of its markup (`code` is a <code> element).
    shown = page.locator("#passage-text").text_content()
    assert words(shown) == words(first["text"]) and "`" not in shown and "**" not in shown
    # The span the CitationChecker found for this sentence is highlighted, at its offsets.
    done = page.evaluate("""async () => {
        const r = await fetch('/ask?stream=false', {method: 'POST',
            headers: {'Content-Type': 'application/json',
                      'Authorization': 'Bearer ' + sessionStorage.getItem('askdocs.apiKey')},
            body: JSON.stringify({question: document.getElementById('question').value})});
        return (await r.json()).data;
    }""")
    span = next(e for e in done["evidence"] if e["n"] == 1 and e["sentence"] == 0)
    expect(page.locator("#passage-text mark.evidence").first).to_be_visible()
    marked = page.evaluate("""() => [...document.querySelectorAll('#passage-text mark.evidence')]
        .map((m) => m.textContent).join('')""")
    assert words(marked) == words(first["text"][span["start"]:span["end"]])

    page.locator("#details summary").click()
    details = page.locator("#details-list")
    expect(details).to_contain_text("Trace id")
    trace_id = page.evaluate("""() => [...document.querySelectorAll('#details-list dt')]
        .find((dt) => dt.textContent === 'Trace id').nextElementSibling.textContent""")
    assert len(trace_id) == 32 and int(trace_id, 16) >= 0
    expect(details).to_contain_text("Completion tokens")

    shot = os.environ.get("ASKDOCS_WEB_SCREENSHOT")
    if shot:
        page.locator("#answer [data-cite='2']").first.click()
        page.screenshot(path=shot, full_page=True)


def test_keyboard_alone_reaches_a_citation_and_escape_returns_to_it(page: Any) -> None:
    ask_by_keyboard(page, QUESTION)
    wait_for_state(page, "done")
    # question → k → collection → API key → Forget key → Ask → (Stop is disabled) → first citation
    for _ in range(6):
        page.keyboard.press("Tab")
    focused = page.evaluate(
        "[document.activeElement.dataset.cite, getComputedStyle(document.activeElement).outlineStyle]")
    assert focused == ["1", "solid"], "the first citation is not reachable, or its focus is invisible"
    page.keyboard.press("Enter")
    expect(page.locator("#passage")).to_be_visible()
    assert page.evaluate("document.activeElement.id") == "passage-heading"
    page.keyboard.press("Escape")
    expect(page.locator("#passage")).to_be_hidden()
    assert page.evaluate("document.activeElement.dataset.cite") == "1"


def test_k_limits_the_sources_and_stop_cancels_generation_on_the_server(
        page: Any, pipeline: SwitchablePipeline) -> None:
    page.fill("#question", QUESTION)
    page.fill("#k", "2")
    page.locator("#ask-button").click()
    wait_for_state(page, "done")
    expect(page.locator("#sources li")).to_have_count(2)

    aborted_before = len(pipeline.inner.engine.aborted)
    page.fill("#question", f"{QUESTION} [[fake:slow=0.5]]")
    page.locator("#ask-button").click()
    # Mid-stream: at least one token shown (the whole answer would take ~20 s).
    # (data-tokens is cleared when an answer starts: a stale count from the first answer let the
    # stop land before generation began, so no engine ever saw a cancel; seen under load.)
    expect(page.locator("#answer")).to_have_attribute("data-tokens", re.compile(r"^[1-9]\d*$"), timeout=10_000)
    page.locator("#stop-button").click()
    wait_for_state(page, "stopped")
    expect(page.locator("#notice")).to_contain_text("Stopped.")
    expect(page.locator("#ask-button")).to_be_enabled()
    for _ in range(600):        # the cancel travels through the server's loop: give a loaded box 30 s
        if len(pipeline.inner.engine.aborted) > aborted_before:
            break
        page.wait_for_timeout(50)
    assert len(pipeline.inner.engine.aborted) > aborted_before, "the engine never saw the cancel"


def test_a_gate_refusal_says_the_model_was_not_asked(page: Any) -> None:
    ask_by_keyboard(page, OFF_TOPIC)
    wait_for_state(page, "refused")
    notice = page.locator("#notice")
    expect(notice).to_have_attribute("data-kind", "refusal")
    expect(notice).to_contain_text("Refused before the model was asked (relevance gate).")
    expect(page.locator("#answer-summary")).to_be_hidden()


def test_a_model_refusal_is_told_apart_from_a_gate_refusal(page: Any) -> None:
    ask_by_keyboard(page, f"{QUESTION} [[fake:refuse]]")
    wait_for_state(page, "refused")
    expect(page.locator("#notice")).to_contain_text("The model declined to answer.")
    expect(page.locator("#status")).to_have_text("Refused by the model.")


def test_an_unsupported_sentence_is_highlighted(page: Any) -> None:
    ask_by_keyboard(page, f"{QUESTION} [[fake:uncited]]")
    wait_for_state(page, "done")
    mark = page.locator("#answer mark.unsupported")
    expect(mark).to_have_count(1)
    expect(mark).to_contain_text("The moon is made of green cheese.")
    expect(page.locator("#legend")).to_be_visible()


def test_a_503_is_shown_with_its_retry_after(page: Any, pipeline: SwitchablePipeline) -> None:
    pipeline.busy_retry_after_s = 7
    try:
        ask_by_keyboard(page, QUESTION)
        notice = page.locator("#notice")
        expect(notice).to_have_attribute("data-kind", "busy")
    finally:
        pipeline.busy_retry_after_s = None
    expect(notice).to_contain_text("The service is at capacity (503).")
    expect(notice).to_contain_text("Retry after 7 seconds.")
    expect(page.locator("#ask-button")).to_be_enabled()


def test_a_failure_mid_stream_is_shown_with_the_partial_answer(page: Any) -> None:
    ask_by_keyboard(page, f"{QUESTION} [[fake:midfail]]")
    wait_for_state(page, "error")
    notice = page.locator("#notice")
    expect(notice).to_contain_text("The answer failed during generation.")
    expect(notice).to_contain_text("Trace id: ")
    expect(page.locator("#answer .partial-note")).to_be_visible()


def test_a_wrong_api_key_is_explained_and_the_key_lives_in_session_storage(
        open_page: Callable[..., Any], app_url: str) -> None:
    page = open_page(app_url)  # nothing stored yet
    ask_by_keyboard(page, QUESTION)
    expect(page.locator("#notice")).to_contain_text("This server requires an API key.")
    assert page.evaluate("document.activeElement.id") == "api-key"

    page.keyboard.type("not-the-key")
    for _ in range(3):                      # API key → collection → k → question
        page.keyboard.press("Shift+Tab")
    page.keyboard.press("Control+Enter")
    expect(page.locator("#notice")).to_contain_text("did not accept the API key")

    page.reload()
    expect(page.locator("#api-key")).to_have_value("not-the-key")
    page.fill("#api-key", API_KEY)
    page.fill("#question", QUESTION)
    page.locator("#ask-button").click()
    wait_for_state(page, "done")
    page.locator("#forget-key").click()
    assert page.evaluate("sessionStorage.getItem('askdocs.apiKey')") is None


def test_text_has_a_contrast_ratio_of_at_least_4_5(page: Any) -> None:
    ask_by_keyboard(page, f"{QUESTION} [[fake:uncited]]")
    wait_for_state(page, "done")
    page.locator("#sources [data-source='1']").click()
    page.locator("#details summary").click()
    failures = page.evaluate(r"""() => {
        const rgb = (c) => (c.match(/[\d.]+/g) || []).map(Number);
        const lum = ([r, g, b]) => {
            const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
            return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        };
        const background = (el) => {
            for (; el; el = el.parentElement) {
                const c = rgb(getComputedStyle(el).backgroundColor);
                if (c.length === 3 || c[3] > 0) return c.slice(0, 3);
            }
            return [255, 255, 255];
        };
        const bad = [];
        for (const el of document.querySelectorAll('body *')) {
            const hasText = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
            if (!hasText || !el.checkVisibility() || el.closest('.visually-hidden')) continue;
            const fg = lum(rgb(getComputedStyle(el).color));
            const bg = lum(background(el));
            const ratio = (Math.max(fg, bg) + 0.05) / (Math.min(fg, bg) + 0.05);
            if (ratio < 4.5) bad.push(`${el.tagName}#${el.id}.${el.className}: ${ratio.toFixed(2)}`);
        }
        return bad;
    }""")
    assert failures == []


def test_every_control_has_a_label_and_the_answer_is_a_live_region(page: Any) -> None:
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('input, textarea, select')]
        .filter((el) => !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
        .map((el) => el.id)""")
    assert unlabelled == []
    expect(page.locator("#answer")).to_have_attribute("aria-live", "polite")


def test_the_collection_selector_lists_the_index_collections_and_asks_in_one(page: Any) -> None:
    select = page.locator("#collection")
    expect(select.locator("option")).to_have_text(["All collections", "cmcp"])   # GET /collections, with the key
    select.select_option("cmcp")
    ask_by_keyboard(page, QUESTION)
    wait_for_state(page, "done")
    expect(page.locator("#sources .source-excerpt").first).not_to_be_empty()


def test_without_the_key_the_selector_says_why_it_is_empty(open_page: Callable[..., Any], app_url: str) -> None:
    page = open_page(app_url)
    expect(page.locator("#collection")).to_have_attribute("data-loaded", "failed")
    expect(page.locator("#collection-hint")).to_have_text(
        "Collections not listed: enter the API key, then they are listed.")
    page.fill("#api-key", API_KEY)
    page.locator("#api-key").blur()
    expect(page.locator("#collection option")).to_have_text(["All collections", "cmcp"])

"""`askdocs ask` against the real ingress over the in-process pipeline (stub
index, fake engine steered by `[[fake:…]]`), served by uvicorn on 127.0.0.1:
every retrieved source is listed (cited ones marked), also when the answer
cites nothing, and --json prints the whole answer as one JSON object."""
from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator

import pytest
from click.testing import CliRunner
from starlette.applications import Starlette

from serve_app.cli import excerpt, main, source_lines
from serve_app.ingress import create_app
from serve_app.local import build_local_pipeline
from tests.serve.conftest import fake_settings
from tests.web.browser import serve_in_thread

API_KEY = "cli-test-key"
QUESTION = "What does the proxy answer when the queue is full?"


class LatePipeline:
    """The local pipeline, built inside the server's own event loop (its lifespan)."""

    inner = None

    def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    settings = fake_settings(api_keys=[API_KEY])
    pipeline = LatePipeline()
    app = create_app(pipeline, settings)  # type: ignore[arg-type]

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        pipeline.inner = await build_local_pipeline(settings)
        try:
            yield
        finally:
            await pipeline.inner.close()

    app.router.lifespan_context = lifespan
    with serve_in_thread(app) as base:
        yield base


def ask(url: str, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["ask", "--url", url, "--api-key", API_KEY, *args])
    return result.exit_code, result.stdout, result.stderr


def test_every_retrieved_source_is_listed_and_the_cited_ones_marked(url: str) -> None:
    code, out, _ = ask(url, QUESTION)
    assert code == 0, out
    rows = [line for line in out.splitlines() if line[:1] in "* " and "] " in line and "(cosine" in line]
    assert len(rows) >= 2 and any(r.startswith("* [") for r in rows) and any(r.startswith("  [") for r in rows)
    assert "Sources (retrieved; * = cited in the answer):" in out


def test_an_answer_that_cites_nothing_still_shows_what_was_retrieved(url: str) -> None:
    code, out, _ = ask(url, f"{QUESTION} [[fake:uncited]]")
    assert code == 0, out
    rows = [line for line in out.splitlines() if line.startswith("  [")]
    assert rows and not [line for line in out.splitlines() if line.startswith("* [")]


def test_json_prints_one_object_with_every_source(url: str) -> None:
    code, out, _ = ask(url, "--json", "-k", "3", f"{QUESTION} [[fake:uncited]]")
    assert code == 0, out
    data = json.loads(out)
    assert data["answer"] and data["citations"] == [] and data["refused"] is False
    assert [s["n"] for s in data["sources"]] == [1, 2, 3]
    assert {"source", "anchor", "title", "text", "cosine"} <= set(data["sources"][0])
    assert data["trace_id"]


def test_errors_are_one_line_and_exit_1(url: str) -> None:
    result = CliRunner().invoke(main, ["ask", "--url", url, "--json", QUESTION])    # no API key
    assert result.exit_code == 1 and result.stderr.strip().startswith("Error: HTTP 401:")
    assert len(result.stderr.strip().splitlines()) == 1
    code, _, err = ask(url, "--collection", "nope", QUESTION)
    assert code == 1 and err.strip().startswith("Error: HTTP 422:") and len(err.strip().splitlines()) == 1
    code, _, err = ask("http://127.0.0.1:9", QUESTION)
    assert code == 1 and "cannot reach http://127.0.0.1:9" in err and len(err.strip().splitlines()) == 1


def test_source_rows_that_share_a_heading_differ_by_their_excerpt() -> None:
    sources = [{"n": i, "source": "guide.md", "anchor": "setup", "title": "Guide › Setup", "cosine": 0.5,
                "text": f"Step {i}: run the **installer** with\n  option {i}."} for i in (1, 2)]
    lines = source_lines(sources, {2})
    assert lines[1] == "  [1] guide.md#setup  Guide › Setup  (cosine 0.50)"
    assert lines[3].startswith("* [2] ") and lines[2] != lines[4]
    assert excerpt("word " * 50).endswith(" …") and len(excerpt("word " * 50)) <= 102
    assert source_lines([], set()) == ["No sources were retrieved."]


def test_a_source_with_a_link_shows_it_under_its_row() -> None:
    from serve_app.cli import source_lines

    rows = source_lines([{"n": 1, "source": "guide.md", "anchor": "install", "title": "Guide › Install",
                          "cosine": 0.61, "text": "Run make install.",
                          "url": "https://docs.example/v2/guide.md#install"},
                         {"n": 2, "source": "faq.md", "anchor": "", "title": "", "cosine": 0.4, "text": "No."}],
                        cited={1})
    assert rows[1].startswith("* [1] guide.md#install") and rows[2] == "      https://docs.example/v2/guide.md#install"
    assert rows[4].startswith("  [2] faq.md") and "https://" not in "".join(rows[4:])


def test_a_refusal_names_what_the_documents_never_mention(capsys: pytest.CaptureFixture[str]) -> None:
    from serve_app.cli import _print_done

    done = {"refused": True, "refusal_stage": "gate", "unknown_names": ["Sonos"], "truncated": False,
            "citations": [], "invalid_citations": [], "unsupported_sentences": [], "support": 0.0}
    _print_done(done, [])
    err = capsys.readouterr().err
    assert "(refused at the gate stage)" in err and "(the documents never mention: Sonos)" in err
    _print_done({**done, "unknown_names": []}, [])
    assert "never mention" not in capsys.readouterr().err

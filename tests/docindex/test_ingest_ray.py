"""`docindex ingest --ray` (issue 14 item 3): the per-file work on Ray Data, the writing
here, and the result the local path's, bit for bit.

One real local Ray (2 CPUs, 2 actors) per module run, with the real MiniLM: the
corpus is a few small files, so it stays short. Vectors are compared exactly:
the default model runs one text per ONNX run on one thread (embedder.py), so on
one machine a vector does not depend on the process or the batch that made it.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from docindex.cli import main
from docindex.ingest import ingest

from .conftest import write_files
from .fakes import HashEmbedder

REPO = Path(__file__).resolve().parents[2]
DOCINDEX = [sys.executable, "-m", "docindex.cli"]


def docindex(*args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run([*DOCINDEX, *map(str, args)], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=900)


def dump(db: Path) -> dict[str, list[tuple]]:
    """Everything a reader sees, ids included (ingested_at aside: it is the wall clock)."""
    conn = sqlite3.connect(db)
    try:
        return {
            "documents": conn.execute("SELECT id, collection, source, path, sha256, size, mtime_ns, title, metadata "
                                      "FROM documents ORDER BY id").fetchall(),
            "chunks": conn.execute("SELECT id, doc_id, collection, ordinal, level, anchor, heading_path, text "
                                   "FROM chunks ORDER BY id").fetchall(),
            "vectors": conn.execute("SELECT chunk_id, embedding FROM vectors ORDER BY chunk_id").fetchall(),
            "quote_vectors": conn.execute("SELECT chunk_id, data FROM quote_vectors ORDER BY chunk_id").fetchall()
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'quote_vectors'").fetchone() else [],
            "fts": conn.execute("SELECT rowid, body, collection FROM chunks_fts ORDER BY rowid").fetchall(),
            "meta": conn.execute("SELECT key, value FROM meta WHERE key NOT IN ('created_at', 'updated_at') "
                                 "ORDER BY key").fetchall(),
        }
    finally:
        conn.close()


MANUAL = " ".join(f"Step {n}: the packaging helper writes file number {n} into debian/{n}.conf and checks "
                  f"rule {n * 7} before it builds version {n}.{n + 1}." for n in range(1, 41))
SECTION = "Paragraph {n} of {name}: the server validates each call, logs it and answers within its deadline.\n\n"


def page(name: str, sections: int) -> str:
    body = "".join(f"## Part {s}\n\n" + "".join(SECTION.format(n=n, name=name) for n in range(12))
                   for s in range(sections))
    return f"# {name}\n\n{body}"


def test_a_ray_ingest_writes_what_the_local_path_writes(tmp_path: Path) -> None:
    """Both start from the same index; then a file is changed, one touched (same bytes),
    one removed and one added, and each path brings its copy in line: same report,
    same rows, same ids, same vectors to the bit."""
    docs = write_files(tmp_path / "docs", {
        "a.md": page("alpha", 3), "b.md": page("beta", 1), "c/c.txt": "Plain text about TLS.\n" * 20,
        "gone.md": page("gone", 1), "touched.md": page("touched", 2), "notes.docx": b"PK\x03\x04",
        "manual.md": f"# Manual\n\n{MANUAL}\n",
    })
    local_db, ray_db = tmp_path / "local.db", tmp_path / "ray.db"
    ingest([docs], local_db, "docs")
    shutil.copyfile(local_db, ray_db)

    (docs / "a.md").write_text(page("alpha", 10))
    touched = docs / "touched.md"
    os.utime(touched, ns=(time.time_ns(), touched.stat().st_mtime_ns + 10**9))
    (docs / "gone.md").unlink()
    write_files(docs, {"new/d.md": page("delta", 6), "new/empty.md": "",
                       "new/manual.txt": MANUAL,       # a copy of the unchanged manual.md: skipped (copies.py)
                       "new/moved.html": '<html><head><meta http-equiv="refresh" content="0; url=../a.html">'
                                         '</head><body><p>Moved.</p></body></html>'})     # a redirect: skipped

    local = ingest([docs], local_db, "docs")
    result = docindex("ingest", docs, "--db", ray_db, "-c", "docs", "--ray", "local", "--ray-workers", "2")

    assert result.returncode == 3, result.stderr                 # notes.docx is skipped by both
    assert f"skipped {docs / 'notes.docx'}: unsupported file type '.docx'" in result.stderr
    assert "Traceback" not in result.stderr
    assert f"skipped {docs / 'new/manual.txt'}: a copy of the pages ingested with it" in result.stderr
    assert f"skipped {docs / 'new/moved.html'}: a redirect to ../a.html" in result.stderr
    assert result.stdout.startswith(f"2 added, 1 changed, 1 removed, 4 unchanged, 3 skipped; {local.chunks} chunks")
    assert (local.added, local.changed, local.removed, local.unchanged, local.skipped) == (2, 1, 1, 4, 3)
    expected, got = dump(local_db), dump(ray_db)
    assert len(expected["vectors"]) >= 20 and len(expected["quote_vectors"]) >= 20   # the actors embed both
    for table in expected:
        assert got[table] == expected[table], table


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_address_is_one_line_and_leaves_the_index_untouched(tmp_path: Path) -> None:
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    address = f"127.0.0.1:{closed_port()}"
    result = docindex("ingest", docs, "--db", tmp_path / "new.db", "-c", "c", "--ray", address)
    assert result.returncode == 1
    assert result.stderr.strip() == f"Error: cannot reach the Ray cluster at {address}: Connection refused"
    assert not (tmp_path / "new.db").exists()


@pytest.mark.parametrize("args, message", [
    (["--ray", "docs/"], "Error: --ray docs/: not a Ray address (auto, local, HOST:PORT or ray://HOST:PORT); "
                         "put PATHS before --ray"),
    (["--ray", "local", "--ray-workers", "0"], "Error: Invalid value for '--ray-workers'"),
    (["--ray-workers", "2"], "Error: --ray-workers needs --ray"),
    (["--ray", "local", "--dry-run"], "Error: --dry-run embeds nothing: run it without --ray"),
])
def test_bad_ray_options_are_one_line_errors(tmp_path: Path, args: list[str], message: str,
                                             fake_embedder: HashEmbedder) -> None:
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    db = tmp_path / "i.db"
    ingest([docs], db, "c", embedder=fake_embedder)
    before = db.read_bytes()
    result = CliRunner().invoke(main, ["ingest", str(docs), "--db", str(db), "-c", "c", *args])
    assert result.exit_code in (1, 2), result.output
    assert message in result.stderr and "Traceback" not in result.output
    assert db.read_bytes() == before


def test_a_missing_path_fails_before_any_ray_is_started(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["ingest", str(tmp_path / "nope"), "--db", str(tmp_path / "i.db"),
                                       "-c", "c", "--ray", "127.0.0.1:1"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and str(tmp_path / "nope") in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "i.db").exists()


def test_without_ray_data_installed_the_flag_says_which_extra_to_install(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray.data", None)      # `import ray.data` now fails
    docs = write_files(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    result = CliRunner().invoke(main, ["ingest", str(docs), "--db", str(tmp_path / "i.db"), "-c", "c", "--ray"])
    assert result.exit_code == 1
    assert result.stderr.strip().startswith("Error: --ray needs Ray Data, which is not installed")
    assert "pip install 'askdocs[ray-ingest]'" in result.stderr and not (tmp_path / "i.db").exists()



def test_every_ray_option_the_operations_guide_names_is_in_the_help() -> None:
    import re

    guide = (REPO / "docs" / "operations.md").read_text()
    named = set(re.findall(r"--ray[a-z-]*", guide))
    assert {"--ray", "--ray-workers"} <= named
    help_text = re.sub(r"-\s+", "-", CliRunner().invoke(main, ["ingest", "--help"]).output)   # click wraps at "-"
    for option in named:
        assert option in help_text, option
    assert "ray-ingest" in help_text and "ray-ingest" in guide


# A GPU-less machine can still run the GPU pipeline (readers on CPUs, embedders asking
# for one GPU each): Ray schedules on declared resources; onnxruntime then has no CUDA
# provider, so the embedder runs on the CPU, and the vectors stay the local path's.
HEAD_WITH_A_DECLARED_GPU = """
import signal, sys, threading, ray
stop = threading.Event()
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda *_: stop.set())
context = ray.init(address="local", num_cpus=2, num_gpus=1, include_dashboard=False, _temp_dir=sys.argv[2])
open(sys.argv[1], "w").write(context.address_info["gcs_address"])
while not stop.wait(1.0):
    pass
ray.shutdown()
"""


@contextmanager
def ray_head(tmp_path: Path, *, declared_gpu: bool) -> Iterator[str]:
    """A Ray head in its own process: `make run`'s (serve_app.launcher ray-head), or one declaring a GPU."""
    address_file = tmp_path / "ray-address"
    temp_dir = Path(f"/tmp/askdocs-ray-{uuid.uuid4().hex[:8]}")       # AF_UNIX paths must stay short
    argv = ([sys.executable, "-c", HEAD_WITH_A_DECLARED_GPU, str(address_file), str(temp_dir)] if declared_gpu else
            [sys.executable, "-m", "serve_app.launcher", "ray-head", str(address_file), str(temp_dir), "2"])
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
           "RAY_raylet_start_wait_time_s": "120"}
    head = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        while not (address_file.is_file() and address_file.read_text().strip()):
            assert head.poll() is None, f"the Ray head exited with {head.returncode}"
            time.sleep(0.5)
        yield address_file.read_text().strip()
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(timeout=120)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("declared_gpu", [False, True], ids=["make-run-head", "declared-gpu"])
def test_a_ray_ingest_against_a_running_head_writes_what_the_local_path_writes(tmp_path: Path,
                                                                                declared_gpu: bool) -> None:
    docs = write_files(tmp_path / "docs", {"a.md": page("alpha", 3), "b.md": page("beta", 2), "c.txt": "TLS.\n" * 9})
    ingest([docs], tmp_path / "local.db", "docs")
    with ray_head(tmp_path, declared_gpu=declared_gpu) as address:
        result = docindex("ingest", docs, "--db", tmp_path / "ray.db", "-c", "docs", "--ray", address)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("3 added, 0 changed, 0 removed, 0 unchanged, 0 skipped")
    expected, got = dump(tmp_path / "local.db"), dump(tmp_path / "ray.db")
    for table in expected:
        assert got[table] == expected[table], table

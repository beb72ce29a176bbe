"""A real ingest process killed with SIGKILL while it writes leaves the previous index intact."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from docindex.index import Index
from docindex.ingest import ingest

from .conftest import write_files
from .fakes import HashEmbedder

REPO = Path(__file__).resolve().parents[2]

# The child uses the fake embedder, slowed down, so that it is surely mid-run
# when killed; everything else (discovery, chunking, SQLite writes) is real.
CHILD = """
import sys
from pathlib import Path
from tests.docindex.fakes import HashEmbedder
from docindex.ingest import ingest
ingest([Path(sys.argv[1])], Path(sys.argv[2]), "docs", embedder=HashEmbedder(delay_s=0.25))
print("finished", flush=True)
"""


def big_corpus(root: Path) -> Path:
    section = " ".join(f"word{i}" for i in range(60))
    files = {f"big/file{n:03}.md": "\n\n".join(f"# File {n}\n\n## Part {p}\n\n{section} part {p}" for p in range(10))
             for n in range(300)}
    return write_files(root, files) / "big"


def snapshot(db: Path) -> tuple:
    embedder = HashEmbedder()
    with Index(db, embedder=embedder) as index:
        hits = [(h.source, h.chunk_id, round(h.fusion, 6)) for h in index.search("reverse proxy nginx", k=3)]
        return index.stats()["documents"], index.stats()["chunks"], index.version, hits


def test_sigkill_during_the_write_transaction_keeps_the_old_index(corpus, tmp_path):
    db = tmp_path / "index.db"
    ingest([corpus], db, "docs", embedder=HashEmbedder())
    before = snapshot(db)
    wal = Path(f"{db}-wal")
    wal_before = wal.stat().st_size if wal.exists() else 0

    child = subprocess.Popen([sys.executable, "-c", CHILD, str(big_corpus(tmp_path)), str(db)], cwd=REPO,
                             env={**os.environ, "PYTHONPATH": str(REPO)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        # Uncommitted pages reach the WAL when the page cache spills: wait for that.
        while time.monotonic() < deadline and child.poll() is None:
            if wal.exists() and wal.stat().st_size > wal_before + 512 * 1024:
                break
            time.sleep(0.01)
        assert child.poll() is None, f"ingest ended before it could be killed: {child.communicate()}"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
        child.communicate(timeout=10)       # closes the pipes (else a ResourceWarning, an error here, at GC)
    assert child.returncode == -signal.SIGKILL
    assert wal.stat().st_size > wal_before          # it really had written into the file

    assert snapshot(db) == before
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    report = ingest([corpus], db, "docs", embedder=HashEmbedder())   # and the index is still writable
    assert (report.unchanged, report.added, report.removed) == (3, 0, 0)

"""`docindex ingest`, the CLI itself, held inside its write transaction: once
it has written its first document (rows in the open transaction, nothing
committed), it writes SIGNAL_FILE and waits to be killed. The test that
SIGKILLs it then knows, by an event and not a clock, that the kill lands
mid-transaction.

    python tests/reliability/ingest_until_inside.py SIGNAL_FILE ingest CORPUS --db DB -c docs
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any


def hold_after_first_write(signal_file: Path) -> None:
    from docindex import ingest as ingest_module

    original = ingest_module._Writer._write

    def _write(self: Any, item: Any, *rest: Any) -> None:     # rest: the chunks' vectors, quote blobs
        original(self, item, *rest)
        if not self.conn.in_transaction:
            raise SystemExit("not inside a transaction after a write")
        signal_file.write_text(f"inside the transaction after writing {item.candidate.source}\n")
        threading.Event().wait()        # until SIGKILL

    ingest_module._Writer._write = _write


if __name__ == "__main__":
    hold_after_first_write(Path(sys.argv[1]))
    from docindex.cli import main

    sys.argv = ["docindex", *sys.argv[2:]]
    main()

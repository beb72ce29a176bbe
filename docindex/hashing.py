"""SHA-256 of a file, streamed (one helper for ingest, the model cache and the eval corpus lock)."""
from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()

"""Peak RSS of `ingest` on hostile files (issue 17 item 7), one child process per case.

    .venv/bin/python benchmarks/ingest_hostile_memory.py [--source DIR] [--cases para,sparse]

--source runs another checkout's docindex (e.g. an older commit unpacked with
`git archive COMMIT docindex | tar -x -C DIR`) for a before/after comparison.
Counting tokens uses the real MiniLM tokenizer (what the chunker costs); the
vectors come from a hashing stand-in, so the measure is the ingest's memory, not
ONNX's. Prints one JSON line per case with machine, date, commit and load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time, zlib
from pathlib import Path
import numpy as np
from tokenizers import Tokenizer
from docindex.embedder import tokenizer_path
from docindex.ingest import ingest

class Stand:
    name, dim = "bench-hash", 64
    def __init__(self):
        self.tok = Tokenizer.from_file(str(tokenizer_path()))
        self.tok.no_truncation()      # as OnnxEmbedder.count_tokens: tokens before truncation
        self.tok.no_padding()
    def count_tokens(self, text):
        return len(self.tok.encode(text).ids)
    def embed(self, texts):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, zlib.crc32(text.encode()) % self.dim] = 1.0
        return out

root, db = Path(sys.argv[1]), Path(sys.argv[2])
started = time.perf_counter()
try:
    report = ingest([root], db, "bench", embedder=Stand())
    outcome = {"added": report.added, "skipped": report.skipped, "chunks": report.chunks, "errors": report.errors}
except Exception as exc:
    outcome = {"error": f"{type(exc).__name__}: {exc}"[:300]}
outcome["seconds"] = round(time.perf_counter() - started, 1)
outcome["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(outcome))
"""


def make_case(name: str, root: Path) -> None:
    root.mkdir()
    (root / "small.md").write_text("# Small\n\nA normal document.\n")
    if name == "para":          # 8 MB paragraph, no sentence end
        words = " ".join(f"w{n % 9973}" for n in range(1_400_000))
        (root / "wall.md").write_text("# Wall\n\n" + words[:8_000_000] + "\n")
    elif name == "sparse":      # 2 GB of holes named .md
        with open(root / "sparse.md", "wb") as f:
            f.truncate(2 * 1024 ** 3)
    else:
        raise SystemExit(f"unknown case {name!r}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=REPO, help="folder holding the docindex package to run")
    parser.add_argument("--cases", default="para,sparse")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    for case in args.cases.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            make_case(case, Path(tmp) / "docs")
            env = {**os.environ, "PYTHONPATH": f"{args.source.resolve()}{os.pathsep}{REPO}"}
            proc = subprocess.run([sys.executable, "-c", CHILD, str(Path(tmp) / "docs"), str(Path(tmp) / "i.db")],
                                  env=env, cwd=tmp, capture_output=True, text=True, timeout=args.timeout)
            result = json.loads(proc.stdout) if proc.returncode == 0 else {"exit": proc.returncode,
                                                                            "stderr": proc.stderr[-500:]}
        result.update(case=case, source=str(args.source), commit=commit, machine=platform.node(),
                      cpus=os.cpu_count(), date=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                      load=[round(x, 2) for x in os.getloadavg()])
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

"""Copy serve_config.gpu.yaml into k8s/rayservice.yaml's serveConfigV2, verbatim.

    python k8s/sync_serve_config.py          # rewrite the block
    python k8s/sync_serve_config.py --check  # exit 1 if they differ

KubeRay takes the Serve config as a YAML string inside the RayService; a
copy edited by hand drifts. tests/ops/test_kuberay.py fails on any
difference and names this script.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "k8s" / "rayservice.yaml"
SOURCE = REPO / "serve_config.gpu.yaml"
HEADER = re.compile(r"^(?P<indent> *)serveConfigV2: \|\s*$")


def synced(manifest: str, source: str) -> str:
    lines = manifest.splitlines()
    start = next((i for i, line in enumerate(lines) if HEADER.match(line)), None)
    if start is None:
        raise SystemExit(f"{MANIFEST}: no 'serveConfigV2: |' line")
    body_indent = " " * (len(HEADER.match(lines[start]).group("indent")) + 2)
    end = start + 1
    # The block is every following line that is blank or indented deeper.
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(body_indent)):
        end += 1
    while end > start + 1 and not lines[end - 1].strip():  # keep blank lines after the block
        end -= 1
    block = [body_indent + line if line.strip() else "" for line in source.splitlines()]
    return "\n".join(lines[: start + 1] + block + lines[end:]) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report a difference")
    check = parser.parse_args().check
    current = MANIFEST.read_text()
    wanted = synced(current, SOURCE.read_text())
    if current == wanted:
        print("serveConfigV2 matches serve_config.gpu.yaml")
        return
    if check:
        sys.exit("serveConfigV2 differs from serve_config.gpu.yaml: run python k8s/sync_serve_config.py")
    MANIFEST.write_text(wanted)
    print(f"updated {MANIFEST.relative_to(REPO)}")


if __name__ == "__main__":
    main()

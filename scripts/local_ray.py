"""A light local Ray head, stopped cleanly on SIGTERM/SIGINT (kept for old commands).

    python scripts/local_ray.py --address-file var/ray/address [--num-cpus N] [--temp-dir DIR]

The logic lives in serve_app/launcher.py (`ray_head`), which `askdocs launch`
(make run, make eval, the load test, the image) starts for you.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from serve_app.launcher import ray_head  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address-file", type=Path, required=True)
    parser.add_argument("--num-cpus", type=int, default=0, help="0: Ray counts them")
    parser.add_argument("--temp-dir", type=Path, default=Path("/tmp/askdocs-ray"))
    args = parser.parse_args()
    ray_head(args.address_file, args.temp_dir, args.num_cpus)


if __name__ == "__main__":
    main()

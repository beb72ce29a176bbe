"""A light local Ray head for `make run`, stopped cleanly on SIGTERM/SIGINT.

    python scripts/local_ray.py --address-file var/ray/address [--num-cpus N]

Starts a NEW local cluster (never joins one that is already running), without
the dashboard (it costs ~2.7 GB and ~20 s here), writes its GCS address to
`--address-file` for `serve run --address`, and waits. On SIGTERM/SIGINT it
shuts the cluster down, stopping every Ray process it started and no other.
"""
from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address-file", type=Path, required=True)
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--temp-dir", type=Path, default=Path("/tmp/askdocs-ray"))
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")

    import ray

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    # Ray's socket paths must stay short (AF_UNIX limit): keep temp_dir short.
    context = ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False,
                       _temp_dir=str(args.temp_dir.resolve()), logging_level="WARNING")
    args.address_file.parent.mkdir(parents=True, exist_ok=True)
    args.address_file.write_text(context.address_info["gcs_address"])
    try:
        while not stop.wait(1.0):  # a timeout so signals are handled promptly
            pass
    finally:
        args.address_file.unlink(missing_ok=True)
        ray.shutdown()


if __name__ == "__main__":
    main()

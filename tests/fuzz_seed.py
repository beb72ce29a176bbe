"""One fuzzing seed per test run (issue 17 item 3): fresh every run, CI
included, printed in pytest's header (tests/conftest.py) and replayable.

    FUZZ_SEED=3141592653 make test      # the bodies of the run whose header said "fuzz seed: 3141592653"

Tests that generate inputs with hypothesis take `@hypothesis.seed(fuzz_seed())`
instead of `derandomize=True`, which sent the same bodies every run.
"""
from __future__ import annotations

import functools
import os
import secrets

VARIABLE = "FUZZ_SEED"


@functools.cache
def fuzz_seed() -> int:
    """FUZZ_SEED when set (a replay), else a fresh 32-bit seed, the same for the whole run."""
    given = os.environ.get(VARIABLE, "").strip()
    if given:
        try:
            return int(given)
        except ValueError:
            raise SystemExit(f"{VARIABLE} must be an integer, got {given!r}") from None
    return secrets.randbits(32)


def header() -> str:
    source = "from FUZZ_SEED" if os.environ.get(VARIABLE, "").strip() else "fresh"
    return f"fuzz seed: {fuzz_seed()} ({source}; replay with {VARIABLE}={fuzz_seed()})"

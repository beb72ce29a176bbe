"""Route askdocs' own loggers into Serve's replica log files.

Serve configures handlers on the "ray.serve" logger only; without this, our
`askdocs.*` warnings would reach only Python's last-resort stderr handler.
"""
from __future__ import annotations

import logging


def use_serve_logging() -> None:
    ours = logging.getLogger("askdocs")
    for handler in logging.getLogger("ray.serve").handlers:
        if handler not in ours.handlers:
            ours.addHandler(handler)
    ours.setLevel(logging.INFO)
    ours.propagate = False

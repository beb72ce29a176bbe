"""A free TCP port for a test server, chosen where nothing else will grab it.

`bind(0)` hands out a port from the kernel's ephemeral range (32768-60999 on
Linux). Between our release and the server's bind, Ray starts dozens of
processes (raylet, GCS, workers, dashboard agent) whose gRPC servers and
outgoing connections draw from that same range: CI once lost the Serve
proxy's port that way ("Failed to bind to address 127.0.0.1:40259"). So we
pick from 20000-32767: above Ray's worker range (10002-19999), below the
ephemeral one, and check that it binds.
"""
from __future__ import annotations

import random
import socket

_LOW, _HIGH = 20000, 32767


def free_port() -> int:
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randint(_LOW, _HIGH)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free TCP port in {_LOW}-{_HIGH}")

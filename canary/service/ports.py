"""Loopback ports: the demo, the simulator's in-process runs and the tests ask here."""

from __future__ import annotations

import socket


def free_port(preferred: int = 0) -> int:
    """`preferred` when it is free on 127.0.0.1, else any free port."""
    for port in (preferred, 0) if preferred else (0,):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return int(probe.getsockname()[1])
    raise OSError("no free port on 127.0.0.1")

"""A free TCP port on loopback, for servers the tests start."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (the probe socket is closed again on return)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]

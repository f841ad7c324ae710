"""A free TCP port on loopback, for tests and benches that start servers."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (bound once and released: another process may
    still take it before the caller binds, which loopback tests accept)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

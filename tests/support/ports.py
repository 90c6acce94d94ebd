"""A free port of 127.0.0.1 for a test's own server (moto, uvicorn, `groundwatch ui`).

Its own module so that a fixture needing only a port imports neither uvicorn nor the service.
"""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A port of 127.0.0.1 that is free now (the system's choice; another process may take it before use)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

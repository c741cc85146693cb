"""The smallest memcached client the tools share: read a reply to its end.

Standard library only, so scripts that run on their own (test/tsan/stress.py)
can import it by putting bench/ on sys.path.
"""
from __future__ import annotations

import socket


def read_until(s: socket.socket, end: bytes) -> bytes:
    """Receive until the data read so far ends with `end` (e.g. b"END\\r\\n");
    raise ConnectionError if the server closes first."""
    data = b""
    while not data.endswith(end):
        chunk = s.recv(65536)
        if not chunk:
            raise ConnectionError(f"server closed the connection after {data[-200:]!r}")
        data += chunk
    return data

# SPDX-License-Identifier: BSD-3-Clause
"""The memcached client every stagevar tool and test uses: connect (TCP,
also from inside a network namespace, or a unix socket), send a command,
read its reply to the end, and parse `stats` replies: the general stats
and the `settings`, `stages` and `lru_amortized` groups.

Standard library only.
"""
from __future__ import annotations

import socket
import subprocess
import sys
from types import TracebackType
from typing import Mapping

LOOPBACK = "127.0.0.1"
END = b"END\r\n"


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


def parse_stats(text: str) -> dict[str, str]:
    """A `stats [group]` reply as {name: value}: every `STAT name value`
    line (the value is the rest of the line), up to END."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        tag, _, rest = line.partition(" ")
        name, _, value = rest.partition(" ")
        if tag == "STAT" and name:
            out[name] = value
    return out


def numbers(stats: Mapping[str, str]) -> dict[str, float]:
    """The stats whose values are numbers, as floats."""
    out: dict[str, float] = {}
    for name, value in stats.items():
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


def stages(stats: Mapping[str, str]) -> dict[str, dict[str, float]]:
    """`stats stages` as {stage: {field: value}}, `_ns` dropped from the
    field names (`kernel_to_read:p99_ns` -> stages["kernel_to_read"]["p99"])."""
    out: dict[str, dict[str, float]] = {}
    for name, value in numbers(stats).items():
        stage, sep, fld = name.partition(":")
        if sep:
            out.setdefault(stage, {})[fld.removesuffix("_ns")] = value
    return out


class Client:
    """One connection to a memcached, for text-protocol commands."""

    def __init__(self, host: str = LOOPBACK, port: int = 11211, unix_path: str | None = None,
                 timeout: float = 10.0) -> None:
        if unix_path is not None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(unix_path)
        else:
            self.sock = socket.create_connection((host, port), timeout=timeout)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def command(self, line: str, end: bytes = END) -> str:
        """Send one command line; its reply, read until it ends with `end`."""
        self.sock.sendall(line.encode() + b"\r\n")
        return read_until(self.sock, end).decode(errors="replace")

    def stats(self, group: str = "") -> dict[str, str]:
        """`stats [group]` as {name: value}."""
        return parse_stats(self.command(f"stats {group}".strip()))


# Run from inside a network namespace, where this process cannot connect.
EXCHANGE = """
import socket, sys
host, port, until = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode()
s = socket.create_connection((host, port), timeout=10)
s.sendall(sys.stdin.buffer.read())
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
    if until and data.endswith(until):
        break
sys.stdout.buffer.write(data)
"""


def exchange(host: str, port: int, request: bytes, until: bytes = b"",
             netns: str | None = None) -> bytes:
    """Send `request`, read until the peer closes or the reply ends with
    `until`; from inside network namespace `netns` if given."""
    if netns is not None:
        out = subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", EXCHANGE,
                              host, str(port), until.decode()], input=request,
                             capture_output=True, timeout=30)
        if out.returncode != 0:
            raise OSError(out.stderr.decode(errors="replace").strip().splitlines()[-1:])
        return out.stdout
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
            if until and data.endswith(until):
                break
        return data


def command(host: str, port: int, line: str, netns: str | None = None, end: bytes = END) -> str:
    """One command on a connection of its own."""
    return exchange(host, port, f"{line}\r\n".encode(), end, netns).decode(errors="replace")


def stats(host: str, port: int, group: str = "", netns: str | None = None) -> dict[str, str]:
    """`stats [group]` on a connection of its own, as {name: value}."""
    return parse_stats(command(host, port, f"stats {group}".strip(), netns))

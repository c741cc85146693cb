# SPDX-License-Identifier: BSD-3-Clause
"""The built memcached servers, stock and fork, answering real clients."""
from __future__ import annotations

import socket
import subprocess

import pytest
from pymemcache.client.base import Client

from conftest import binary_or_skip
from stagevar_bench.servers import LOOPBACK, MemcachedServer


def client(server: MemcachedServer) -> Client:
    return Client((LOOPBACK, server.port), connect_timeout=5, timeout=5)


def raw_session(server: MemcachedServer, commands: bytes) -> bytes:
    """Send raw protocol bytes ending in `quit`; read until the server closes."""
    with socket.create_connection((LOOPBACK, server.port), timeout=5) as s:
        s.sendall(commands)
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
        return reply


def test_set_get_delete(memcached: MemcachedServer) -> None:
    c = client(memcached)
    assert c.set("k1", b"hello", noreply=False)
    assert c.get("k1") == b"hello"
    assert c.delete("k1", noreply=False)
    assert c.get("k1") is None


def test_incr_decr_and_cas(memcached: MemcachedServer) -> None:
    c = client(memcached)
    c.set("n", b"10", noreply=False)
    assert c.incr("n", 5) == 15
    assert c.decr("n", 20) == 0, "decr saturates at zero"
    c.set("n", b"0", noreply=False)
    value, token = c.gets("n")
    assert value == b"0"
    assert c.cas("n", b"7", token, noreply=False) is True
    assert c.cas("n", b"8", token, noreply=False) is False, "stale CAS token must be refused"
    assert c.get("n") == b"7"


def test_multiget_and_binary_values(memcached: MemcachedServer) -> None:
    c = client(memcached)
    values = {f"key{i}": bytes(range(256)) * (i + 1) for i in range(20)}
    c.set_many(values, noreply=False)
    assert c.get_many(list(values)) == values


def test_large_value(memcached: MemcachedServer) -> None:
    c = client(memcached)
    big = b"x" * (1024 * 1024 - 512)   # just under the default 1 MiB item limit
    assert c.set("big", big, noreply=False)
    assert c.get("big") == big


def test_version(memcached: MemcachedServer, variant: str) -> None:
    expected = "1.6.45-stagevar" if variant == "fork" else "1.6.45"
    assert client(memcached).version().decode() == expected
    stats = client(memcached).stats()
    assert stats[b"version"].decode() == expected
    assert int(stats[b"curr_connections"]) >= 1


SCRIPT = (b"set a 5 0 3\r\nabc\r\nget a\r\nappend a 0 0 2\r\nde\r\nget a\r\n"
          b"incr a 1\r\nset n 0 0 1\r\n9\r\nincr n 1\r\ntouch a 100\r\n"
          b"mn\r\nmg a v f\r\nms b 2\r\nhi\r\nmg b v\r\nmd b\r\nmg b v\r\n"
          b"bogus command\r\ndelete a\r\nget a\r\nquit\r\n")


def test_fork_answers_like_stock_byte_for_byte() -> None:
    replies = []
    for variant in ("stock", "fork"):
        with MemcachedServer(binary_or_skip(variant, "memcached")) as server:
            replies.append(raw_session(server, SCRIPT))
    assert replies[0] == replies[1]
    assert replies[0].startswith(b"STORED\r\nVALUE a 5 3\r\nabc\r\nEND\r\n")
    assert b"ERROR\r\n" in replies[0], "the bogus command must be rejected"


@pytest.mark.parametrize("args, needle", [
    (["-o", "no_such_option"], "no_such_option"),
    (["-R", "0"], "requests per event"),
    (["-t", "0"], "threads"),
])
def test_bad_option_exits_nonzero(variant: str, args: list[str], needle: str) -> None:
    binary = binary_or_skip(variant, "memcached")
    proc = subprocess.run([str(binary), "-u", "nobody", "-p", "0", *args],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode != 0
    assert needle in (proc.stderr + proc.stdout)

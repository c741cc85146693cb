# SPDX-License-Identifier: BSD-3-Clause
"""A closed-loop, pipelining memcached client that can saturate one
memcached worker from one CPU.

One loadgen thread writes about one request per write and parses every
reply, and runs out of CPU before a memcached worker does (README:
loadgen ~0.8x a worker). This client does far less per request: each of
its connections keeps `depth` batches of `batch` requests in flight,
writes a batch with one send of pre-built bytes and only counts the
replies' terminators (a get of a preloaded key ends with "END\\r\\n", a
set with "STORED\\r\\n"); as soon as a connection's oldest batch is
fully answered it sends the next. So the server always has requests
queued, several per read, and the client's cost per request is a few
hundred nanoseconds of byte counting.

run_together() drives the connections to several servers (one client
each) from one selector, so that one client process can load them at
the same time.

Latency is per batch: from the send of a batch to the arrival of its
last reply (in a saturated closed loop that is the queueing the
pipeline causes, the same for every side).
"""
from __future__ import annotations

import random
import selectors
import socket
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Sequence

from stagevar_bench.memcache_client import read_until

VALUE = b"v" * 32
TERMINATORS = (b"END\r\n", b"STORED\r\n")
BATCH_VARIANTS = 64     # distinct pre-built batches, cycled through


def preload(host: str, port: int, keys: int) -> None:
    """Set every key once, so that every get hits and ends with END."""
    with socket.create_connection((host, port), timeout=30) as s:
        for start in range(0, keys, 100):
            chunk = range(start, min(start + 100, keys))
            s.sendall(b"".join(b"set key%d 0 0 %d noreply\r\n%s\r\n" % (k, len(VALUE), VALUE)
                               for k in chunk))
        s.sendall(b"mn\r\n")
        read_until(s, b"MN\r\n")


def build_batches(batch: int, keys: int, get_ratio: float, seed: int) -> list[bytes]:
    """Pre-built batches of `batch` requests: gets and sets of random keys."""
    rng = random.Random(seed)
    batches = []
    for _ in range(BATCH_VARIANTS):
        parts = []
        for _ in range(batch):
            key = b"key%d" % rng.randrange(keys)
            if rng.random() < get_ratio:
                parts.append(b"get %s\r\n" % key)
            else:
                parts.append(b"set %s 0 0 %d\r\n%s\r\n" % (key, len(VALUE), VALUE))
        batches.append(b"".join(parts))
    return batches


def count_replies(data: bytes) -> int:
    return sum(data.count(t) for t in TERMINATORS)


@dataclass
class _Conn:
    sock: socket.socket
    sent_at: deque[float] = field(default_factory=deque)   # one per batch in flight
    answered: int = 0       # replies to the oldest batch so far
    tail: bytes = b""       # bytes after the last complete reply line
    next_batch: int = 0


@dataclass
class PipelineResult:
    replies: int            # replies counted in the measured window
    seconds: float          # the window's length
    batch_latency_s: list[float]

    @property
    def throughput(self) -> float:
        return self.replies / self.seconds


class PipelineClient:
    """`connections` connections to one server, each with `depth` batches
    of `batch` requests outstanding. Call run() once, or drive several
    clients (several servers) through one selector with run_together()."""

    def __init__(self, host: str, port: int, connections: int, batch: int, depth: int,
                 batches: list[bytes]) -> None:
        self.batch, self.depth, self.batches = batch, depth, batches
        self.conns: list[_Conn] = []
        for i in range(connections):
            s = socket.create_connection((host, port), timeout=10)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
            self.conns.append(_Conn(s, next_batch=i))

    def close(self) -> None:
        for conn in self.conns:
            conn.sock.close()

    def start(self, now: float) -> None:
        """Put `depth` batches in flight on every connection."""
        for conn in self.conns:
            for _ in range(self.depth):
                self._send(conn, now)

    def _send(self, conn: _Conn, now: float) -> None:
        data = self.batches[conn.next_batch % len(self.batches)]
        conn.next_batch += 1
        conn.sock.setblocking(True)     # a batch is small: let the kernel take it whole
        conn.sock.sendall(data)
        conn.sock.setblocking(False)
        conn.sent_at.append(now)

    def receive(self, conn: _Conn, now: float, latencies: list[float] | None) -> int:
        """Read what has arrived on `conn` (readable), send a batch for
        every batch fully answered; returns the replies completed."""
        try:
            chunk = conn.sock.recv(65536)
        except BlockingIOError:
            return 0
        if not chunk:
            raise ConnectionError("memcached closed a benchmark connection")
        data = conn.tail + chunk
        end = data.rfind(b"\r\n") + 2
        conn.tail = data[end:]
        replies = count_replies(data[:end])
        left = replies
        while left > 0:
            take = min(left, self.batch - conn.answered)
            conn.answered += take
            left -= take
            if conn.answered == self.batch:
                started = conn.sent_at.popleft()
                if latencies is not None:
                    latencies.append(now - started)
                conn.answered = 0
                self._send(conn, now)
        return replies

    def run(self, warmup_s: float, measure_s: float, on_window: "WindowHook") -> PipelineResult:
        return run_together([self], warmup_s, measure_s, on_window)[0]


def run_together(clients: Sequence[PipelineClient], warmup_s: float, measure_s: float,
                 on_window: "WindowHook") -> list[PipelineResult]:
    """Drive every client's connections (one client per server) through
    one selector: `warmup_s` seconds, then a window of `measure_s`
    counted per client, results in the clients' order. The first client
    starts first and its connections are registered first, which may
    favour it a little: alternate the order between runs."""
    selector = selectors.DefaultSelector()
    try:
        for i, client in enumerate(clients):
            for conn in client.conns:
                selector.register(conn.sock, selectors.EVENT_READ, (i, conn))
        return _pump(selector, clients, warmup_s, measure_s, on_window)
    finally:
        selector.close()


def _pump(selector: selectors.BaseSelector, clients: Sequence[PipelineClient], warmup_s: float,
          measure_s: float, on_window: "WindowHook") -> list[PipelineResult]:
    now = time.monotonic()
    for client in clients:
        client.start(now)
    start = now + warmup_s
    end = start + measure_s
    replies = [0] * len(clients)
    latencies: list[list[float]] = [[] for _ in clients]
    started = False
    while True:
        now = time.monotonic()
        if not started and now >= start:
            started = True
            start = now
            on_window.begin()
        if now >= end:
            on_window.end()
            return [PipelineResult(replies[i], now - start, latencies[i])
                    for i in range(len(clients))]
        for key, _ in selector.select(timeout=0.1):
            i, conn = key.data
            got = clients[i].receive(conn, time.monotonic(), latencies[i] if started else None)
            if started:
                replies[i] += got


class WindowHook:
    """Called as the measured window begins and ends (to read CPU times)."""

    def begin(self) -> None:
        pass

    def end(self) -> None:
        pass

# SPDX-License-Identifier: BSD-3-Clause
"""The fork's per-stage tracing (-o stage_trace, `stats stages`), driven by
real clients against the built server on loopback."""
from __future__ import annotations

import os
import signal
import socket
import struct
import time
from typing import Iterator

import pytest
from pymemcache.client.base import Client

from conftest import binary_or_skip
from stagevar_bench import memcache_client as mc
from stagevar_bench.servers import LOOPBACK, TRACE_EVERY_REQUEST, MemcachedServer
from stagevar_bench.machine import proc_cpu_ns

REQUEST_STAGES = ("kernel_to_read", "read_to_parse", "parse_to_response",
                  "response_to_send", "server_total")
PARTS = REQUEST_STAGES[:4]


def start(*options: str) -> MemcachedServer:
    return MemcachedServer(binary_or_skip("fork", "memcached"), args=list(options)).start()


@pytest.fixture
def traced() -> Iterator[MemcachedServer]:
    server = start("-o", TRACE_EVERY_REQUEST)
    yield server
    server.stop()


def client(server: MemcachedServer) -> Client:
    return Client((LOOPBACK, server.port), connect_timeout=5, timeout=5, default_noreply=False)


def ask(server: MemcachedServer, command: bytes, end: bytes = b"END\r\n") -> bytes:
    """One command on a fresh connection; the reply up to `end`."""
    with socket.create_connection((LOOPBACK, server.port), timeout=5) as s:
        s.sendall(command)
        reply = b""
        while not reply.endswith(end):
            chunk = s.recv(65536)
            assert chunk, f"connection closed after {reply!r}"
            reply += chunk
        return reply


def stages(server: MemcachedServer) -> dict[str, str]:
    """`stats stages` as {name: value}, once the replies the client has seen
    are recorded (see reset)."""
    time.sleep(0.05)
    return mc.stats(LOOPBACK, server.port, "stages")


def reset(server: MemcachedServer) -> None:
    """`stats reset`. Its own response is sent after the reset, so it is the
    first request the recorders count afterwards.

    A worker records a request just after its reply went out, so a client
    can see the reply a moment before it is counted; waiting a little first
    keeps an earlier request on another worker out of the new counts."""
    time.sleep(0.05)
    assert ask(server, b"stats reset\r\n", b"RESET\r\n") == b"RESET\r\n"


def num(stats: dict[str, str], key: str) -> float:
    return float(stats[key])


def test_every_request_is_counted_in_every_stage(traced: MemcachedServer) -> None:
    c = client(traced)
    c.set("k", b"v")
    reset(traced)
    k = 300
    for i in range(k // 3):
        c.set(f"key{i}", b"x" * i)
        assert c.get(f"key{i}") == b"x" * i
        c.get_many([f"key{i}", "k", "absent"])
    stats = stages(traced)
    assert stats["stage_trace"] == "on" and stats["stage_trace_kernel"] == "on"
    for stage in REQUEST_STAGES:
        counted = num(stats, f"{stage}:count") + num(stats, f"{stage}:missing")
        assert counted == k + 1, f"{stage}: {counted} requests, sent {k} after the reset"
        assert num(stats, f"{stage}:dropped") == 0
    # Loopback stamps every packet: no request lacks a kernel timestamp.
    assert num(stats, "kernel_to_read:missing") == 0
    assert num(stats, "server_total:missing") == 0


def stat_lines(reply: bytes) -> list[tuple[str, str]]:
    lines = reply.decode().split("\r\n")
    assert lines[-2:] == ["END", ""], reply[-100:]
    return [(k, v) for _, k, v in (line.split(" ") for line in lines[:-2])]


def test_stages_hist_buckets_add_up_across_workers(traced: MemcachedServer) -> None:
    """`stats stages hist` (what `stagevar exporter` reads): the summaries of
    `stats stages`, then every stage's buckets, which add up to its count
    with requests spread over the workers' recorders."""
    clients = [client(traced) for _ in range(6)]
    for i in range(300):
        c = clients[i % len(clients)]
        c.set(f"key{i}", b"x" * i)
        c.get_many([f"key{i}", f"key{i // 2}", "absent"])
    time.sleep(0.05)
    # Parsed from one read, both replies see the same recorders.
    with socket.create_connection((LOOPBACK, traced.port), timeout=5) as s:
        s.sendall(b"stats stages\r\nstats stages hist\r\n")
        both = b""
        while both.count(b"\nEND\r\n") < 2:
            chunk = s.recv(65536)
            assert chunk, f"connection closed after {both[-200:]!r}"
            both += chunk
    plain_end = both.index(b"\nEND\r\n") + len(b"\nEND\r\n")
    plain, hist = stat_lines(both[:plain_end]), stat_lines(both[plain_end:])
    assert hist[:len(plain)] == plain
    counts = dict(plain)
    buckets: dict[str, dict[int, int]] = {}
    overflow: dict[str, int] = {}
    for key, value in hist[len(plain):]:
        stage, field = key.split(":")
        if field == "overflow":
            overflow[stage] = int(value)
        else:
            assert field.startswith("bucket_") and stage not in overflow, key
            buckets.setdefault(stage, {})[int(field[len("bucket_"):])] = int(value)
    assert list(overflow) == [*REQUEST_STAGES, "batch_idle", "batch_size"]
    for stage, n in overflow.items():
        assert sum(buckets.get(stage, {}).values()) + n == int(counts[f"{stage}:count"]), stage
    assert int(counts["read_to_parse:count"]) >= 600


def test_stages_add_up_to_the_server_total(traced: MemcachedServer) -> None:
    c = client(traced)
    c.set("k", b"value")
    reset(traced)
    for _ in range(500):
        assert c.get("k") == b"value"
    stats = stages(traced)
    counts = {num(stats, f"{stage}:count") for stage in REQUEST_STAGES}
    assert counts == {501}, "every span of every request was recorded"
    parts = sum(num(stats, f"{stage}:mean_ns") for stage in PARTS)
    total = num(stats, "server_total:mean_ns")
    # Means are printed to 0.1 ns; per request the parts sum exactly to the total.
    assert parts == pytest.approx(total, abs=1.0), f"parts {parts} ns vs total {total} ns"
    for stage in REQUEST_STAGES:
        assert num(stats, f"{stage}:min_ns") <= num(stats, f"{stage}:p50_ns") \
            <= num(stats, f"{stage}:p99_ns") <= num(stats, f"{stage}:max_ns")


def test_a_pipelined_batch_is_one_batch(traced: MemcachedServer) -> None:
    batch = 50
    commands = b"".join(b"get key%d\r\n" % i for i in range(batch))
    reset(traced)
    with socket.create_connection((LOOPBACK, traced.port), timeout=5) as s:
        s.sendall(commands)   # one write, one segment on loopback
        reply = b""
        while reply.count(b"END\r\n") < batch:
            chunk = s.recv(65536)
            assert chunk
            reply += chunk
    stats = stages(traced)
    assert num(stats, "batch_size:max") >= batch
    assert num(stats, "batch_size:min") >= 1
    assert num(stats, "read_to_parse:count") == batch + 1
    # The later requests of the batch waited behind the earlier ones.
    assert num(stats, "read_to_parse:max_ns") > num(stats, "read_to_parse:min_ns")


@pytest.mark.parametrize("batch", [17, 50])
def test_pipelined_responses_all_get_their_tx_timestamps(traced: MemcachedServer,
                                                         batch: int) -> None:
    """memcached sends each get's response with its own sendmsg; a traced
    connection parks them and reads their TX timestamps back in batches,
    16 slots at a time. 17 hits fill the slots and end with one more (its
    timestamp is read with the others' and must still count); 50 refill
    them three times."""
    c = client(traced)
    for i in range(batch):
        c.set(f"key{i}", b"v")
    reset(traced)
    with socket.create_connection((LOOPBACK, traced.port), timeout=5) as s:
        s.sendall(b"".join(b"get key%d\r\n" % i for i in range(batch)))
        reply = b""
        while reply.count(b"END\r\n") < batch:
            chunk = s.recv(65536)
            assert chunk
            reply += chunk
    assert reply.count(b"VALUE ") == batch
    stats = stages(traced)
    for stage in ("response_to_send", "server_total"):
        assert num(stats, f"{stage}:count") == batch + 1, stage
        assert num(stats, f"{stage}:missing") == 0, stage
        assert num(stats, f"{stage}:dropped") == 0, stage


@pytest.mark.parametrize("k", [500, 3000])
def test_a_client_that_stops_reading_shows_its_hold_and_loses_no_request(
        traced: MemcachedServer, k: int) -> None:
    """A client that stops reading makes TCP hold the responses, and their
    TX timestamps come only once it reads again. The requests waiting for
    theirs (up to 1024 per connection) show the hold in response_to_send;
    any beyond count as missing there, never lost; and the waiting server
    does not spin on its error queue."""
    hold_s = 0.5
    c = client(traced)
    c.set("v", b"x" * 1000)
    reset(traced)
    assert traced.proc is not None
    with socket.create_connection((LOOPBACK, traced.port), timeout=5) as s:
        s.sendall(b"get v\r\n" * k)
        time.sleep(0.1)                 # the server fills the window, then waits
        cpu_before = proc_cpu_ns(traced.proc.pid)
        time.sleep(hold_s)
        waiting_cpu_s = (proc_cpu_ns(traced.proc.pid) - cpu_before) / 1e9
        reply = b""
        while reply.count(b"END\r\n") < k:
            chunk = s.recv(1 << 20)
            assert chunk
            reply += chunk
    assert reply.count(b"VALUE v ") == k
    assert waiting_cpu_s < 0.2 * hold_s, f"the server used {waiting_cpu_s:.3f} s of CPU waiting"
    stats = stages(traced)
    for stage in REQUEST_STAGES:
        counted = num(stats, f"{stage}:count") + num(stats, f"{stage}:missing")
        assert counted == k + 1, f"{stage}: {counted} requests, sent {k} after the reset"
    assert num(stats, "response_to_send:max_ns") > hold_s * 1e9
    if k <= 1024:
        assert num(stats, "response_to_send:missing") == 0


def test_a_closing_connection_ends_its_batch(traced: MemcachedServer) -> None:
    reset(traced)
    for _ in range(10):
        with socket.create_connection((LOOPBACK, traced.port), timeout=5) as s:
            s.sendall(b"get a\r\nget b\r\nquit\r\n")
            while s.recv(4096):
                pass
    stats = stages(traced)
    assert num(stats, "batch_size:count") == 11, "ten connections and the reset's"
    assert num(stats, "batch_size:max") == 3
    for stage in REQUEST_STAGES:
        assert num(stats, f"{stage}:count") + num(stats, f"{stage}:missing") == 31, stage


def binary_get(key: bytes, opaque: int) -> bytes:
    """A binary-protocol GET request."""
    return struct.pack(">BBHBBHIIQ", 0x80, 0x00, len(key), 0, 0, 0, len(key), opaque, 0) + key


def test_binary_protocol_requests_are_traced(traced: MemcachedServer) -> None:
    k = 40
    reset(traced)
    with socket.create_connection((LOOPBACK, traced.port), timeout=5) as s:
        for i in range(k):
            s.sendall(binary_get(b"nokey", i))
            header = b""
            while len(header) < 24:
                header += s.recv(24 - len(header))
            magic, _op, _kl, _el, _dt, status, body, opaque, _cas = struct.unpack(">BBHBBHIIQ", header)
            assert (magic, status, opaque) == (0x81, 1, i), "not found, for request i"
            while body:
                body -= len(s.recv(body))
    stats = stages(traced)
    assert num(stats, "parse_to_response:count") == k + 1
    assert num(stats, "server_total:count") == k + 1


def test_meta_protocol_requests_are_traced(traced: MemcachedServer) -> None:
    reset(traced)
    reply = ask(traced, b"ms mkey 2\r\nhi\r\nmg mkey v\r\nmn\r\n", b"MN\r\n")
    assert reply == b"HD\r\nVA 2\r\nhi\r\nMN\r\n"
    stats = stages(traced)
    for stage in REQUEST_STAGES:
        assert num(stats, f"{stage}:count") == 4, stage
    assert num(stats, "batch_size:max") == 3


def test_noreply_requests_count_as_missing_responses(traced: MemcachedServer) -> None:
    reset(traced)
    reply = ask(traced, b"set q 0 0 1 noreply\r\nx\r\nget q\r\n")
    assert reply == b"VALUE q 0 1\r\nx\r\nEND\r\n"
    stats = stages(traced)
    assert num(stats, "read_to_parse:count") == 3
    assert num(stats, "parse_to_response:count") == 2
    assert num(stats, "parse_to_response:missing") == 1


def slow_counts(server: MemcachedServer, at_least_ns: float) -> dict[str, int]:
    """Per stage, how many requests `stats stages hist` puts in buckets whose
    lower edge is at least at_least_ns."""
    time.sleep(0.05)
    hist = stat_lines(ask(server, b"stats stages hist\r\n"))
    slow: dict[str, int] = {}
    for key, value in hist:
        stage, _, field = key.partition(":")
        if field.startswith("bucket_") and int(field[len("bucket_"):]) >= at_least_ns:
            slow[stage] = slow.get(stage, 0) + int(value)
    return slow


def paced_gets(server: MemcachedServer, n: int, stall_every: int = 0, stall_s: float = 0.02) -> None:
    """n gets, one at a time. With stall_every, every stall_every-th request
    is sent while the server is stopped (SIGSTOP) and the server resumes
    stall_s later. The server is stopped only between a response and the
    next request, never between parsing and sending a response."""
    pid = server.proc.pid if server.proc else 0
    c = client(server)
    c.set("k", b"v")
    for i in range(1, n + 1):
        stall = stall_every and i % stall_every == 0
        if stall:
            os.kill(pid, signal.SIGSTOP)
        try:
            c._connect()
            c.sock.sendall(b"get k\r\n")
            if stall:
                time.sleep(stall_s)
        finally:
            if stall:
                os.kill(pid, signal.SIGCONT)
        reply = b""
        while not reply.endswith(b"END\r\n"):
            reply += c.sock.recv(4096)
        time.sleep(0.0005)


def test_a_stalled_server_shows_in_kernel_to_read_only(traced: MemcachedServer) -> None:
    """Ten of 200 requests wait at least 20 ms in the socket while the server
    is stopped. Each of them lands in kernel_to_read's buckets from 10 ms up
    (a bucket is narrower than 2x), however late a busy machine wakes the
    server. Were the wait put in the work after parsing, those ten would land
    there too; a busy machine may preempt a few requests mid-work, not half
    of ten in 200."""
    reset(traced)
    paced_gets(traced, 200, stall_every=20, stall_s=0.02)
    slow = slow_counts(traced, 10e6)
    assert slow.get("kernel_to_read", 0) >= 10, slow
    assert slow.get("parse_to_response", 0) < 5, slow
    assert slow.get("read_to_parse", 0) < 5, slow


def test_without_kernel_timestamps_the_kernel_stages_are_missing() -> None:
    server = start("-o", f"{TRACE_EVERY_REQUEST},stage_trace_kernel=0")
    try:
        reset(server)
        c = client(server)
        for _ in range(20):
            c.get("absent")
        stats = stages(server)
        assert stats["stage_trace_kernel"] == "off"
        for stage in ("kernel_to_read", "response_to_send", "server_total"):
            assert num(stats, f"{stage}:count") == 0
            assert num(stats, f"{stage}:missing") == 21
        assert num(stats, "parse_to_response:count") == 21
    finally:
        server.stop()


def test_tracing_off_says_so() -> None:
    server = start()
    try:
        assert ask(server, b"stats stages\r\n") == b"STAT stage_trace off\r\nEND\r\n"
        settings = ask(server, b"stats settings\r\n").decode()
        assert "STAT stage_trace no\r\n" in settings
    finally:
        server.stop()


def test_settings_show_the_options(traced: MemcachedServer) -> None:
    settings = ask(traced, b"stats settings\r\n").decode()
    assert "STAT stage_trace yes\r\n" in settings
    assert "STAT stage_trace_kernel yes\r\n" in settings


def test_reset_clears_every_worker() -> None:
    server = start("-t", "4", "-o", TRACE_EVERY_REQUEST)
    try:
        clients = [client(server) for _ in range(8)]   # spread over the workers
        for c in clients:
            c.get("absent")
        reset(server)
        stats = stages(server)
        assert num(stats, "parse_to_response:count") == 1, "only the reset itself"
    finally:
        server.stop()


def gets_one_read_each(server: MemcachedServer, n: int) -> None:
    """n gets on one connection, each sent once the last reply is in: one
    socket read per request."""
    c = client(server)
    for _ in range(n):
        assert c.get("absent") is None


@pytest.mark.parametrize("option,sample", [(",stage_trace_sample=1", 1), (",stage_trace_sample=4", 4),
                                           (",stage_trace_sample=7", 7), ("", 256)])
def test_a_sampled_server_traces_every_nth_read(option: str, sample: int) -> None:
    """-o stage_trace_sample=N (default 256) traces the requests of a
    worker's reads 1, N+1, 2N+1, ... exactly; the others are not counted
    at all, and the traced ones still get their kernel timestamps."""
    server = start("-t", "1", "-o", f"stage_trace{option}")
    try:
        k = max(40, sample + 44)                    # reads 1 and N+1 at least
        gets_one_read_each(server, k)
        traced = -(-k // sample)                    # reads 1, N+1, ... <= k
        stats = stages(server)                      # read k+1: traced after its reply
        assert stats["stage_trace_sample"] == str(sample)
        for stage in REQUEST_STAGES:
            assert num(stats, f"{stage}:count") == traced, stage
            assert num(stats, f"{stage}:missing") == 0, stage
        assert num(stats, "batch_size:count") == traced

        gets_one_read_each(server, k)
        # Reads 1..k, then the stats read k+1 (counted, if traced, after
        # its reply), then k+2..2k+1.
        want = len([r for r in range(1, 2 * k + 2) if (r - 1) % sample == 0])
        stats = stages(server)
        for stage in REQUEST_STAGES:
            assert num(stats, f"{stage}:count") == want, stage
        # A warmed connection's traced responses all got their TX timestamp.
        assert num(stats, "response_to_send:missing") == 0
        assert num(stats, "server_total:missing") == 0
    finally:
        server.stop()


@pytest.mark.parametrize("option,sample", [(",stage_trace_sample=64", 64), ("", 256)])
def test_settings_show_the_sample_rate(option: str, sample: int) -> None:
    server = start("-o", f"stage_trace{option}")
    try:
        settings = ask(server, b"stats settings\r\n").decode()
        assert f"STAT stage_trace_sample {sample}\r\n" in settings
    finally:
        server.stop()


def rss_kb(variant: str, threads: int) -> int:
    """VmRSS of a server of that build with no new option, once it answers."""
    server = MemcachedServer(binary_or_skip(variant, "memcached"),
                             args=["-t", str(threads)]).start()
    try:
        ask(server, b"version\r\n", end=b"\r\n")
        assert server.proc is not None
        with open(f"/proc/{server.proc.pid}/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    finally:
        server.stop()


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="needs /proc")
@pytest.mark.parametrize("threads", [4, 64])
def test_with_every_option_off_the_fork_takes_stocks_memory(threads: int) -> None:
    # Nothing is allocated per worker or connection for tracing while it
    # is off; resident sizes at startup repeat to within a few pages.
    stock, fork = rss_kb("stock", threads), rss_kb("fork", threads)
    assert fork <= stock * 1.05, f"-t {threads}: fork {fork} kB, stock {stock} kB"

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Protocol fuzzer for the memcached fork: mutated raw protocol bytes
(text, meta and binary, with `stats stages`, `stats reset`, `stats
settings` and the other stats subcommands well represented) sent to the
real server running with `-o stage_trace,stage_trace_sample=2` (traced
and untraced reads alternate, so both paths of every hook see the
mutated input).

A libFuzzer harness around memcached's command dispatcher would have to
link memcached's objects and fake its event loop; this drives the real
built server instead, over loopback, which is slower but needs no change
to the fork. Built with --enable-sanitizers, the server aborts on any
ASAN/UBSAN report, so "the server never crashes and keeps answering" is
the whole oracle:

- after every input, a fresh connection must get `VERSION` back;
- every 50 inputs, `stats stages` must be well formed (STAT lines, END).

An input that breaks either is written to --crashes and reported with a
reproducer (`fuzz/memcached_proto.py --replay FILE`); the exit status is
then 1. With --seconds 0 the seeds are replayed once (regression mode).
"""
from __future__ import annotations

import argparse
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOPBACK = "127.0.0.1"

TOKENS = [
    b"stats stages\r\n", b"stats reset\r\n", b"stats settings\r\n", b"stats\r\n",
    b"stats slabs\r\n", b"stats items\r\n", b"stats sizes\r\n", b"stats conns\r\n",
    b"stats detail on\r\n", b"stats detail dump\r\n", b"stats stages x\r\n", b"stats stage\r\n",
    b"stats stagesX\r\n", b"get k\r\n", b"gets a b c\r\n", b"set k 0 0 1\r\nv\r\n",
    b"set k 0 0 1 noreply\r\nv\r\n", b"incr n 1\r\n", b"delete k\r\n", b"touch k 1\r\n",
    b"mg k v\r\n", b"ms k 1\r\nv\r\n", b"md k q\r\n", b"mn\r\n", b"ma n\r\n", b"version\r\n",
    b"verbosity 0\r\n", b"flush_all\r\n", b"noop\r\n", b"\r\n", b"\n", b" ", b"\x00", b"\xff",
    b"noreply", b"4294967295", b"18446744073709551615", b"-1", b"99999999999999999999",
]
INTERESTING_NUMBERS = [b"0", b"1", b"-1", b"250", b"251", b"1048576", b"2147483648",
                       b"4294967296", b"18446744073709551616"]
BINARY_OPCODES = [0x00, 0x01, 0x04, 0x05, 0x07, 0x08, 0x0a, 0x0b, 0x10, 0x1c, 0x20, 0x41]
STAT_KEYS = [b"", b"stages", b"settings", b"reset", b"slabs", b"items", b"sizes", b"stages\x00"]


def binary_frame(rng: random.Random) -> bytes:
    """A binary-protocol request, mostly well formed, sometimes not."""
    op = rng.choice(BINARY_OPCODES)
    key = rng.choice(STAT_KEYS) if op == 0x10 else rng.choice([b"k", b"", b"x" * 300])
    extras = bytes(rng.choice([0, 4, 8, 20]))
    value = rng.choice([b"", b"v", b"x" * 100])
    body = len(extras) + len(key) + len(value)
    if rng.random() < 0.2:
        body = rng.choice([0, body - 1, body + 1, 0xFFFFFFFF])
    header = struct.pack(">BBHBBHIIQ", rng.choice([0x80, 0x80, 0x80, 0x81, 0x00]), op,
                         len(key) if rng.random() < 0.9 else rng.randrange(65536),
                         len(extras), 0, 0, body & 0xFFFFFFFF, rng.randrange(1 << 32), 0)
    return header + extras + key + value


def mutate(data: bytes, seeds: list[bytes], rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(9)
        pos = rng.randint(0, len(b))
        if choice == 0 and b:
            b[min(pos, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif choice == 1:
            b[pos:pos] = rng.choice(TOKENS)
        elif choice == 2 and b:
            end = min(len(b), pos + rng.randint(1, 16))
            del b[pos:end]
        elif choice == 3 and b:
            start = rng.randrange(len(b))
            b[pos:pos] = b[start:start + rng.randint(1, 32)]
        elif choice == 4:
            b[pos:pos] = rng.choice(INTERESTING_NUMBERS)
        elif choice == 5:
            b[pos:pos] = binary_frame(rng)
        elif choice == 6:
            other = rng.choice(seeds)
            b = b[:pos] + bytearray(other[rng.randint(0, len(other)):])
        elif choice == 7 and len(b) < 4096:
            b = b * rng.randint(2, 4)     # pipelined repeats
        else:
            b[pos:pos] = bytes([rng.randrange(256)])
    return bytes(b[:16384])


class Server:
    """The fork on a free loopback port, its stderr kept for reports."""

    def __init__(self, binary: Path, options: str) -> None:
        self.binary, self.options = binary, options
        self.log = Path(tempfile.mkstemp(prefix="stagevar-fuzz-memcached-", suffix=".log")[1])
        self.proc: subprocess.Popen[bytes] | None = None
        self.port = 0

    def start(self) -> None:
        with socket.socket() as s:
            s.bind((LOOPBACK, 0))
            self.port = s.getsockname()[1]
        # As root, run it as root (memcached's own t/ does too): after a
        # drop to nobody the process is not dumpable, the sanitizers cannot
        # read /proc/self, and their reports lose symbols, log_path and
        # suppressions.
        user = ["-u", "root"] if os.geteuid() == 0 else []
        cmd = [str(self.binary), *user, "-l", LOOPBACK, "-p", str(self.port), "-U", "0",
               "-t", "2", "-m", "64", "-o", self.options]
        with open(self.log, "ab") as err:
            self.proc = subprocess.Popen(cmd, stdout=err, stderr=err)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.alive_and_answering(timeout=0.5):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise RuntimeError(f"memcached did not start: {self.log.read_text(errors='replace')}")

    def alive_and_answering(self, timeout: float = 5.0) -> bool:
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=timeout) as s:
                s.sendall(b"version\r\n")
                return read_until(s, b"\r\n", timeout).startswith(b"VERSION ")
        except OSError:
            return False

    def stop(self) -> str:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        text = self.log.read_text(errors="replace")
        self.log.unlink(missing_ok=True)
        return text


def read_until(s: socket.socket, end: bytes, timeout: float) -> bytes:
    s.settimeout(timeout)
    data = b""
    while not data.endswith(end):
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def send_input(port: int, data: bytes) -> None:
    """Send the input, read whatever comes back for a moment, close."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=2) as s:
            s.sendall(data)
            s.settimeout(0.02)
            try:
                while s.recv(65536):
                    pass
            except (socket.timeout, ConnectionResetError):
                pass
    except OSError:
        pass        # a reset from the server is its right; liveness decides


def stages_well_formed(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=5) as s:
            s.sendall(b"stats stages\r\n")
            reply = read_until(s, b"END\r\n", 5).decode("ascii")
    except (OSError, UnicodeDecodeError):
        return False
    lines = reply.split("\r\n")
    return lines[-2:] == ["END", ""] and all(
        len(l.split(" ")) == 3 and l.startswith("STAT ") for l in lines[:-2])


def report(server: Server, data: bytes, crashes: Path, why: str) -> None:
    crashes.mkdir(parents=True, exist_ok=True)
    path = crashes / f"memcached-proto-{int(time.time())}-{os.getpid()}.bin"
    path.write_bytes(data)
    log = server.stop()
    print(f"memcached_proto: {why}; input saved to {path}\n"
          f"reproduce: {sys.argv[0]} --binary {server.binary} --replay {path}\n"
          f"--- server output ---\n{log[-6000:]}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    seeds = [p.read_bytes() for p in sorted(Path(args.corpus).iterdir()) if p.is_file()] \
        if args.corpus else []
    replay = [Path(args.replay).read_bytes()] if args.replay else seeds
    if not replay:
        print("memcached_proto: no seeds", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    server = Server(Path(args.binary), args.options)
    server.start()
    deadline = time.monotonic() + args.seconds
    n = 0
    inputs = iter(replay)
    while True:
        data = next(inputs, None)
        if data is None:
            if args.replay or time.monotonic() >= deadline:
                break
            data = mutate(rng.choice(seeds), seeds, rng)
        send_input(server.port, data)
        n += 1
        if not server.alive_and_answering():
            report(server, data, Path(args.crashes), "server died or stopped answering")
            return 1
        if n % 50 == 0 and not stages_well_formed(server.port):
            report(server, data, Path(args.crashes), "stats stages is malformed")
            return 1
    if not stages_well_formed(server.port):
        report(server, b"", Path(args.crashes), "stats stages is malformed at the end")
        return 1
    log = server.stop()
    if "Sanitizer" in log or "runtime error" in log:
        print(f"memcached_proto: sanitizer report\n{log[-6000:]}", file=sys.stderr)
        return 1
    print(f"memcached_proto: {n} inputs, server alive and answering")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True, help="the fork's memcached")
    p.add_argument("--corpus", help="directory of seed inputs")
    p.add_argument("--replay", help="send this one input and check the server")
    p.add_argument("--seconds", type=float, default=60, help="mutate for this long (0: seeds only)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--options", default="stage_trace,stage_trace_sample=2",
                   help="the server's -o options")
    p.add_argument("--crashes", default="fuzz-crashes", help="where failing inputs are saved")
    return run(p.parse_args())


if __name__ == "__main__":
    sys.exit(main())

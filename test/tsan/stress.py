#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Bounded multi-connection stress of the memcached fork with tracing on,
for a ThreadSanitizer build (tools/check-tsan).

Four worker threads (-t 4), 8 MB of memory so sets keep evicting, and for
--seconds, all at once:
- 8 connections doing sets (random sizes, some with TTLs), 2 in binary,
  6 in text protocol with gets, some pipelined;
- one connection polling `stats` and `stats settings`;
- one polling `stats stages` and `stats stages hist` (the cross-thread
  readers of the recorders);
- one sending `stats reset` every 50 ms (the generation bump each worker
  acts on).
Then the server must still answer and `stats stages` be well formed.
Exit status 1 if a client saw an error or the server died; the sanitizer
verdict is read from its reports by the caller.
"""
from __future__ import annotations

import argparse
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

# Runs on its own (tools/check-tsan): the shared client helper is in bench/.
from stagevar_bench.memcache_client import read_until

LOOPBACK = "127.0.0.1"


def setter(port: int, stop: threading.Event, seed: int, errors: list[str]) -> None:
    rng = random.Random(seed)
    # memcached picks a connection's protocol from its first byte: the
    # first two setters speak binary only, the others text.
    binary = seed < 2
    try:
        with socket.create_connection((LOOPBACK, port), timeout=30) as s:
            while not stop.is_set():
                key = b"k%d" % rng.randrange(20000)
                value = os.urandom(rng.choice([10, 100, 1000, 4000]))
                ttl = rng.choice([0, 0, 1, 2])
                if binary:      # a binary SET
                    extras = struct.pack(">II", 0, ttl)
                    s.sendall(struct.pack(">BBHBBHIIQ", 0x80, 0x01, len(key), 8, 0, 0,
                                          8 + len(key) + len(value), 1, 0) + extras + key + value)
                    header = b""
                    while len(header) < 24:
                        header += s.recv(24 - len(header))
                    body = struct.unpack(">I", header[8:12])[0]
                    while body:
                        body -= len(s.recv(body))
                    continue
                # Pipeline small values only: a large pipelined write while
                # the replies pile up unread would deadlock client and server.
                batch = rng.randint(1, 8) if len(value) <= 1000 else 1
                req = b"".join(b"set %s 0 %d %d\r\n%s\r\nget %s\r\n" % (key, ttl, len(value), value, key)
                               for _ in range(batch))
                s.sendall(req)
                reply = b""
                while reply.count(b"END\r\n") < batch:
                    reply += read_until(s, b"END\r\n")
                # SERVER_ERROR out of memory is the memory pressure at work.
                if b"CLIENT_ERROR" in reply or reply.startswith(b"ERROR") or b"\nERROR" in reply:
                    errors.append(f"setter: {reply[:200]!r}")
                    return
    except OSError as e:
        errors.append(f"setter: {e}")


def poller(port: int, stop: threading.Event, commands: list[bytes], pause: float,
           errors: list[str]) -> None:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=30) as s:
            while not stop.is_set():
                for cmd in commands:
                    s.sendall(cmd)
                    reply = read_until(s, b"RESET\r\n" if cmd == b"stats reset\r\n" else b"END\r\n")
                    if b"ERROR" in reply:
                        errors.append(f"{cmd!r}: {reply[:200]!r}")
                        return
                time.sleep(pause)
    except OSError as e:
        errors.append(f"poller {commands!r}: {e}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--seconds", type=float, default=60)
    args = p.parse_args()
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port = s.getsockname()[1]
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    server = subprocess.Popen([args.binary, *user, "-l", LOOPBACK, "-p", str(port), "-U", "0",
                               "-t", "4", "-m", "8", "-c", "64", "-o", "stage_trace,stage_trace_sample=1"])
    deadline = time.monotonic() + 60     # TSAN makes start-up slow
    while True:
        try:
            socket.create_connection((LOOPBACK, port), timeout=1).close()
            break
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                print("stress: memcached did not start", file=sys.stderr)
                return 1
            time.sleep(0.1)
    stop, errors = threading.Event(), []
    threads = [threading.Thread(target=setter, args=(port, stop, i, errors)) for i in range(8)]
    threads += [
        threading.Thread(target=poller, args=(port, stop, [b"stats\r\n", b"stats settings\r\n"], 0.01, errors)),
        threading.Thread(target=poller, args=(port, stop, [b"stats stages\r\n", b"stats stages hist\r\n"], 0.005, errors)),
        threading.Thread(target=poller, args=(port, stop, [b"stats reset\r\n"], 0.05, errors)),
    ]
    for t in threads:
        t.start()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    try:
        with socket.create_connection((LOOPBACK, port), timeout=30) as s:
            s.sendall(b"stats stages\r\n")
            final = read_until(s, b"END\r\n").decode()
        assert "STAT stage_trace on" in final, final[:200]
    except (OSError, AssertionError) as e:
        errors.append(f"final stats stages: {e}")
    server.terminate()
    server.wait(timeout=60)
    for e in errors:
        print(f"stress: {e}", file=sys.stderr)
    print(f"stress: {args.seconds:.0f} s, {len(threads)} connections, "
          f"{'no client errors' if not errors else f'{len(errors)} client errors'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

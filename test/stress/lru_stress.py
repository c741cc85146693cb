# SPDX-License-Identifier: BSD-3-Clause
"""Bounded stress of a memcached fork with amortized LRU maintenance: many
connections setting under memory pressure, value sizes that shift half way
so slab automove has pages to move, short TTLs for the crawler, a small
hash table that has to grow (pause_threads() with workers slicing), and a
client polling every stats subcommand, resetting stats and starting crawls.

    python3 lru_stress.py BINARY [--seconds N] [--connections N] [--log FILE]
                                 [--server "OPTIONS"]

Exits 0 if the server answered to the end and did the maintenance asked
of it; the sanitizer verdict is the caller's (lru-stress reads the log).
"""
from __future__ import annotations

import argparse
import random
import shlex
import socket
import sys
import threading
import time
from pathlib import Path


from stagevar_bench import memcache_client as mc
from stagevar_bench.servers import LOOPBACK, MemcachedServer

STATS_KINDS = (b"", b"items", b"slabs", b"settings", b"lru_amortized", b"sizes", b"conns")


def ask(sock: socket.socket, command: bytes, ends: tuple[bytes, ...]) -> bytes:
    sock.sendall(command)
    reply = b""
    while not reply.endswith(ends):
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError(f"closed after {command!r}")
        reply += chunk
    return reply


def stats(port: int, kind: bytes = b"") -> dict[str, str]:
    return mc.stats(LOOPBACK, port, kind.decode())


def setter(port: int, seed: int, stop: float, phase_at: float, errors: list[str]) -> None:
    """Pipelined sets and gets; small values first, large ones later."""
    rng = random.Random(seed)
    try:
        with socket.create_connection((LOOPBACK, port), timeout=60) as s:
            while time.monotonic() < stop:
                big = time.monotonic() > phase_at
                batch = []
                for _ in range(20):
                    key = f"k{rng.randrange(200000)}".encode()
                    size = rng.randrange(2000, 9000) if big else rng.randrange(50, 600)
                    ttl = rng.choice((0, 0, 0, 1, 2))
                    batch.append(b"set %s 0 %d %d\r\n%s\r\n" % (key, ttl, size, b"x" * size))
                    batch.append(b"get %s\r\n" % key)
                    hot = f"k{rng.randrange(500)}".encode()   # hot keys: COLD hits, bumps
                    batch.append(b"get %s\r\n" % hot)
                batch.append(b"mn\r\n")
                ask(s, b"".join(batch), (b"MN\r\n",))
    except (OSError, ConnectionError) as e:
        errors.append(f"setter {seed}: {e}")


def poller(port: int, stop: float, errors: list[str]) -> None:
    """Every stats subcommand, stats reset and crawls, over and over."""
    n = 0
    try:
        with socket.create_connection((LOOPBACK, port), timeout=60) as s:
            while time.monotonic() < stop:
                kind = STATS_KINDS[n % len(STATS_KINDS)]
                ask(s, b"stats " + kind + b"\r\n", (b"END\r\n",))
                if n % 50 == 0:
                    ask(s, b"stats reset\r\n", (b"RESET\r\n",))
                if n % 30 == 0:
                    ask(s, b"lru_crawler crawl all\r\n", (b"OK\r\n", b"BUSY currently processing crawler request\r\n"))
                n += 1
                time.sleep(0.02)
    except (OSError, ConnectionError) as e:
        errors.append(f"poller: {e}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--connections", type=int, default=24)
    ap.add_argument("--log", help="keep the server's output here")
    ap.add_argument("--server", default="-o lru_amortized_budget_us=20",
                    help="server options on top of the stress setup")
    a = ap.parse_args()

    args = ["-m", "32", "-t", "4", "-c", "4096", "-o", "hashpower=13,slab_automove=1,slab_automove_window=3",
            *shlex.split(a.server)]
    server = MemcachedServer(Path(a.binary), args=args, start_timeout=120)
    server.start()
    errors: list[str] = []
    start = time.monotonic()
    stop = start + a.seconds
    workers = [threading.Thread(target=setter, args=(server.port, i, stop, start + a.seconds / 2, errors))
               for i in range(a.connections)]
    workers.append(threading.Thread(target=poller, args=(server.port, stop, errors)))
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    try:
        general = stats(server.port)
        amortized = stats(server.port, b"lru_amortized")
    except (OSError, ConnectionError) as e:
        errors.append(f"final stats: {e}")
        general, amortized = {}, {}
    # Stop it ourselves and keep its output: the sanitizers report there.
    assert server.proc is not None and server._log is not None
    server.proc.terminate()
    server.proc.wait(timeout=120)
    if a.log:
        Path(a.log).write_text(server._log.read_text(errors="replace"))
    server.stop()

    print(f"lru_stress: {a.seconds:.0f}s, {a.connections} connections, server {' '.join(args)}")
    for key in ("cmd_set", "get_hits", "get_misses", "evictions", "reclaimed", "crawler_reclaimed",
                "moves_to_cold", "moves_to_warm", "slabs_moved", "hash_power_level", "lru_maintainer_juggles",
                "lru_bumps_dropped"):
        print(f"  {key} {general.get(key, '?')}")
    for key, value in amortized.items():
        print(f"  lru_amortized.{key} {value}")
    if int(general.get("hash_power_level", 0)) <= 13:
        errors.append("the hash table never grew: pause_threads() was not exercised")
    if int(general.get("evictions", 0)) == 0:
        errors.append("no evictions: no memory pressure")
    for e in errors:
        print(f"lru_stress: FAIL {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

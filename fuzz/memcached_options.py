#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Command-line fuzzer for the memcached fork's `-o stage_trace[=V]` and
`-o stage_trace_kernel=V`: mutated `-o` strings given to the real binary.

The oracle is a model of how memcached reads `-o` (getsubopt: items split
at commas, one trailing comma ignored, NAME or NAME=VALUE, the value
after the first '='): for strings made of our two options, it predicts
whether the server starts and, if not, the exact one-line error of the
first bad item (after the leading white space memcached skips). Every run must also be free of sanitizer reports and
signals. Starting servers is slow (each good string is held for a
moment to see it keep running), so inputs are biased towards errors.

Failing inputs are saved to --crashes with a reproducer; exit status 1.
With --seconds 0 the seed strings in --corpus (one per line) are
replayed once (regression mode).
"""
from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path

NAMES = [b"stage_trace", b"stage_trace_kernel"]
VALUES = [b"0", b"1", b"", b"2", b"01", b"-1", b"on", b"1 ", b" 1", b"1=1", b"\t", b"x" * 300,
          b"\xff\xfe", b"0x1", b"1.0", b"99999999999999999999", b"%s%n", b"'"]
# How long a server that should start gets to prove it keeps running.
HOLD_S = 0.3


def expected(option: bytes) -> bytes | None:
    """None if memcached should start with `-o option`, else its error line."""
    # memcached skips an option argument's leading white space (isspace,
    # C locale) before it reads the items.
    option = option.lstrip(b" \t\n\v\f\r")
    items = option.split(b",")
    if option.endswith(b","):
        items = items[:-1]
    for item in items if option else []:
        name, eq, value = item.partition(b"=")
        if name not in NAMES:   # glibc's getsubopt hands back the whole item
            return b'Illegal suboption "' + item + b'"'
        if name == b"stage_trace" and not eq:
            continue
        if value not in (b"0", b"1"):
            return name + b": '" + value + b"' is not 0 or 1"
    return None


def generate(rng: random.Random, seeds: list[bytes]) -> bytes:
    if seeds and rng.random() < 0.3:
        b = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            pos = rng.randint(0, len(b))
            what = rng.randrange(4)
            if what == 0 and b:
                del b[pos:pos + rng.randint(1, 4)]
            elif what == 1:
                b[pos:pos] = rng.choice([b",", b"=", b"0", b"1", rng.choice(NAMES)])
            elif what == 2:
                b[pos:pos] = bytes([rng.randrange(1, 256)])
            else:
                b[pos:pos] = rng.choice(VALUES)
        return bytes(b).replace(b"\x00", b"")
    items = []
    for _ in range(rng.randint(1, 3)):
        name = rng.choice(NAMES)
        if rng.random() < 0.1:
            name = name[:rng.randrange(len(name))] + name[rng.randrange(len(name)):]
        value = rng.choice(VALUES)
        items.append(name if rng.random() < 0.15 else name + b"=" + value)
    return b",".join(items) + (b"," if rng.random() < 0.1 else b"")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def check(binary: Path, option: bytes) -> str | None:
    """Run memcached with -o option; None if it behaved as predicted."""
    # -u root, not nobody: see memcached_proto.py (sanitizer reports).
    user = [b"-u", b"root"] if os.geteuid() == 0 else []
    cmd = [os.fsencode(binary), *user, b"-l", b"127.0.0.1", b"-p", str(free_port()).encode(),
           b"-U", b"0", b"-o", option]
    want = expected(option)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=HOLD_S if want is None else 10)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
        if want is not None:
            return f"started, but should have refused: {want!r}"
        return None if b"Sanitizer" not in err and b"runtime error" not in err else err.decode(errors="replace")
    text = out + err
    if b"Sanitizer" in text or b"runtime error" in text or proc.returncode < 0:
        return f"status {proc.returncode}: {text.decode(errors='replace')[-3000:]}"
    if want is None:
        return f"exited {proc.returncode}, should have started: {text!r}"
    lines = [l for l in text.splitlines() if l.strip()]
    if proc.returncode == 0 or lines != [want]:
        return f"exit {proc.returncode}, output {text!r}, wanted {want!r}"
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--corpus", help="file of seed -o strings, one per line")
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--crashes", default="fuzz-crashes")
    args = p.parse_args()
    seeds = [l for l in Path(args.corpus).read_bytes().split(b"\n") if l] if args.corpus else []
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds
    n = 0
    queue = list(seeds)
    while queue or time.monotonic() < deadline:
        option = queue.pop(0) if queue else generate(rng, seeds)
        problem = check(Path(args.binary), option)
        n += 1
        if problem:
            crashes = Path(args.crashes)
            crashes.mkdir(parents=True, exist_ok=True)
            path = crashes / f"memcached-options-{int(time.time())}-{os.getpid()}.txt"
            path.write_bytes(option + b"\n")
            print(f"memcached_options: -o {option!r}: {problem}\nsaved to {path}; reproduce: "
                  f"{sys.argv[0]} --binary {args.binary} --corpus {path} --seconds 0", file=sys.stderr)
            return 1
    print(f"memcached_options: {n} command lines, each as predicted")
    return 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-3-Clause
"""The memcached fork built with --enable-seccomp, run with
`-o drop_privileges` (memcached's seccomp filters: a worker that makes a
system call they do not allow kills the server) and each of its options:
it must stay up and answer through sets, an idle pause (when timers
fire), a get and every stats subcommand. One TAP result per option.

    seccomp_check.py --binary build/memcached-seccomp/memcached
"""
from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from stagevar_bench.servers import MemcachedServer, ServerError, tail

SETS = 3000
PIPELINE = 100          # sets per write: a few reads of many requests
IDLE_S = 1.5            # every worker idle: what runs on timers runs now
IO_TIMEOUT_S = 20.0     # any one reply; a dead server fails sooner


# Two CPUs this process may use (0 and 1 on most machines), one if that
# is all there is.
ALLOWED = sorted(os.sched_getaffinity(0))
WORKER_CPU, HELPER_CPU = ALLOWED[0], ALLOWED[min(1, len(ALLOWED) - 1)]


@dataclass(frozen=True)
class Case:
    option: str
    expect_settings: tuple[str, ...]    # "STAT ..." lines of `stats settings`
    expect_stages: tuple[str, ...]      # lines `stats stages` must hold
    traced_every_request: bool = False


CASES = (
    Case("lru_amortized_budget_us=20", ("STAT lru_amortized_budget_us 20",),
         ("STAT stage_trace off",)),
    Case("stage_trace", ("STAT stage_trace yes",),
         ("STAT stage_trace on", "STAT stage_trace_kernel on")),
    Case("stage_trace,stage_trace_sample=1", ("STAT stage_trace_sample 1",),
         ("STAT stage_trace on", "STAT stage_trace_kernel on"), True),
    # both topics allow clock_gettime: the filter takes the rule twice
    Case("lru_amortized_budget_us=20,stage_trace,stage_trace_sample=1",
         ("STAT lru_amortized_budget_us 20", "STAT stage_trace_sample 1"),
         ("STAT stage_trace on", "STAT stage_trace_kernel on"), True),
    Case(f"worker_cpus={WORKER_CPU},pin_helpers={HELPER_CPU}",
         (f"STAT worker_cpus {WORKER_CPU}", f"STAT pin_helpers {HELPER_CPU}"),
         ("STAT stage_trace off",)),
)


class Client:
    """A text-protocol client whose every read is bounded in time."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def until(self, end: bytes) -> bytes:
        while end not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError(f"connection closed; had {self.buf[-200:]!r}")
            self.buf += data
        i = self.buf.index(end) + len(end)
        reply, self.buf = self.buf[:i], self.buf[i:]
        return reply

    def command(self, line: str, end: bytes = b"END\r\n") -> str:
        self.send(line.encode() + b"\r\n")
        return self.until(end).decode()


def stat(reply: str, name: str) -> int:
    for line in reply.splitlines():
        if line.startswith(f"STAT {name} "):
            return int(line.split()[2])
    raise AssertionError(f"no STAT {name} in {reply!r}")


def run_case(binary: Path, case: Case) -> None:
    server = MemcachedServer(binary, ("-o", f"drop_privileges,{case.option}"))
    with server:
        try:
            exercise(server.port, case)
        except (AssertionError, OSError) as e:
            # The filter's kill explains a failure best: say it first.
            assert server.proc is not None and server._log is not None
            try:
                status = f"died ({server.proc.wait(timeout=1)})"
            except subprocess.TimeoutExpired:
                status = "still up"
            raise AssertionError(f"{status}: {e}\n{tail(server._log)}") from None
        assert server.proc is not None
        assert server.proc.poll() is None, "the server exited"


def exercise(port: int, case: Case) -> None:
    c = Client(port)
    for first in range(0, SETS, PIPELINE):
        c.send(b"".join(b"set key%d 0 0 %d\r\n%d\r\n" % (i, len(str(i)), i)
                        for i in range(first, first + PIPELINE)))
        for _ in range(PIPELINE):
            assert c.until(b"\r\n") == b"STORED\r\n"
    time.sleep(IDLE_S)
    assert c.command("get key1234") == "VALUE key1234 0 4\r\n1234\r\nEND\r\n"
    assert stat(c.command("stats"), "cmd_set") == SETS
    stages = c.command("stats stages")
    for line in case.expect_stages:
        assert line in stages.splitlines(), f"{line!r} not in stats stages"
    if case.traced_every_request:
        # Each set was traced through its reply's TX timestamp.
        assert stat(stages, "read_to_parse:count") >= SETS, stages
    # The buckets too: the longest stats reply, formatted from the same
    # merge buffers, allocating nothing more than any stats reply.
    hist = c.command("stats stages hist")
    for line in case.expect_stages:
        assert line in hist.splitlines(), f"{line!r} not in stats stages hist"
    if case.option.startswith("stage_trace"):
        assert stat(hist, "read_to_parse:overflow") == 0, hist
        assert ":bucket_" in hist, hist
    assert "STAT lru_amortized_budget_us " in c.command("stats lru_amortized")
    settings = c.command("stats settings")
    for line in ("STAT drop_privileges yes", *case.expect_settings):
        assert line in settings.splitlines(), f"{line!r} not in stats settings"
    assert c.command("version", b"\r\n").startswith("VERSION ")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", type=Path, required=True)
    args = parser.parse_args()
    print(f"1..{len(CASES)}")
    for n, case in enumerate(CASES, 1):
        try:
            run_case(args.binary, case)
            print(f"ok {n} - drop_privileges,{case.option}")
        except (AssertionError, ServerError, OSError) as e:
            print(f"not ok {n} - drop_privileges,{case.option}")
            print("".join(f"# {line}\n" for line in str(e).splitlines()), end="")
        sys.stdout.flush()
    return 0    # the TAP lines carry the failures, counted once each


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-3-Clause
"""stagevar bench lru --callgrind: the instructions amortized LRU
maintenance costs, against stock's worker and LRU maintainer thread.

One request script against each side, `-t 1`, under
`valgrind --tool=callgrind` counting only `worker_libevent` (the worker
thread) and `lru_maintainer_thread` (stock's maintainer; the fork with a
budget has none, its slices run inside the worker): KEYS keys set, then
got one at a time, ROUNDS rounds, at each of two SPACINGS, so the worker
goes idle between them as at light load, and with nothing to evict.
valgrind slows the clock that the slices' schedule reads (about 50 times
per request), so time-driven work fires far more often per request than
natively: this is a diagnostic, `--cpu-cost` (lru_cpu.py) the cost. Instruction counts are repeatable whatever else the machine does;
stock's still move by a few per cent between runs, because its
maintainer's wake-ups follow the clock, so each side is measured
`repeat` times and the median is printed with the range.
"""
from __future__ import annotations

import socket
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from stagevar_bench.memcache_client import read_until
from stagevar_bench.servers import LOOPBACK, MemcachedServer, build_binary
from stagevar_bench.trace_cost import VALGRIND_START_S, callgrind_total, same_user, valgrind_fd_limit

KEYS = 1000
ROUNDS = 3
# Two request spacings, since the slices' schedule is time-driven and
# valgrind slows the clock it reads: gets 0.5 ms apart (the worker idles
# after each), and back to back in bursts of 100 with 2 ms between bursts.
# (pause in s, requests between pauses)
SPACINGS = {"0.5 ms apart": (0.0005, 1), "bursts of 100, 2 ms apart": (0.002, 100)}
VALUE = b"0123456789"
THREADS = ("worker_libevent", "lru_maintainer_thread")


@dataclass(frozen=True)
class Side:
    """A server the LRU cost benches measure (here and lru_cpu.py)."""
    name: str
    variant: str            # stock or fork
    options: tuple[str, ...]


def sides(budgets: list[int], stock_name: str = "stock (worker + mc-lrumaint)",
          fork_name: Callable[[int], str] = lambda b: f"fork, lru_amortized_budget_us={b}") -> list[Side]:
    """Stock, then the fork with each fixed budget (microseconds)."""
    return [Side(stock_name, "stock", ())] + [
        Side(fork_name(b), "fork", ("-o", f"lru_amortized_budget_us={b}")) for b in budgets]


def request_script(port: int, pause_s: float, every: int) -> None:
    with socket.create_connection((LOOPBACK, port), timeout=120) as s:
        for i in range(KEYS):
            s.sendall(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(VALUE), VALUE))
            read_until(s, b"STORED\r\n")
        for _ in range(ROUNDS):
            for i in range(KEYS):
                s.sendall(b"get k%d\r\n" % i)
                read_until(s, b"END\r\n")
                if (i + 1) % every == 0:
                    time.sleep(pause_s)


def instructions(side: Side, pause_s: float, every: int) -> int:
    with tempfile.TemporaryDirectory(prefix="stagevar-lru-cost-") as tmp:
        out = Path(tmp) / "callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                    *(f"--toggle-collect={fn}" for fn in THREADS)]
        server = MemcachedServer(build_binary(side.variant, "memcached"),
                                 args=["-t", "1", "-c", str(valgrind_fd_limit()), *same_user(), *side.options],
                                 wrap=valgrind, start_timeout=VALGRIND_START_S)
        with server:
            request_script(server.port, pause_s, every)
        return callgrind_total(out)


def cost_lines(counts: dict[str, list[int]]) -> list[str]:
    """One line per side: median instructions [range] and the ratio of
    medians to the first side's."""
    names = list(counts)
    base = statistics.median(counts[names[0]])
    lines = []
    for name in names:
        values = counts[name]
        med = statistics.median(values)
        lines.append(f"  {name:44s} {med / 1e6:8.2f} M [{min(values) / 1e6:.2f} .. {max(values) / 1e6:.2f}]"
                     f"  x{med / base:.3f}")
    return lines


def run(budgets: list[int], repeat: int) -> None:
    """A diagnostic, not the cost (lru_cpu.py measures that natively)."""
    servers = sides(budgets)
    for spacing, (pause_s, every) in SPACINGS.items():
        counts: dict[str, list[int]] = {side.name: [] for side in servers}
        for _ in range(repeat):
            for side in servers:
                counts[side.name].append(instructions(side, pause_s, every))
        print(f"bench-lru --callgrind: instructions of the worker and the LRU maintainer thread, "
              f"{KEYS} keys set then got {ROUNDS} times one at a time, {spacing}, -t 1; "
              f"median of {repeat} [range], ratio to stock")
        print("\n".join(cost_lines(counts)))

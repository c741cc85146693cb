# SPDX-License-Identifier: BSD-3-Clause
"""Beside a busy loop, whether what an operator can set does what a
millisecond waker did (issue 45's busy-loop bar): a short scheduler slice
for the worker threads, or the neighbour at nice 19. Declared in
2026-12-07-busy-loop-slice.md; the workload, busy loop and run are
2026-12-07-busy-loop-sched.py's, no perf.

A side is stock or hot0, alone, "+slice" (every `mc-worker` thread asks
the scheduler for a 100 us slice with sched_setattr(2), SCHED_OTHER's
sched_runtime, Linux 6.12 and later) or "+nice19loop" (the busy loop at
nice 19). One JSON line a run: loadgen's mean and p99, and the slice
the workers held.

    python3 bench/results/2026-12-07-busy-loop-slice.py ROUNDS OUT.jsonl
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import struct
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "busy_loop_sched", Path(__file__).with_name("2026-12-07-busy-loop-sched.py"))
assert _spec is not None and _spec.loader is not None
sched = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sched)

SIDES = ["stock", "hot0", "stock+slice", "hot0+slice", "stock+nice19loop", "hot0+nice19loop"]
SLICE_NS = 100_000  # the kernel's floor for a requested slice
# struct sched_attr, SCHED_ATTR_SIZE_VER1: size, policy, flags, nice,
# priority, runtime, deadline, period, util_min, util_max.
SCHED_ATTR = struct.Struct("IIQiIQQQII")
SYS_SCHED_SETATTR, SYS_SCHED_GETATTR = 314, 315  # x86_64
_libc = ctypes.CDLL(None, use_errno=True)


def worker_tids(pid: int) -> list[int]:
    tasks = Path(f"/proc/{pid}/task")
    return [int(t.name) for t in tasks.iterdir()
            if (t / "comm").read_text().strip() == "mc-worker"]


def sched_attr_call(name: str, nr: int, tid: int, *args: object) -> None:
    if _libc.syscall(nr, tid, *args) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{name}({tid}): {os.strerror(err)}")


def set_slice(tid: int, ns: int) -> None:
    attr = ctypes.create_string_buffer(SCHED_ATTR.pack(SCHED_ATTR.size, 0, 0, 0, 0, ns, 0, 0, 0, 0))
    sched_attr_call("sched_setattr", SYS_SCHED_SETATTR, tid, attr, 0)


def get_slice(tid: int) -> int:
    attr = ctypes.create_string_buffer(SCHED_ATTR.size)
    sched_attr_call("sched_getattr", SYS_SCHED_GETATTR, tid, attr, SCHED_ATTR.size, 0)
    return int(SCHED_ATTR.unpack(attr.raw)[5])


def one(side: str, tmp: Path) -> dict[str, object]:
    base, _, how = side.partition("+")
    tids: list[int] = []

    def shorten(pid: int) -> None:
        tids.extend(worker_tids(pid))
        for tid in tids:
            set_slice(tid, SLICE_NS)

    with sched.serving(base, tmp, loop_nice=19 if how == "nice19loop" else 0,
                       on_ready=shorten if how == "slice" else lambda pid: None) as (gen, report):
        gen.wait(timeout=60)
        slices = [get_slice(t) for t in tids]
    return {"side": side, **sched.latency_us(report), "worker_slices_ns": slices}


if __name__ == "__main__":
    sys.exit(sched.rounds(sys.argv, one, sides=SIDES))

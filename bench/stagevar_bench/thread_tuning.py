# SPDX-License-Identifier: BSD-3-Clause
"""What an operator can do to a running stock server without code: give
named threads a lower scheduling policy, or move every thread but the
workers to other CPUs. Applied by thread id, found by the name the server
gives each thread (/proc/PID/task/TID/comm: memcached's mc-worker,
mc-lrumaint, ...), and read back from the kernel, so a run's record says
what really was set rather than what was asked.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

# The policies a level may give a named thread: the lowest an operator
# can set without privileges (SCHED_IDLE), or the lowest nice value.
POLICIES = ("idle", "nice19")
WORKER_THREAD = "mc-worker"
# The thread names appear as the server starts its threads; a name still
# absent after this long is taken to be absent.
NAME_WAIT_S = 1.0

POLICY_NAMES = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_IDLE: "SCHED_IDLE", os.SCHED_BATCH: "SCHED_BATCH",
                os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}


class TuningError(RuntimeError):
    """A setting that could not be applied, naming the thread or value."""


def parse_thread_sched(text: str) -> tuple[str, str]:
    """'THREAD:POLICY' (e.g. 'mc-lrumaint:idle') -> (thread, policy);
    ValueError naming the value."""
    thread, sep, policy = text.rpartition(":")
    if not sep or not thread:
        raise ValueError(f"expected THREAD:POLICY (e.g. mc-lrumaint:idle), not {text!r}")
    if policy not in POLICIES:
        raise ValueError(f"thread policy must be {' or '.join(POLICIES)}, not {policy!r} (in {text!r})")
    return thread, policy


def thread_names(pid: int) -> dict[int, str]:
    """{tid: name} of every thread of `pid`; threads that exit meanwhile
    are left out."""
    out: dict[int, str] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out[int(task.name)] = (task / "comm").read_text().strip()
        except OSError:
            pass
    return out


def thread_ids(pid: int, name: str, wait_s: float = NAME_WAIT_S) -> list[int]:
    """The ids of `pid`'s threads named `name`, waiting up to `wait_s` for
    the name to appear; TuningError naming it, and the names there are,
    if it never does."""
    deadline = time.monotonic() + wait_s
    while True:
        names = thread_names(pid)
        tids = sorted(tid for tid, n in names.items() if n == name)
        if tids:
            return tids
        if time.monotonic() >= deadline:
            raise TuningError(f"no thread named {name!r} in process {pid} "
                              f"(its threads: {', '.join(sorted(set(names.values())))})")
        time.sleep(0.02)


def set_policy(tid: int, policy: str) -> None:
    if policy == "idle":
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
    elif policy == "nice19":
        os.setpriority(os.PRIO_PROCESS, tid, 19)
    else:
        raise TuningError(f"thread policy must be {' or '.join(POLICIES)}, not {policy!r}")


def read_policy(tid: int) -> dict[str, Any]:
    """A thread's scheduling policy and nice value, as the kernel has them."""
    policy = os.sched_getscheduler(tid)
    return {"policy": POLICY_NAMES.get(policy, str(policy)), "nice": os.getpriority(os.PRIO_PROCESS, tid)}


def apply_thread_sched(pid: int, settings: dict[str, str]) -> list[dict[str, Any]]:
    """Give every thread named in `settings` ({name: policy}) its policy;
    per name, the ids found and what the kernel then reports for each."""
    applied = []
    for name, policy in settings.items():
        tids = thread_ids(pid, name)
        try:
            for tid in tids:
                set_policy(tid, policy)
            applied.append({"thread": name, "asked": policy, "tids": tids,
                            "set": {str(tid): read_policy(tid) for tid in tids}})
        except OSError as e:
            raise TuningError(f"cannot set {policy} on thread {name!r} of process {pid}: {e.strerror}") from None
    return applied


def move_helpers(pid: int, cpus: list[int], worker: str = WORKER_THREAD) -> dict[str, Any]:
    """Move every thread of `pid` but those named `worker` to `cpus`; the
    threads moved, the workers left, and each thread's CPUs read back."""
    names = thread_names(pid)
    workers = thread_ids(pid, worker)
    helpers = {tid: n for tid, n in names.items() if tid not in workers}
    try:
        for tid in helpers:
            os.sched_setaffinity(tid, cpus)
        return {"cpus": cpus,
                "moved": {str(tid): {"thread": n, "cpus": sorted(os.sched_getaffinity(tid))}
                          for tid, n in sorted(helpers.items())},
                "workers": {str(tid): sorted(os.sched_getaffinity(tid)) for tid in workers}}
    except OSError as e:
        raise TuningError(f"cannot move the helper threads of process {pid} to CPUs {cpus}: "
                          f"{e.strerror}") from None


def apply_tuning(pid: int, thread_sched: dict[str, str], helper_cpus: list[int] | None) -> dict[str, Any]:
    """Everything a level asks of a running server's threads; what was
    found and set (empty when it asks nothing)."""
    record: dict[str, Any] = {}
    if thread_sched:
        record["thread_sched"] = apply_thread_sched(pid, thread_sched)
    if helper_cpus:
        record["helper_cpus"] = move_helpers(pid, helper_cpus)
    return record


def usable_cpus() -> list[int]:
    """The CPUs this process, and so the servers it starts, may use."""
    return sorted(os.sched_getaffinity(0))


def spare_cpus(taken: list[int]) -> list[int]:
    """The usable CPUs outside `taken` (the server's and loadgen's)."""
    return [c for c in usable_cpus() if c not in taken]


def helper_cpus_error(helper_cpus: list[int], server_cpus: list[int] | None) -> str | None:
    """Why helper threads cannot go to `helper_cpus` while the server's
    workers have `server_cpus` (None: unpinned), or None if they can."""
    if server_cpus is None:
        return (f"helper CPUs {cpu_text(helper_cpus)} need the server pinned (--server-cpus): unpinned, "
                f"its own CPUs are every CPU of this machine, and none is left outside them")
    overlap = sorted(set(helper_cpus) & set(server_cpus))
    if overlap:
        return (f"helper CPUs {cpu_text(helper_cpus)} overlap the server's own CPUs "
                f"{cpu_text(server_cpus)}: a helper core must be outside them")
    missing = [c for c in helper_cpus if c not in usable_cpus()]
    if missing:
        return (f"helper CPUs {cpu_text(missing)} are not usable here "
                f"(this process may use {cpu_text(usable_cpus())})")
    return None


def cpu_text(cpus: list[int]) -> str:
    return ",".join(str(c) for c in cpus)

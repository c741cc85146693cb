# SPDX-License-Identifier: BSD-3-Clause
"""machine.py's /proc readers, the ones every bench module reads CPU time
and the load average through: checked against this process itself and
against the kernel's own interfaces (os.times, thread_time_ns, getloadavg)."""
from __future__ import annotations

import os
import time
from pathlib import Path

from stagevar_bench import machine


def burn(seconds: float) -> None:
    """Spin on this thread's CPU for about `seconds` of CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_stat_fields_are_found_after_a_comm_with_spaces_and_parentheses(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    ticks = machine.CLK_TCK
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    stat.write_text(f"42 (a (b) c) S 1 42 42 0 -1 4194560 10 0 0 0 {3 * ticks} {2 * ticks} 0 0 20 0 1\n")
    assert machine.stat_user_sys_s(stat) == (3.0, 2.0)


def test_process_cpu_time_matches_os_times() -> None:
    burn(0.2)
    user, system = machine.proc_user_sys_s(os.getpid())
    times = os.times()
    tick = 1 / machine.CLK_TCK
    assert abs(user - times.user) <= 2 * tick and abs(system - times.system) <= 2 * tick
    assert abs(machine.proc_cpu_s(os.getpid()) - (user + system)) <= 2 * tick


def test_a_gone_process_has_no_cpu_time() -> None:
    assert machine.proc_cpu_s(2 ** 22 + 1) == 0.0     # above pid_max's ceiling


def test_this_thread_cpu_ns_is_the_thread_cpu_clock() -> None:
    burn(0.05)
    before = time.thread_time_ns()
    mine = machine.this_thread_cpu_ns()
    after = time.thread_time_ns()
    # Both are the kernel's sum_exec_runtime; the /proc copy may lag a tick.
    assert before - 10_000_000 <= mine <= after


def test_proc_cpu_ns_sums_threads_and_filters_by_name() -> None:
    pid = os.getpid()
    before = machine.proc_cpu_ns(pid)
    burn(0.1)
    assert machine.proc_cpu_ns(pid) - before >= 90_000_000
    name = Path("/proc/thread-self/comm").read_text().strip()
    assert machine.proc_cpu_ns(pid, name) >= machine.this_thread_cpu_ns() - 1_000_000
    assert machine.proc_cpu_ns(pid, "no-such-thread") == 0


def test_tree_cpu_s_has_ns_resolution_and_skips_a_gone_process() -> None:
    pid = os.getpid()
    before = machine.tree_cpu_s(pid)[pid]
    burn(0.003)     # under a clock tick: utime and stime could not see it
    assert machine.tree_cpu_s(pid)[pid] - before >= 0.002
    assert machine.tree_cpu_s(2 ** 22 + 1) == {}


def test_cpu_busy_s_counts_what_runs_on_the_cpu() -> None:
    cpu = sorted(os.sched_getaffinity(0))[0]
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        busy0, mine0 = machine.cpu_busy_s([cpu]), time.thread_time()
        burn(0.2)
        busy1, mine1 = machine.cpu_busy_s([cpu]), time.thread_time()
    finally:
        os.sched_setaffinity(0, old)
    # Everything this thread ran was on that CPU (the tick-sampled
    # counters may miss two ticks at the ends).
    assert busy1 - busy0 >= (mine1 - mine0) - 2 / machine.CLK_TCK


def test_cpu_steal_s_reads_the_steal_column_of_each_cpu() -> None:
    """Steal is the hypervisor's: a test cannot make it, but it can check
    the column read is /proc/stat's eighth, per CPU, and never runs back."""
    cpus = sorted(machine.cpu_stat_ticks())
    assert set(cpus) >= os.sched_getaffinity(0)
    line = next(l for l in Path("/proc/stat").read_text().splitlines() if l.startswith(f"cpu{cpus[0]} "))
    before = machine.cpu_steal_s([cpus[0]])
    assert before >= int(line.split()[8]) / machine.CLK_TCK
    assert machine.cpu_steal_s(cpus) >= before and machine.cpu_steal_s([]) == 0
    assert machine.cpu_steal_s([cpus[-1] + 1]) == 0      # a CPU the machine lacks counts nothing
    assert before <= machine.cpu_steal_s(cpus) <= machine.cpu_steal_s()   # None: every CPU, read last


def test_loadavg_text_is_the_three_load_averages() -> None:
    fields = machine.loadavg_text().split()
    assert len(fields) == 3
    assert all(abs(float(f) - g) < 0.5 for f, g in zip(fields, os.getloadavg()))
    assert len(machine.loadavg()) == 3


def test_cpu_idle_is_what_sysfs_says() -> None:
    idle = machine.cpu_idle()
    driver = Path("/sys/devices/system/cpu/cpuidle/current_driver")
    assert idle["driver"] == (driver.read_text().strip() if driver.exists() else None)
    poll = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")
    assert idle["guest_halt_poll_ns"] == (int(poll.read_text()) if poll.exists() else None)


def test_cpu_idle_text_names_the_driver_and_any_halt_polling() -> None:
    assert machine.cpu_idle_text({"driver": None, "governor": None, "guest_halt_poll_ns": None}) \
        == "no cpuidle driver"
    assert machine.cpu_idle_text({"driver": "acpi_idle", "governor": "menu", "guest_halt_poll_ns": None}) \
        == "acpi_idle (governor menu)"
    assert machine.cpu_idle_text({"driver": "haltpoll", "governor": "haltpoll", "guest_halt_poll_ns": 0}) \
        == "haltpoll (governor haltpoll), halt-polling 0 ns"


def test_load_and_idle_text_is_both_figures() -> None:
    text = machine.load_and_idle_text()
    assert text.endswith(f"; CPU idle: {machine.cpu_idle_text(machine.cpu_idle())}")
    assert len(text.split(";")[0].split()) == 3

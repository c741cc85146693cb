# SPDX-License-Identifier: BSD-3-Clause
"""What a level does to a real stock memcached's threads without code
(thread_tuning.py, Level.thread_sched and Level.helper_cpus), checked in
the kernel's own /proc view of each thread rather than through the code
that set it: mc-lrumaint really at SCHED_IDLE or nice 19, the helper
threads really moved off the workers' CPU, and a thread name the server
lacks failing the run with its name."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from conftest import binary_or_skip, loadgen_binary
from stagevar_bench import memcache_client as mc
from stagevar_bench.experiment import Design, Level, run_design
from stagevar_bench.lru_options import LRU_MAINTAINER_THREAD, lru_option_levels
from stagevar_bench.servers import LOOPBACK, MemcachedServer
from stagevar_bench.thread_tuning import TuningError, apply_thread_sched, move_helpers

SCHED_IDLE = 5          # the policy number /proc/TID/stat reports (linux/sched.h)


@contextmanager
def stock(*args: str, wrap: list[str] | None = None) -> Iterator[int]:
    """A stock memcached's pid, once a worker has answered (so every
    thread it starts at start-up exists)."""
    with MemcachedServer(binary_or_skip("stock", "memcached"), args=["-t", "2", *args], wrap=wrap or []) as s:
        mc.stats(LOOPBACK, s.port)
        assert s.proc is not None
        yield s.proc.pid


def threads(pid: int) -> dict[int, str]:
    return {int(t.name): (t / "comm").read_text().strip() for t in Path(f"/proc/{pid}/task").iterdir()}


def stat_fields(pid: int, tid: int) -> list[str]:
    """/proc/PID/task/TID/stat's fields from the third (state) on: the
    name in parentheses may hold spaces."""
    text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()


def nice(pid: int, tid: int) -> int:
    return int(stat_fields(pid, tid)[19 - 3])


def policy(pid: int, tid: int) -> int:
    return int(stat_fields(pid, tid)[41 - 3])


def allowed(pid: int, tid: int) -> str:
    status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
    return next(l.split(":", 1)[1].strip() for l in status.splitlines() if l.startswith("Cpus_allowed_list:"))


def test_idle_puts_the_maintainer_and_only_it_at_sched_idle() -> None:
    with stock() as pid:
        [applied] = apply_thread_sched(pid, {LRU_MAINTAINER_THREAD: "idle"})
        names = threads(pid)
        [maintainer] = [tid for tid, n in names.items() if n == LRU_MAINTAINER_THREAD]
        assert applied["tids"] == [maintainer]
        assert applied["set"][str(maintainer)]["policy"] == "SCHED_IDLE"
        assert policy(pid, maintainer) == SCHED_IDLE
        assert all(policy(pid, tid) == 0 for tid in names if tid != maintainer)


def test_nice19_sets_the_maintainers_nice_value_and_only_its() -> None:
    with stock() as pid:
        apply_thread_sched(pid, {LRU_MAINTAINER_THREAD: "nice19"})
        names = threads(pid)
        [maintainer] = [tid for tid, n in names.items() if n == LRU_MAINTAINER_THREAD]
        assert nice(pid, maintainer) == 19
        assert policy(pid, maintainer) == 0
        assert all(nice(pid, tid) == 0 for tid in names if tid != maintainer)


def test_helpers_move_to_the_spare_cpu_and_the_workers_stay() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("one CPU: no spare core for the helper threads")
    server_cpu, spare = cpus[0], cpus[1]
    with stock(wrap=["taskset", "-c", str(server_cpu)]) as pid:
        record = move_helpers(pid, [spare])
        names = threads(pid)
        workers = [tid for tid, n in names.items() if n == "mc-worker"]
        assert len(workers) == 2
        assert {allowed(pid, tid) for tid in workers} == {str(server_cpu)}
        helpers = [tid for tid in names if tid not in workers]
        assert {names[t] for t in helpers} >= {"memcached", LRU_MAINTAINER_THREAD}
        assert {allowed(pid, tid) for tid in helpers} == {str(spare)}
        assert sorted(map(int, record["moved"])) == sorted(helpers)


def test_a_thread_name_the_server_lacks_is_an_error_naming_it() -> None:
    with stock("-o", "no_lru_maintainer") as pid:
        with pytest.raises(TuningError, match=f"'{LRU_MAINTAINER_THREAD}'"):
            apply_thread_sched(pid, {LRU_MAINTAINER_THREAD: "idle"})


def test_the_runner_records_what_it_set_and_fails_a_run_naming_an_absent_thread() -> None:
    binary_or_skip("stock", "memcached")
    binary_or_skip("fork", "memcached")
    loadgen_binary()
    [idle] = [l for l in lru_option_levels() if l.name == "stock-lrumaint-idle"]
    absent = Level("no-maintainer-idle", "stock", server_args=["-o", "no_lru_maintainer"],
                   thread_sched={LRU_MAINTAINER_THREAD: "idle"})
    design = Design(name="tuning", server="memcached", levels=[idle, absent], loads=[2000.0], runs=2,
                    duration_s=0.2, warmup_s=0.1, server_args=["-t", "1"])
    runs = run_design(design, progress=lambda line: None)["runs"]
    for run in runs:
        if run["cell"]["knob"] == idle.name:
            assert run["error"] is None, run["error"]
            [applied] = run["thread_tuning"]["thread_sched"]
            assert applied["thread"] == LRU_MAINTAINER_THREAD and len(applied["tids"]) == 1
            assert [s["policy"] for s in applied["set"].values()] == ["SCHED_IDLE"]
            assert run["loadgen"]["counts"]["sent"] > 0
        else:
            assert LRU_MAINTAINER_THREAD in run["error"] and "no thread named" in run["error"]
            assert "loadgen" not in run

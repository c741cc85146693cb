# SPDX-License-Identifier: BSD-3-Clause
"""The shared-CPU condition's hog: pinned where it is asked, busy no more
than its duty, in the scheduling group asked for, gone when its block
ends or its time runs out."""
from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from stagevar_bench.hog import CpuHog


def first_cpu() -> str:
    return str(sorted(os.sched_getaffinity(0))[0])


def test_a_full_duty_hog_runs_on_its_cpu_and_is_gone_after_the_block() -> None:
    with CpuHog(first_cpu(), 100, limit_s=30) as hog:
        time.sleep(0.5)
        [proc] = hog.procs
        allowed = [l for l in Path(f"/proc/{proc.pid}/status").read_text().splitlines()
                   if l.startswith("Cpus_allowed_list:")]
        assert allowed == [f"Cpus_allowed_list:\t{first_cpu()}"]
    assert proc.poll() is not None
    assert hog.cpu_s > 0.05
    assert hog.describe()["duty"] == 100


def test_a_quarter_duty_hog_sleeps_most_of_the_time() -> None:
    start = time.monotonic()
    with CpuHog(first_cpu(), 25, limit_s=30) as hog:
        time.sleep(1.0)
    # At most a quarter busy, plus the interpreter's start: never near all.
    assert hog.cpu_s < 0.6 * (time.monotonic() - start)


def test_a_hog_stops_by_itself_at_its_limit() -> None:
    with CpuHog(first_cpu(), 100, limit_s=0.3) as hog:
        [proc] = hog.procs
        proc.wait(timeout=30)
        assert proc.returncode == 0


def autogroup(pid: int) -> str | None:
    """The autogroup /proc names for `pid` ("/autogroup-N nice M"): "/" for
    a task that never left the root group (the kernel prints nothing for
    it, as for PID 1's descendants in a container that never called
    setsid), None where the kernel has no autogroup."""
    try:
        fields = Path(f"/proc/{pid}/autogroup").read_text().split()
    except OSError:
        return None
    return fields[0] if fields else "/"


@pytest.mark.parametrize("group", ["server", "own"])
def test_a_hog_sits_in_the_scheduling_group_asked_for(group: str) -> None:
    with CpuHog(first_cpu(), 25, limit_s=30, group=group) as hog:
        [proc] = hog.procs
        time.sleep(0.2)
        own_session = os.getsid(proc.pid) == proc.pid
        same_autogroup = autogroup(proc.pid) == autogroup(os.getpid())
        assert hog.describe()["group"] == group
    assert own_session == (group == "own")
    if autogroup(os.getpid()) is not None:
        assert same_autogroup == (group == "server")


def test_duty_zero_starts_nothing_and_a_bad_duty_or_group_is_named() -> None:
    with CpuHog(first_cpu(), 0, limit_s=1) as hog:
        assert hog.procs == []
    with pytest.raises(ValueError, match="not 150"):
        CpuHog(first_cpu(), 150, limit_s=1)
    with pytest.raises(ValueError, match="not 'sideways'"):
        CpuHog(first_cpu(), 50, limit_s=1, group="sideways")

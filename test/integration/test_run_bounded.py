# SPDX-License-Identifier: BSD-3-Clause
"""test/upstream/run-bounded, which memcached-t runs each of memcached's
t/ files through: a command that outlives its limit fails with a report of
its processes, and its whole process group is gone afterwards; one that
finishes keeps its exit status. Then memcached-t itself, on a t/ file that
stalls a real server."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from stagevar_bench.servers import build_dir

UPSTREAM = Path(__file__).resolve().parents[1] / "upstream"
RUN_BOUNDED = UPSTREAM / "run-bounded"


def run_bounded(*args: int | str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUN_BOUNDED), *map(str, args)], capture_output=True,
                          text=True, timeout=60)


def alive(pid: int) -> bool:
    """Whether pid runs (a zombie has finished: PID 1 may never reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_a_command_that_finishes_keeps_its_status_and_leaves_no_report(tmp_path: Path) -> None:
    report = tmp_path / "report"
    proc = run_bounded(10, report, "sh", "-c", "echo out; exit 3")
    assert (proc.returncode, proc.stdout) == (3, "out\n")
    assert not report.exists()


def test_a_command_past_its_limit_fails_with_its_processes_and_leaves_none(
        tmp_path: Path) -> None:
    report, pids = tmp_path / "report", tmp_path / "pids"
    script = f"sleep 300 & echo $$ $! > {pids}; wait"
    started = time.monotonic()
    proc = run_bounded(3, report, "sh", "-c", script)
    assert proc.returncode == 124
    assert time.monotonic() - started < 30
    text = report.read_text()
    assert text.startswith(f"sh -c {script}: still running after 3 s; its processes:")
    shell, sleeper = map(int, pids.read_text().split())
    assert f"  {shell} S wchan=" in text and f"  {sleeper} S wchan=" in text
    assert "sleep 300" in text
    assert not alive(shell) and not alive(sleeper)


@pytest.mark.parametrize("limit", ["0", "ten", "-5", ""])
def test_a_bad_limit_is_refused_by_name(tmp_path: Path, limit: str) -> None:
    proc = run_bounded(limit, tmp_path / "report", "true")
    assert proc.returncode != 0
    assert proc.stderr == (f"run-bounded: LIMIT must be a whole number of seconds from 1, "
                           f"not '{limit}'\n")


def test_memcached_t_fails_a_stalled_file_with_the_servers_stacks(tmp_path: Path) -> None:
    """A t/ file whose server stops answering: memcached-t reports it hung,
    with the server's threads, rather than wait for it."""
    built = build_dir() / "src" / "memcached-fork"
    if not (built / "memcached-debug").exists():
        pytest.skip(f"{built}/memcached-debug is not built (run make)")
    tree = tmp_path / "tree"
    tree.mkdir()
    for entry in built.iterdir():
        if entry.name not in ("t", ".git"):
            (tree / entry.name).symlink_to(entry)
    (tree / "t").mkdir()
    (tree / "t" / "lib").symlink_to(built / "t" / "lib")
    (tree / "t" / "stall.t").write_text(
        "use strict;\nuse Test::More tests => 2;\nuse lib 't/lib';\nuse MemcachedTest;\n"
        "my $server = new_memcached();\n"
        "ok(1, 'started');\n"
        "kill 'STOP', $server->{pid};\n"
        "sleep 300;\n"
        "ok(1, 'not reached');\n")
    env = dict(os.environ, MEMCACHED_TREE=str(tree), MEMCACHED_T_OWN="",
               MEMCACHED_T_FILES="t/stall.t", MEMCACHED_T_PASSES="", MEMCACHED_T_LIMIT="10")
    proc = subprocess.run([str(UPSTREAM / "memcached-t")], capture_output=True, text=True,
                          timeout=240, env=env)
    lines = proc.stdout.splitlines()
    verdict = next(line for line in lines if "t/stall.t" in line)
    assert verdict.startswith("not ok 3 - t/stall.t")
    detail = "\n".join(lines[lines.index(verdict) + 1:])
    assert "# hung: " in detail and "still running after 10 s; its processes:" in detail
    assert "memcached-debug" in detail
    if shutil.which("gdb"):
        assert "stacks of " in detail and "worker_libevent" in detail
    assert "exit status 124" in detail

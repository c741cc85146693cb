"""make bench-trace's saturated-throughput part (trace_cost --only
saturate): its arguments, and a short run against the built servers
that prints one row per side in the documented shape."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from stagevar_bench.pipeline_client import build_batches, count_replies
from stagevar_bench.servers import build_binary

BENCH = Path(__file__).resolve().parents[2] / "bench"


def trace_cost(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagevar_bench.trace_cost", *args], cwd=BENCH,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args,named", [
    (["--sample", "0"], "0"),
    (["--sample", "1000001"], "1000001"),
    (["--rounds", "0"], "0"),
    (["--seconds", "-1"], "-1"),
    (["--pipeline", "4,32"], "'4,32'"),
    (["--pipeline", "4,0,4"], "'4,0,4'"),
    (["--cpus", "1,1"], "1,1"),
    (["--only", "warp"], "'warp'"),
    (["--sides", "stock,fast"], "'stock,fast'"),
    (["--sides", ""], "''"),
])
def test_bad_arguments_are_one_line_naming_the_value(args: list[str], named: str) -> None:
    out = trace_cost("--only", "saturate", *args) if "--only" not in args else trace_cost(*args)
    assert out.returncode == 2, out
    last = out.stderr.strip().splitlines()[-1]
    assert named in last, last


def test_batches_hold_the_requested_mix() -> None:
    batches = build_batches(50, 10, 0.8, seed=3)
    requests = b"".join(batches)
    gets, sets = requests.count(b"get "), requests.count(b"set ")
    assert gets + sets == 50 * len(batches)
    assert 0.7 < gets / (gets + sets) < 0.9
    # what the server answers to each: one terminator per request
    assert count_replies(b"VALUE key1 0 2\r\nvv\r\nEND\r\nSTORED\r\nEND\r\n") == 3


ROW = re.compile(r"^  (stock|fork, tracing off|fork, -o stage_trace|fork, trace 1 read in 8)\s+"
                 r"(\d+)\s+(1|\d\.\d{4} \[\d\.\d{4} \.\. \d\.\d{4}\] \([+-]\d+\.\d\d%\))\s+"
                 r"(\d+\.\d)% +(\d+\.\d)% +(\d+\.\d\d) +(\d+\.\d\d)$")
CPU_ROW = re.compile(r"^  (stock|fork, tracing off|fork, -o stage_trace|fork, trace 1 read in 8)\s+"
                     r"(\d+)  (1|\d\.\d{4} \[\d\.\d{4} \.\. \d\.\d{4}\] \([+-]\d+\.\d\d%\))$")


def short_run(*args: str) -> tuple[list[int], str]:
    """A 2-round saturated run on two CPUs (skips where it cannot run):
    the CPUs and its stdout."""
    if not all(build_binary(v, "memcached").exists() for v in ("stock", "fork")):
        pytest.skip("memcached stock and fork are not built")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    out = trace_cost("--only", "saturate", "--rounds", "2", "--seconds", "0.3", "--sample", "8",
                     "--pipeline", "2,8,2", "--cpus", f"{cpus[1]},{cpus[0]}", *args)
    assert out.returncode == 0, out.stderr
    return cpus, out.stdout


def test_a_short_run_prints_every_side() -> None:
    cpus, stdout = short_run()
    lines = stdout.splitlines()
    assert lines[0].startswith(f"(c) saturated: memcached -t 1 on CPU {cpus[1]}, pipelining client "
                               f"on CPU {cpus[0]} (2 connections x 2 batches of 8 requests"), lines[0]
    rows = [m for m in map(ROW.match, lines) if m]
    assert [m.group(1) for m in rows] == ["stock", "fork, tracing off", "fork, -o stage_trace",
                                          "fork, trace 1 read in 8"], stdout
    for m in rows:
        assert int(m.group(2)) > 1000, m.group(0)                   # it really served requests
        assert 0 < float(m.group(4)) <= 110 and 0 < float(m.group(5)) <= 110, m.group(0)
        assert float(m.group(6)) <= float(m.group(7)), m.group(0)   # p50 <= p99
    per_cpu = [m for m in map(CPU_ROW.match, lines) if m]
    assert [m.group(1) for m in per_cpu] == [m.group(1) for m in rows], stdout
    for m in per_cpu:
        assert int(m.group(2)) > 1000, m.group(0)


def test_sides_picks_the_measured_servers_stock_always_included() -> None:
    _, stdout = short_run("--sides", "sampled")
    rows = [m.group(1) for m in map(ROW.match, stdout.splitlines()) if m]
    assert rows == ["stock", "fork, trace 1 read in 8"], stdout

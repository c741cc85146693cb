# SPDX-License-Identifier: BSD-3-Clause
"""stagevar load without agents: bad agent specs and options are one line
naming the value, exit 2, before any ssh runs; the merge reproduces a
report's own percentiles from its histograms and adds reports exactly.
(test/integration/test_load_agents.py runs it against real agents.)"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from stagevar_bench.merge import merge_reports, merge_stage, quantile

BENCH = Path(__file__).resolve().parents[2] / "bench"
FIXTURE = Path(__file__).parent / "fixtures" / "peers" / "loadgen.json"
GOOD = ["--agents", "root@10.0.0.1"]


def stagevar_load(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagevar_bench", "load", *args], cwd=BENCH,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("args,named", [
    (["--agents", "root@", "--", "-r", "10"], "'root@'"),
    (["--agents", "root@a b", "--", "-r", "10"], "'root@a b'"),
    (["--agents", "root@h1,,root@h2", "--", "-r", "10"], "''"),
    (["--agents", "root@h1,root@h1", "--", "-r", "10"], "root@h1 is named twice"),
    (["--", "-r", "10"], "--agents"),
    ([*GOOD], "no LOADGEN_ARGS"),
    ([*GOOD, "--", "-d", "5s"], "need -r RATE"),
    ([*GOOD, "--", "-r", "fast"], "'fast'"),
    ([*GOOD, "--", "-r", "0"], "'0'"),
    ([*GOOD, "--", "-r"], "-r needs a value"),
    ([*GOOD, "--", "-r", "10", "--json", "x"], "--json is not allowed"),
    ([*GOOD, "--", "-r", "10", "--start-at", "1"], "--start-at is not allowed"),
    ([*GOOD, "--", "-r", "10", "-n", "100"], "-n is not allowed"),
    ([*GOOD, "--", "-r", "10", "--seed", "x"], "'x'"),
    ([*GOOD, "--", "-r", "10", "-d", "5parsecs"], "'5parsecs'"),
    ([*GOOD, "--ssh-opt", "i KEY", "--", "-r", "10"], "'i KEY'"),
    ([*GOOD, "--start-lead", "soon", "--", "-r", "10"], "'soon'"),
    ([*GOOD, "--start-lead", "0", "--", "-r", "10"], "must be > 0, not '0'"),
    ([*GOOD, "--json", "/nonexistent/dir/x.json", "--", "-r", "10"], "'/nonexistent/dir/x.json'"),
    ([*GOOD, "--hdr-log", "/nonexistent/dir/x.hlog", "--", "-r", "10"], "'/nonexistent/dir/x.hlog'"),
    ([*GOOD, "--bogus", "--", "-r", "10"], "--bogus"),
])
def test_bad_input_is_named(args: list[str], named: str) -> None:
    proc = stagevar_load(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert named in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert "Traceback" not in proc.stderr


def fixture() -> dict:
    return json.loads(FIXTURE.read_text())


@pytest.mark.parametrize("stage", ["latency_scheduled", "latency_sent", "schedule_error", "client_delay"])
def test_percentiles_match_loadgen_own(stage: str) -> None:
    """The rule libstagevar uses, applied to loadgen's own histogram,
    gives back loadgen's own percentiles."""
    s = fixture()[stage]
    for key, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
        assert quantile(s["histogram"], q, s["overflow"], s["max"]) == s[key], key
    assert merge_stage([s])["p99"] == s["p99"]


def test_two_reports_add_exactly() -> None:
    a = fixture()
    b = copy.deepcopy(a)
    # b saw every latency doubled: the merged p99 must come from the union.
    b["latency_scheduled"]["histogram"] = [[lo * 2, w * 2, n] for lo, w, n in a["latency_scheduled"]["histogram"]]
    b["latency_scheduled"]["mean"] *= 2
    b["latency_scheduled"]["stddev"] *= 2
    m = merge_reports([a, b])
    assert m["counts"]["completed"] == 2 * a["counts"]["completed"]
    assert m["rates"]["achieved"] == pytest.approx(2 * a["rates"]["achieved"])
    assert m["rates"]["window_s"] == a["rates"]["window_s"]
    lat = m["latency_scheduled"]
    assert lat["count"] == 2 * a["latency_scheduled"]["count"]
    assert sum(n for _, _, n in lat["histogram"]) == 2 * sum(n for _, _, n in a["latency_scheduled"]["histogram"])
    assert lat["mean"] == pytest.approx(1.5 * a["latency_scheduled"]["mean"])
    union = sorted([lo + (w - 1) // 2 for lo, w, n in a["latency_scheduled"]["histogram"] for _ in range(n)] +
                   [lo + (w - 1) // 2 for lo, w, n in b["latency_scheduled"]["histogram"] for _ in range(n)])
    rank = -(-99 * len(union) // 100)
    assert lat["p99"] == union[rank - 1]
    assert lat["p99"] != (a["latency_scheduled"]["p99"] + 2 * a["latency_scheduled"]["p99"]) // 2

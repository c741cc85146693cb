# SPDX-License-Identifier: BSD-3-Clause
"""stagevar bench trace --server httpd (trace_httpd.py): its arguments,
and brief end-to-end runs against the built fork that print, per mode,
a ratio line with a CI: of saturated throughput, and of CPU per request
at a fixed rate. Behaviour only: no figure is judged."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stagevar_bench.servers import build_binary
from stagevar_bench.trace_httpd import BenchError, parse_h2load

BENCH = Path(__file__).resolve().parents[2] / "bench"
RATIO = re.compile(r"^(keepalive|close) on/off: x(\d+\.\d{4}) \[(\d+\.\d{4}) \.\. (\d+\.\d{4})\] "
                   r"\([+-]\d+\.\d\d%\), 2 paired rounds, median \d+ vs \d+ req/s, "
                   r"signed-rank p=\S+$", re.M)


def trace(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagevar_bench.trace_cost", "--server", "httpd",
                           *args], cwd=BENCH, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args,named", [
    (["--rounds", "0"], "'0'"),
    (["--requests", "many"], "'many'"),
    (["--modes", "keepalive,pipelined"], "'keepalive,pipelined'"),
    (["--sides", "off"], "'off'"),
    (["--cpus", "1"], "'1'"),
    (["--clients", "8", "--threads", "8"], "not 8"),
    (["--cpu-rate", "fast"], "'fast'"),
    (["--cpu-rate", "1000", "--cpu-seconds", "0"], "'0'"),
])
def test_bad_arguments_are_one_line_naming_the_value(args: list[str], named: str) -> None:
    out = trace(*args)
    assert out.returncode == 2, out
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("stagevar bench trace --server httpd: error:") and named in last, last


def test_h2load_summary_is_read_and_failures_refused() -> None:
    out = ("finished in 1.02s, 24817.33 req/s, 20.1MB/s\n"
           "requests: 1000 total, 1000 started, 1000 done, 1000 succeeded, 0 failed, 0 errored\n")
    assert parse_h2load(out, 1000) == pytest.approx(24817.33)
    with pytest.raises(BenchError, match="999 of 1000"):
        parse_h2load(out.replace("1000 succeeded, 0 failed", "999 succeeded, 1 failed"), 1000)
    with pytest.raises(BenchError, match="no h2load summary"):
        parse_h2load("", 1000)


def test_brief_run_prints_a_ratio_line_with_a_ci_per_mode() -> None:
    if shutil.which("h2load") is None:
        pytest.skip("h2load is not installed (nghttp2-client)")
    if not build_binary("fork", "httpd").exists():
        pytest.skip("the httpd fork is not built")
    out = trace("--rounds", "2", "--requests", "300", "--warmup", "50", "--clients", "2",
                "--threads", "4", "--sides", "on")
    assert out.returncode == 0, out.stderr
    rounds = re.findall(r"^round (\d) (keepalive|close) (off|on): (\d+) req/s$", out.stdout, re.M)
    assert len(rounds) == 2 * 2 * 2, out.stdout
    assert all(int(rps) > 0 for *_, rps in rounds)
    lines = RATIO.findall(out.stdout)
    assert [mode for mode, *_ in lines] == ["keepalive", "close"], out.stdout
    for _, ratio, low, high in lines:
        assert 0 < float(low) <= float(ratio) <= float(high), out.stdout


def test_cpu_rate_run_prints_cpu_per_request_and_a_ratio_per_mode() -> None:
    if not build_binary("fork", "httpd").exists():
        pytest.skip("the httpd fork is not built")
    out = trace("--rounds", "2", "--cpu-rate", "300", "--cpu-seconds", "1", "--clients", "2",
                "--threads", "4", "--sides", "on")
    assert out.returncode == 0, out.stderr
    rounds = re.findall(r"^round (\d) (keepalive|close) (off|on): (\d+\.\d\d) us CPU per request "
                        r"at 300 req/s$", out.stdout, re.M)
    assert len(rounds) == 2 * 2 * 2, out.stdout
    assert all(float(us) > 0 for *_, us in rounds)
    lines = re.findall(r"^(keepalive|close) on/off: x(\d+\.\d{4}) \[(\d+\.\d{4}) \.\. (\d+\.\d{4})\] .* "
                       r"us CPU per request at 300 req/s", out.stdout, re.M)
    assert [mode for mode, *_ in lines] == ["keepalive", "close"], out.stdout
    for _, ratio, low, high in lines:
        assert 0 < float(low) <= float(ratio) <= float(high), out.stdout

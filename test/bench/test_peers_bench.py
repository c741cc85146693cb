# SPDX-License-Identifier: BSD-3-Clause
"""stagevar bench peers: parsing mutilate's and wrk2's output, the ratio
tables, finding the peers and the command line. The fixtures in
fixtures/peers/ are the captured output of real runs (fixtures/peers/README
says which); nothing here starts a server or a peer."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stagevar_bench import bench_loadgen, bench_peers
from stagevar_bench.bench_peers import PERCENTILES, Comparison

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "peers"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_time_us_reads_wrk2s_units() -> None:
    assert bench_peers.time_us("283.00us") == 283.0
    assert bench_peers.time_us("1.10ms") == pytest.approx(1100.0)
    assert bench_peers.time_us("2.35s") == pytest.approx(2.35e6)
    assert bench_peers.time_us("1.50m") == pytest.approx(90e6)
    with pytest.raises(ValueError):
        bench_peers.time_us("12 parsecs")


def test_parse_mutilate_reads_the_read_row_and_counters() -> None:
    out = bench_peers.parse_mutilate(fixture("mutilate.txt"))
    assert {"avg", "std", "min", "p5", "p10", "p90", "p95", "p99", "qps", "misses", "skipped"} <= set(out)
    assert out["min"] <= out["p5"] <= out["p10"] <= out["p90"] <= out["p95"] <= out["p99"]
    assert out["qps"] > 0 and out["misses"] == 0 and out["skipped"] == 0


def test_parse_mutilate_without_a_read_row_is_an_error() -> None:
    with pytest.raises(ValueError, match="read"):
        bench_peers.parse_mutilate("Total QPS = 10.0 (10 / 1.0s)\n")


def test_percentiles_of_mutilates_samples_agree_with_its_own_table() -> None:
    """--save's raw samples against mutilate's log-binned table (bins 10%
    wide, interpolated) of the same run: within a bin."""
    samples = bench_peers.mutilate_samples(fixture("mutilate-save.txt"))
    table = bench_peers.parse_mutilate(fixture("mutilate.txt"))
    count = re.search(r"Total QPS = \S+ \((\d+) /", fixture("mutilate.txt"))
    assert count and len(samples) == int(count.group(1))
    ours = bench_peers.percentiles(samples)
    for p, key in ((90.0, "p90"), (99.0, "p99")):
        assert ours[p] == pytest.approx(table[key], rel=0.1)


def test_percentiles_take_the_sample_at_floor_n_p() -> None:
    got = bench_peers.percentiles([float(v) for v in range(100, 0, -1)])
    assert got == {50.0: 51.0, 90.0: 91.0, 99.0: 100.0, 99.9: 100.0}
    assert bench_peers.percentiles([7.0]) == {p: 7.0 for p in PERCENTILES}
    with pytest.raises(ValueError):
        bench_peers.percentiles([])


def test_parse_wrk2_reads_both_distributions() -> None:
    rep = bench_peers.parse_wrk2(fixture("wrk2.txt"))
    assert set(rep.corrected) == set(rep.uncorrected) == set(PERCENTILES)
    for p in PERCENTILES:
        # From the intended start is never shorter than from the actual write.
        assert rep.corrected[p] >= rep.uncorrected[p] > 0
    assert [rep.corrected[p] for p in PERCENTILES] == sorted(rep.corrected.values())
    assert rep.requests > 0 and rep.rate > 0 and rep.errors == 0


def test_parse_wrk2_needs_the_uncorrected_distribution() -> None:
    text = fixture("wrk2.txt")
    without_u = text[:text.index("  Latency Distribution (HdrHistogram - Uncorrected")]
    with pytest.raises(ValueError, match="uncorrected"):
        bench_peers.parse_wrk2(without_u)


def test_parse_wrk2_counts_socket_errors_and_bad_statuses() -> None:
    text = fixture("wrk2.txt") + "  Socket errors: connect 1, read 2, write 0, timeout 3\n" \
                                 "  Non-2xx or 3xx responses: 4\n"
    rep = bench_peers.parse_wrk2(text)
    assert rep.errors == 10 and bench_peers.wrk2_run(rep)[1] == {"errors": 10}
    assert bench_peers.wrk2_run(bench_peers.parse_wrk2(fixture("wrk2.txt")))[1] == {}


def test_loadgen_run_takes_each_series_in_microseconds() -> None:
    report = json.loads(fixture("loadgen.json"))
    run = bench_peers.loadgen_run(report)
    assert set(run) == set(bench_peers.LOADGEN_SERIES)
    assert run["sched"][50.0] == report["latency_scheduled"]["p50"] / 1e3
    assert run["read"][99.9] == report["latency_read"]["p999"] / 1e3
    assert bench_peers.loadgen_problems(report) == {}
    report["counts"]["timeouts"] = 3
    assert bench_peers.loadgen_problems(report) == {"timeouts": 3}


def test_stage_run_takes_the_servers_stages() -> None:
    stats = json.loads(fixture("stage-stats.json"))
    run = bench_peers.stage_run(stats)
    assert set(run) == {"server_total", "kernel_to_read", "listener_to_worker"}
    assert run["server_total"][99.0] == stats["stages"]["server_total"]["p99_ns"] / 1e3


def figures(*values: float) -> dict[float, float]:
    return dict(zip(PERCENTILES, values))


def test_comparison_is_the_ratio_of_medians_with_the_per_repeat_range() -> None:
    ours = [figures(10, 20, 30, 40), figures(12, 24, 36, 48), figures(11, 22, 33, 44)]
    theirs = [figures(10, 10, 10, 10), figures(10, 10, 10, 10), figures(20, 20, 20, 20)]
    c = Comparison("x", ours, theirs)
    p, a, b, r, lo, hi = c.rows[0]
    assert (p, a, b) == (50.0, 11.0, 10.0)
    assert r == pytest.approx(1.1) and c.ratio(50.0) == pytest.approx(1.1)
    assert lo == pytest.approx(0.55) and hi == pytest.approx(1.2)


def test_comparison_survives_a_zero_figure() -> None:
    c = Comparison("x", [figures(1, 1, 1, 1)], [figures(0, 1, 1, 1)])
    assert c.ratio(50.0) != c.ratio(50.0)       # NaN, not a ZeroDivisionError
    assert c.ratio(90.0) == 1.0


def test_ratio_table_has_a_row_per_percentile() -> None:
    c = Comparison("loadgen sched / mutilate -d 1", [figures(50, 60, 70, 80)], [figures(25, 60, 70, 80)])
    text = bench_peers.ratio_table("ratios", [c])
    lines = text.splitlines()
    assert lines[0] == "ratios" and len(lines) == 2 + len(PERCENTILES)
    assert "loadgen sched / mutilate -d 1" in lines[2] and "2.00" in lines[2]
    assert lines[3].split()[0] == "p90"


def test_figures_table_shows_median_and_range() -> None:
    runs = {"a": [{"lat": figures(1, 2, 3, 4)}, {"lat": figures(3, 4, 5, 6)}, {"lat": figures(2, 3, 4, 5)}]}
    text = bench_peers.figures_table("t", runs)
    assert "a lat" in text and "2.0 [1.0..3.0]" in text and "5.0 [4.0..6.0]" in text


def test_bar_says_whether_a_ratio_is_within() -> None:
    assert "within" in bench_peers.bar("p50", 1.05, 0.9, 1.1)
    assert "OUTSIDE" in bench_peers.bar("p50", 1.11, 0.9, 1.1)


def executable(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


def test_find_tool_option_then_variable_then_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    on_path = executable(bindir / "wrk2")
    other = executable(tmp_path / "other")
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.delenv("STAGEVAR_WRK2", raising=False)
    assert bench_peers.find_tool("wrk2", None, "STAGEVAR_WRK2") == on_path
    monkeypatch.setenv("STAGEVAR_WRK2", str(other))
    assert bench_peers.find_tool("wrk2", None, "STAGEVAR_WRK2") == other
    assert bench_peers.find_tool("wrk2", on_path, "STAGEVAR_WRK2") == on_path
    monkeypatch.delenv("STAGEVAR_WRK2")
    assert bench_peers.find_tool("mutilate", None, "STAGEVAR_MUTILATE") is None


def test_find_tool_refuses_a_path_that_is_no_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "mutilate"
    plain.write_text("")
    with pytest.raises(bench_peers.BadArgument, match="--mutilate .*mutilate: not an executable"):
        bench_peers.find_tool("mutilate", plain, "STAGEVAR_MUTILATE")
    monkeypatch.setenv("STAGEVAR_MUTILATE", str(tmp_path / "missing"))
    with pytest.raises(bench_peers.BadArgument, match=r"\$STAGEVAR_MUTILATE .*missing"):
        bench_peers.find_tool("mutilate", None, "STAGEVAR_MUTILATE")


@pytest.mark.parametrize("argv, named", [
    (["--rates", "5k"], "5k"), (["--repeats", "0"], "'0'"), (["--only", "memcached,tcp"], "memcached,tcp"),
    (["--http-batch-us", "1000,-5"], "1000,-5"), (["--duration", "1.5"], "1.5"),
    (["--server-cpu", "0", "--client-cpu", "0"], "both 0"), (["--stop-ms", "4000"], "--stop-ms 4000"),
    (["--client-cpu", "4096"], "CPU 4096"), (["--httpd", "nginx"], "nginx"),
])
def test_bad_options_exit_2_naming_the_value(argv: list[str], named: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bench_peers.main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("stagevar bench peers: error:") and named in err[-1]


def test_a_peer_path_that_is_no_executable_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench_peers.main(["--wrk2", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--wrk2" in err[0] and "nowhere" in err[0]


def test_missing_peers_skip_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("STAGEVAR_LOADGEN", sys.executable)    # exists; never run
    monkeypatch.delenv("STAGEVAR_MUTILATE", raising=False)
    monkeypatch.delenv("STAGEVAR_WRK2", raising=False)
    assert bench_peers.main([]) == 0
    out = capsys.readouterr().out
    assert "mutilate not found" in out and "wrk2 not found" in out and "github.com/giltene/wrk2" in out
    for part in bench_peers.PARTS:
        assert f"part {part} skipped" in out


def test_bench_loadgen_peers_runs_the_peers_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bench_loadgen.main(["--peers", "--co-rate", "fast"])
    assert e.value.code == 2
    assert "stagevar bench peers: error: argument --co-rate" in capsys.readouterr().err


def test_server_pids_finds_the_children() -> None:
    proc = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        for _ in range(200):        # at most 10 s for the shell to start both
            pids = bench_peers.server_pids(proc.pid)
            if len(pids) == 3:
                break
            time.sleep(0.05)
        assert pids[0] == proc.pid and len(pids) == 3
    finally:
        for pid in bench_peers.server_pids(proc.pid)[::-1]:
            os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=10)

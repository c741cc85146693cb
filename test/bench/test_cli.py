# SPDX-License-Identifier: BSD-3-Clause
"""The CLI: bad input is one line naming the value, exit status 2; analyze
and report work from a results file without re-running anything."""
from __future__ import annotations

import argparse
import copy
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from stagevar_bench.cli import conf_level, runs_count
from stagevar_bench.experiment import FORMAT, load_results, save_results

BENCH = Path(__file__).resolve().parents[2] / "bench"


def stagevar(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagevar_bench", *args], cwd=BENCH,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args,named", [
    (["profile", "--rate", "fast"], "'fast'"),
    (["profile", "--duration", "3parsecs"], "'3parsecs'"),
    (["profile", "--server-cpus", "7-3"], "'7-3'"),
    (["profile", "--server-cpus", "99"], "'99'"),
    (["compare", "--level", "a=stock", "--loads", "1000", "--runs", "61", "--out", "x"], "61"),
    (["compare", "--level", "a=stock", "--loads", "-5", "--out", "x"], "-5"),
    (["compare", "--level", "a=weird", "--loads", "1000", "--out", "x"], "'weird'"),
    (["compare", "--level", "a=fork", "--server-args", "b=-t 1", "--loads", "10", "--out", "x"], "'b'"),
    (["compare", "--level", "a=fork", "--arrivals", "bursty", "--loads", "10", "--out", "x"], "'bursty'"),
    (["analyze", "/nonexistent/results.json"], "/nonexistent/results.json"),
    (["analyze", "x", "--conf", "1.5"], "'1.5'"),
    (["reproduce", "--only", "teleport", "--out", "x"], "'teleport'"),
    (["compare", "--level", "a=stock", "--loads", "1000", "--hog", "150", "--out", "x"], "'150'"),
    (["profile", "--hog", "lots"], "'lots'"),
    (["compare", "--level", "a=stock", "--loads", "1000", "--hog-group", "sideways", "--out", "x"], "'sideways'"),
    (["compare", "--level", "a=stock", "--loads", "1000", "--hog", "50", "--out", "x"], "--server-cpus"),
    (["compare", "--loads", "1000", "--out", "x"], "--lru-options"),
    (["compare", "--level", "a=stock", "--thread-sched", "a=mc-lrumaint:fifo", "--loads", "1000", "--out", "x"],
     "'fifo'"),
    (["compare", "--level", "a=stock", "--thread-sched", "a=mc-lrumaint", "--loads", "1000", "--out", "x"],
     "'mc-lrumaint'"),
    (["compare", "--level", "a=stock", "--thread-sched", "b=mc-lrumaint:idle", "--loads", "1000", "--out", "x"],
     "'b'"),
    (["compare", "--level", "a=stock", "--helper-cpus", "a=99", "--loads", "1000", "--out", "x"], "'99'"),
    (["compare", "--level", "a=stock", "--helper-cpus", "a=0", "--server-cpus", "0", "--loads", "1000",
      "--out", "x"], "overlap"),
    (["compare", "--level", "a=stock", "--helper-cpus", "a=0", "--loads", "1000", "--out", "x"], "unpinned"),
    (["compare", "--lru-options", "--lru-budget", "0", "--loads", "1000", "--out", "x"], "'0'"),
    (["compare", "--lru-options", "--lru-budget", "ten", "--loads", "1000", "--out", "x"], "'ten'"),
    (["compare", "--level", "a=fork", "--lru-budget", "20", "--loads", "1000", "--out", "x"], "--lru-options"),
    (["compare", "--lru-options", "--server", "httpd", "--loads", "1000", "--out", "x"], "httpd"),
    (["compare", "--lru-options", "--level", "stock=stock", "--loads", "1000", "--out", "x"], "repeat"),
])
def test_bad_input_is_one_line_naming_the_value(args: list[str], named: str) -> None:
    out = stagevar(*args)
    assert out.returncode == 2, out
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("stagevar: error:") and named in lines[0], lines[0]


@pytest.mark.parametrize("check,text,message", [
    (runs_count, "many", "bad run count 'many'"),
    (runs_count, "1", "runs per cell must be 2..60, not 1"),
    (runs_count, "61", "runs per cell must be 2..60, not 61"),     # quoted in README.md
    (conf_level, "high", "bad confidence 'high'"),
    (conf_level, "0.4", "confidence must be in [0.5, 1), not '0.4'"),
    (conf_level, "1", "confidence must be in [0.5, 1), not '1'"),
])
def test_number_options_name_the_bad_value(check: Callable[[str], float], text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as error:
        check(text)
    assert str(error.value) == message


def test_number_options_take_their_range_inclusive_where_documented() -> None:
    assert (runs_count("2"), runs_count("60")) == (2, 60)
    assert (conf_level("0.5"), conf_level("0.99")) == (0.5, 0.99)
    assert isinstance(runs_count("5"), int)


def test_compare_help_names_the_runs_bound() -> None:
    out = stagevar("compare", "--help")
    assert out.returncode == 0, out
    assert "runs per cell, 2..60 (default 5)" in " ".join(out.stdout.split())


def test_not_a_results_file(tmp_path: Path) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"format": "something else"}')
    out = stagevar("analyze", str(bad))
    assert out.returncode == 2 and "not a stagevar results file" in out.stderr


def synthetic_results() -> dict:
    """Two levels x two loads x 4 runs; the knob halves latency at the high load."""
    rng = np.random.default_rng(1)
    runs = []
    order = 0
    for knob in ("off", "on"):
        for load in (1000.0, 2000.0):
            for rep in range(4):
                scale = 100_000 * (0.5 if knob == "on" and load == 2000 else 1.0)
                v = rng.exponential(scale, 5000) + 20_000
                lows = np.unique(np.floor(v / 1000) * 1000)
                counts = [int(((v >= lo) & (v < lo + 1000)).sum()) for lo in lows]
                hist = [[float(lo), 1000.0, c] for lo, c in zip(lows, counts)]
                runs.append({
                    "cell": {"knob": knob, "load": load, "arrival": "exp"}, "rep": rep, "order": order,
                    "seed": rep, "error": None, "loadavg_before": [0.5], "loadavg_after": [0.6],
                    "server_cpu_s": 0.01 * 5000 * 1e-3, "requests_served": 5000,
                    "loadgen": {"meta": {"rate": load, "threads": 1, "arrival": {"kind": "exp", "cv2": 1}},
                                "rates": {"achieved": load, "offered": load},
                                "counts": {"errors": 0, "lost": 0, "timeouts": 0},
                                "latency_scheduled": {"count": 5000, "mean": float(v.mean()),
                                                      "min": float(v.min()), "max": float(v.max()),
                                                      "overflow": 0, "histogram": hist},
                                "batch_size": {"count": 10, "min": 1, "max": 1, "histogram": [[1, 1, 10]]}}})
                order += 1
    design = {"name": "synthetic", "server": "memcached", "levels": [
        {"name": "off", "variant": "fork", "params": {"x": 0}}, {"name": "on", "variant": "fork", "params": {"x": 1}}],
        "loads": [1000.0, 2000.0], "arrivals": ["exp"], "ideal_servers": 1, "ideal_shared": False,
        "load_unit": "req/s", "sweep": "x"}
    return {"format": FORMAT, "meta": {"loadavg": [0.5]}, "experiments": [{"design": design, "runs": runs}],
            "profiles": [], "notes": ["synthetic"],
            "claims": [{"use_case": "test", "claim": "on is faster", "experiment": "synthetic", "knob": "on"}]}


def test_analyze_and_report_from_results(tmp_path: Path) -> None:
    res = synthetic_results()
    path = tmp_path / "results.json.gz"
    save_results(res, path)
    assert gzip.decompress(path.read_bytes())[:1] == b"{"
    assert load_results(path)["experiments"][0]["runs"][0]["cell"]["knob"] == "off"
    out = stagevar("analyze", str(path), "--json", str(tmp_path / "a.json"))
    assert out.returncode == 0, out.stderr
    analysis = json.loads((tmp_path / "a.json").read_text())
    ratios = {(r["knob"], r["load"]): r for r in analysis["experiments"][0]["ratios"]}
    high = ratios[("on", 2000.0)]["percentiles"]["p99"]
    assert high["high"] < 0.7 and high["value"] == pytest.approx(0.5, rel=0.15)
    low = ratios[("on", 1000.0)]["percentiles"]["p99"]
    assert low["low"] < 1 < low["high"]
    assert "ratio knob / off" in out.stdout
    qr99 = [q for q in analysis["experiments"][0]["qr"] if q["quantile"] == 0.99][0]
    inter = [t for t in qr99["terms"] if t["name"] == "knob[on]:load[2000]"][0]
    assert inter["effect"] < -100  # the knob's effect appears only at the high load
    rep = stagevar("report", str(path), "--out", str(tmp_path / "rep"))
    assert rep.returncode == 0, rep.stderr
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "Paper's claim vs measured here" in md
    assert "p99 at 2000 (exp) <= x1: met" in md
    # A sweep gets its sensitivity curve; a factorial experiment its tail plot.
    for png in ("synthetic-ratio-vs-load.png", "synthetic-sensitivity.png"):
        assert (tmp_path / "rep" / "plots" / png).stat().st_size > 5000
        assert f"plots/{png}" in md
    assert not (tmp_path / "rep" / "plots" / "synthetic-tail.png").exists()
    assert "<table>" in (tmp_path / "rep" / "report.html").read_text()
    res["experiments"][0]["design"]["sweep"] = None
    save_results(res, path)
    assert stagevar("report", str(path), "--out", str(tmp_path / "rep2")).returncode == 0
    assert (tmp_path / "rep2" / "plots" / "synthetic-tail.png").stat().st_size > 5000
    assert not (tmp_path / "rep2" / "plots" / "synthetic-sensitivity.png").exists()


def test_failed_runs_are_reported_not_fatal(tmp_path: Path) -> None:
    res = synthetic_results()
    broken = copy.deepcopy(res["experiments"][0]["runs"][0])
    broken.update(error="loadgen exited 1: connection refused", loadgen={})
    res["experiments"][0]["runs"].append(broken)
    path = tmp_path / "r.json"
    save_results(res, path)
    out = stagevar("analyze", str(path), "--no-qr")
    assert out.returncode == 0, out.stderr
    assert "1 failed" in out.stdout


def test_compact_keeps_counts_and_quantiles(tmp_path: Path) -> None:
    from stagevar_bench.experiment import compact_histogram
    from stagevar_bench.stats import Histogram
    rng = np.random.default_rng(4)
    v = rng.lognormal(11, 1.0, 20000)
    full = Histogram.from_samples(v)
    obj = {"count": full.n, "min": full.min, "max": full.max, "overflow": 0,
           "histogram": [[lo, w, int(c)] for lo, w, c in zip(full.lows, full.widths, full.counts)]}
    small = Histogram.from_json(compact_histogram(obj, 16))
    assert small.n == full.n and small.lows.size < full.lows.size / 3
    for p in (0.5, 0.99, 0.999):
        assert small.quantile(p) == pytest.approx(full.quantile(p), rel=1 / 16)
    path = tmp_path / "r.json"
    save_results(synthetic_results(), path)
    out = stagevar("compact", str(path), str(tmp_path / "c.json.gz"), "--per-octave", "16")
    assert out.returncode == 0, out.stderr
    assert "compacted to 16" in load_results(tmp_path / "c.json.gz")["notes"][-1]
    bad = stagevar("compact", str(path), str(tmp_path / "d.json"), "--per-octave", "10")
    assert bad.returncode == 2 and "not 10" in bad.stderr

# SPDX-License-Identifier: BSD-3-Clause
"""tools/demo's comparison: what it names, and that each pair's ratios and
verdict come from that pair's runs (analyze's real statistics on
synthetic runs of known effect)."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from stagevar_bench.analyze import analyze, moves_per_eviction

DEMO = Path(__file__).resolve().parents[2] / "tools" / "demo"
KNOB = "fork-hot0"                # the LRU option set's name of -o hot_lru_pct=0


def demo_module() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("demo", str(DEMO))
    spec = importlib.util.spec_from_loader("demo", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def run(knob: str, rep: int, scale: float, rng: np.random.Generator) -> dict[str, Any]:
    """One run record as run_one writes it: 4000 latencies of `scale`."""
    v = rng.exponential(scale, 4000) + 20_000
    lows = np.unique(np.floor(v / 1000) * 1000)
    hist = [[float(lo), 1000.0, int(((v >= lo) & (v < lo + 1000)).sum())] for lo in lows]
    return {"cell": {"knob": knob, "load": 1000.0, "arrival": "exp"}, "rep": rep, "order": rep, "seed": rep,
            "error": None, "loadavg_before": [0.5], "loadavg_after": [0.5], "server_cpu_s": 0.04,
            "requests_served": 4000,
            "loadgen": {"meta": {"rate": 1000.0, "threads": 1, "arrival": {"kind": "exp", "cv2": 1}},
                        "rates": {"achieved": 1000.0, "offered": 1000.0},
                        "counts": {"errors": 0, "lost": 0, "timeouts": 0},
                        "latency_scheduled": {"count": 4000, "mean": float(v.mean()), "min": float(v.min()),
                                              "max": float(v.max()), "overflow": 0, "histogram": hist},
                        "batch_size": {"count": 10, "min": 1, "max": 1, "histogram": [[1, 1, 10]]}}}


def test_the_demo_names_what_it_compares() -> None:
    out = subprocess.run([sys.executable, str(DEMO), "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "no_lru_maintainer" in out.stdout and "bounded latency" in out.stdout


def test_each_pair_gets_its_own_ratios_and_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """The knob halves stock's latency and equals no_lru_maintainer's."""
    demo = demo_module()
    rng = np.random.default_rng(5)
    scales = {"stock": 200_000.0, demo.NO_LRU_MAINTAINER: 100_000.0, KNOB: 100_000.0}
    runs = [run(knob, rep, scale, rng) for knob, scale in scales.items() for rep in range(8)]
    design = {"name": "demo-compare", "server": "memcached", "loads": [1000.0], "arrivals": ["exp"],
              "levels": [{"name": name, "variant": "stock"} for name in scales]}
    exp = analyze({"experiments": [{"design": design, "runs": runs}]}, with_qr=False, with_ideal=False,
                  reps=500)["experiments"][0]
    assert demo.report(exp, KNOB) == 0
    out = capsys.readouterr().out
    verdicts = {line.split(":", 1)[0].strip(): line for line in out.splitlines() if "verdict against" in line}
    assert "p90: lower with the knob" in verdicts["verdict against stock"]
    no_lru = verdicts[f"verdict against {demo.NO_LRU_MAINTAINER}"]
    assert "p90: no change shown" in no_lru and "higher" not in no_lru
    ratio = re.search(rf"p90 ratio {re.escape(KNOB)} / {demo.NO_LRU_MAINTAINER}: ([0-9.]+) ", out)
    assert ratio and 0.8 < float(ratio.group(1)) < 1.25, out
    ratio = re.search(rf"p90 ratio {re.escape(KNOB)} / stock: ([0-9.]+) ", out)
    assert ratio and 0.4 < float(ratio.group(1)) < 0.6, out


def test_the_answer_is_the_simplest_option_nothing_beats(capsys: pytest.CaptureFixture[str]) -> None:
    """The knob ties no_lru_maintainer and both beat stock: stock's own
    flag is the answer, the knob and stock are named as not chosen."""
    demo = demo_module()
    rng = np.random.default_rng(7)
    scales = {"stock": 200_000.0, demo.NO_LRU_MAINTAINER: 100_000.0, KNOB: 100_000.0}
    runs = [run(knob, rep, scale, rng) for knob, scale in scales.items() for rep in range(8)]
    design = {"name": "demo-compare", "server": "memcached", "loads": [1000.0], "arrivals": ["exp"],
              "levels": [{"name": name, "variant": "fork" if name == KNOB else "stock"} for name in scales]}
    exp = analyze({"experiments": [{"design": design, "runs": runs}]}, with_qr=False, with_ideal=False,
                  reps=500)["experiments"][0]
    assert demo.print_answer(exp) == 0
    out = capsys.readouterr().out
    assert f"== 4. answer: run {demo.NO_LRU_MAINTAINER}\n" in out, out
    assert "not stock: its p90 is resolved above" in out, out
    assert f"{KNOB} is not resolved apart from it" in out, out


def test_the_mechanism_shows_the_moves_to_cold_an_eviction_where_the_runs_evicted() -> None:
    """The median over the analysis's runs of moves_to_cold / evictions:
    the flat LRU, which does not count moves, shows 0; runs that evicted
    nothing, or kept no stats, show none; the host's steal shows where
    the runs recorded it."""
    demo = demo_module()
    assert demo.KNOB == KNOB
    cell = {"worker_sched": {"wait_share": 0.02}, "outside_cores": 0.1}

    def summaries(*stats: dict) -> list[dict]:
        return [{"moves_per_eviction": moves_per_eviction({"server_stats": s})} for s in stats]
    segmented = summaries(*({"evictions": 1000, "moves_to_cold": m} for m in (1060, 1040, 1100)))
    assert demo.mechanism(cell, segmented) == ("worker waited for its core 2.0% of its runnable time; other "
                                               "tasks took 0.10 cores of it; 1.06 moves to COLD an eviction")
    assert demo.mechanism(cell, summaries({"evictions": 1000})).endswith("; 0.00 moves to COLD an eviction")
    none = summaries({}, {"evictions": 0, "moves_to_cold": 5})
    assert demo.mechanism(cell, none) == ("worker waited for its core 2.0% of its runnable time; other "
                                          "tasks took 0.10 cores of it")
    stolen = cell | {"host_steal_s": 0.03}
    assert demo.mechanism(stolen, [{}]).endswith("took 0.10 cores of it; the host took 30 ms of the run's CPUs")

# SPDX-License-Identifier: BSD-3-Clause
"""Runs needed and minimum detectable effects (power.py), checked against
the closed forms and by simulating the rank test they stand for."""
from __future__ import annotations

import math

import numpy as np
import pytest

from stagevar_bench.power import (MIN_RUNS, log_spread, min_detectable_effect, resolution,
                                  runs_needed)
from stagevar_bench.ranks import compare


def test_log_spread_pools_each_sides_own_spread() -> None:
    a = [math.exp(x) for x in (0.0, 1.0, 2.0)]
    b = [math.exp(x) for x in (10.0, 11.0, 12.0)]    # a different centre, the same spread
    assert log_spread(a, b) == pytest.approx(1.4826)


def test_a_stalled_run_does_not_set_the_spread() -> None:
    runs = [math.exp(x) for x in (-0.1, -0.05, 0.0, 0.05, 0.1)]
    assert log_spread(runs + [10 * runs[2]]) == pytest.approx(log_spread(runs), rel=0.5)
    assert log_spread(runs + [10 * runs[2]]) < 0.15


def test_runs_that_mostly_tie_keep_a_spread() -> None:
    """Percentiles read from one histogram bucket tie: the MAD is 0, and
    the spread falls back to the pooled sd, not to 'resolves anything'."""
    a = [100.0, 100.0, 100.0, 100.0, 108.0]
    b = [90.0, 90.0, 90.0, 90.0, 90.0 * 1.08]
    assert log_spread(a, b) == pytest.approx(math.sqrt(1.6 / 8) * math.log(1.08))   # each SS 0.8 d^2
    assert min_detectable_effect(log_spread(a, b), 5) > 0.01


def test_the_power_holds_with_stalled_runs() -> None:
    """Simulated: one run in thirty blown up tenfold, as host stalls do
    here; the rank test still resolves the MDE of the bulk's spread in
    most experiments (72% without stalls: the exact test at 8 runs)."""
    rng = np.random.default_rng(5)
    sd, n = 0.05, 8
    shift = math.log(1 + min_detectable_effect(sd, n))

    def runs(centre: float) -> np.ndarray:
        x = rng.lognormal(centre, sd, n)
        return np.where(rng.random(n) < 1 / 30, 10 * x, x)
    resolved = sum(compare(runs(0), runs(-shift)).ci[1] < 1 for _ in range(600))
    assert 0.55 <= resolved / 600 <= 0.9


def test_mde_and_runs_needed_are_inverse() -> None:
    sd = 0.5
    n = runs_needed(sd, effect=0.3)
    assert min_detectable_effect(sd, n) <= 1 / 0.7 - 1 + 1e-9
    assert min_detectable_effect(sd, n - 1) > min_detectable_effect(sd, n)


def test_a_quiet_machine_needs_the_minimum() -> None:
    assert runs_needed(0.01) == MIN_RUNS


def test_the_power_is_what_it_says() -> None:
    """Simulated: with the runs runs_needed asks for, the exact rank test
    resolves a 30 % change in about 80 % of experiments."""
    rng = np.random.default_rng(3)
    sd = 0.4
    n = runs_needed(sd, effect=0.3)
    resolved = 0
    for _ in range(300):
        a = rng.lognormal(0, sd, n)
        b = rng.lognormal(math.log(0.7), sd, n)
        resolved += compare(a, b).ci[1] < 1
    assert 0.7 <= resolved / 300 <= 0.95


def test_resolution_of_two_samples() -> None:
    r = resolution([100, 120, 90, 110, 105], [80, 95, 70, 88, 84])
    assert r.needed >= MIN_RUNS and r.mde > 0 and r.effect == 0.3

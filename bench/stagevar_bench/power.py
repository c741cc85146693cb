# SPDX-License-Identifier: BSD-3-Clause
"""How many runs a comparison needs, and what it can resolve.

Run-to-run spread on a shared 2-core machine is large (single runs'
p99 differ by 10x), so an experiment states, next to every ratio, the
smallest effect it could have detected (the minimum detectable effect,
MDE) and, for a target effect, the runs per side that would resolve it.
The spread is measured on the log scale (latencies differ by factors),
from the runs themselves, robustly (the median absolute deviation):
one run a host stall blew up tenfold would set a standard deviation,
while the rank test moves with that run's rank alone. The formulas are
the normal ones for a two-sample comparison at power 1 - beta, divided
by the Mann-Whitney test's efficiency relative to the t-test under
normality (3/pi), since the rank test is the one the verdicts use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as sps

from stagevar_bench.stats import DEFAULT_CONF

POWER = 0.8
RANK_EFFICIENCY = 3 / math.pi     # Mann-Whitney vs t, normal data
MAD_TO_SD = 1.4826                # a normal sample's sd over its MAD
MIN_RUNS = 4                      # the fewest per side an exact 95 % HL CI exists for


def log_spread(*samples: Sequence[float]) -> float:
    """The runs' spread as a factor's log: 1.4826 x the median absolute
    deviation of log values, each side centred on its own median, pooled
    (a standard deviation for normal logs, unmoved by a stalled run).
    Where most runs tie (percentiles read from one histogram bucket) the
    MAD is 0, which would claim any change resolvable: then the pooled
    standard deviation."""
    logs = [np.log(np.asarray(s, dtype=float)) for s in samples if len(s) > 1]
    if not logs:
        return math.nan
    devs = np.concatenate([np.abs(l - np.median(l)) for l in logs])
    mad = MAD_TO_SD * float(np.median(devs))
    return mad if mad > 0 else _pooled_sd(logs)


def _pooled_sd(logs: list[np.ndarray]) -> float:
    dof = sum(len(l) - 1 for l in logs)
    return math.sqrt(sum(float(((l - l.mean()) ** 2).sum()) for l in logs) / dof)


def _z_sum(conf: float, power: float) -> float:
    return float(sps.norm.ppf(1 - (1 - conf) / 2) + sps.norm.ppf(power))


def min_detectable_effect(sd_log: float, n_per_side: int, conf: float = DEFAULT_CONF,
                          power: float = POWER) -> float:
    """The smallest change, as a fraction (0.3: 30 %), that n runs per
    side detect with the given power, for runs spread by sd_log."""
    if n_per_side < 2 or not math.isfinite(sd_log):
        return math.nan
    shift = _z_sum(conf, power) * sd_log * math.sqrt(2 / (n_per_side * RANK_EFFICIENCY))
    return math.exp(shift) - 1


def runs_needed(sd_log: float, effect: float = 0.3, conf: float = DEFAULT_CONF,
                power: float = POWER) -> int:
    """Runs per side that resolve a change of `effect` (0.3: a ratio of
    0.7 or 1/0.7), for runs spread by sd_log."""
    if not math.isfinite(sd_log):
        return MIN_RUNS
    shift = abs(math.log(1 - effect))
    n = 2 * (_z_sum(conf, power) * sd_log / shift) ** 2 / RANK_EFFICIENCY
    return max(MIN_RUNS, math.ceil(n))


@dataclass(frozen=True)
class Resolution:
    sd_log: float
    mde: float          # at the runs made
    needed: int         # runs per side for `effect`
    effect: float


def resolution(a: Sequence[float], b: Sequence[float], effect: float = 0.3,
               conf: float = DEFAULT_CONF) -> Resolution:
    sd = log_spread(a, b)
    n = min(len(a), len(b))
    return Resolution(sd, min_detectable_effect(sd, n, conf), runs_needed(sd, effect, conf), effect)

# SPDX-License-Identifier: BSD-3-Clause
"""Statistics for latency experiments: histograms, order-statistic CIs of
quantiles, bootstrap CIs across runs, and quantile regression.

Everything here is pure computation on numbers (no servers, no files), so
the unit tests in test/bench/ check it against known answers.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np
from scipy import stats as sps

DEFAULT_CONF = 0.95


# ---------------------------------------------------------------- histograms

@dataclass(frozen=True)
class Histogram:
    """A libstagevar log-linear histogram as loadgen's JSON writes it:
    non-empty buckets [low, width, count], plus values past the last bucket
    (`overflow`, all taken to be at `max`). Values inside a bucket are
    taken to be spread uniformly over [low, low + width)."""

    lows: np.ndarray
    widths: np.ndarray
    counts: np.ndarray
    overflow: int = 0
    min: float = 0.0
    max: float = 0.0
    cum: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        order = np.argsort(self.lows, kind="stable")
        object.__setattr__(self, "lows", np.asarray(self.lows, dtype=float)[order])
        object.__setattr__(self, "widths", np.asarray(self.widths, dtype=float)[order])
        object.__setattr__(self, "counts", np.asarray(self.counts, dtype=np.int64)[order])
        object.__setattr__(self, "cum", np.cumsum(self.counts))

    @classmethod
    def from_json(cls, obj: Mapping[str, object]) -> "Histogram":
        """From a loadgen stage object (`latency_scheduled`, `batch_size`, ...)."""
        buckets = obj.get("histogram") or []
        arr = np.asarray(buckets, dtype=float).reshape(-1, 3)
        return cls(arr[:, 0], arr[:, 1], arr[:, 2].astype(np.int64),
                   overflow=int(obj.get("overflow", 0) or 0),
                   min=float(obj.get("min", 0) or 0), max=float(obj.get("max", 0) or 0))

    @classmethod
    def from_samples(cls, values: Sequence[float] | np.ndarray, rel: float = 1 / 64) -> "Histogram":
        """Bucket raw samples log-linearly (relative width `rel`), for tests
        and for simulated latencies."""
        v = np.asarray(values, dtype=float)
        if v.size == 0:
            return cls(np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64))
        base = np.where(v < 64, np.floor(v), 0.0)
        big = v >= 64
        exp = np.floor(np.log2(np.where(big, v, 64.0)))
        width = np.where(big, np.exp2(exp) * rel, 1.0)
        lows = np.where(big, np.floor(v / width) * width, base)
        keys, inverse = np.unique(lows, return_inverse=True)
        counts = np.bincount(inverse)
        widths = np.zeros_like(keys)
        widths[inverse] = width
        return cls(keys, widths, counts, min=float(v.min()), max=float(v.max()))

    @property
    def n(self) -> int:
        return int(self.cum[-1] if self.cum.size else 0) + self.overflow

    def rank_bucket(self, k: int) -> int:
        """Index of the bucket holding the k-th smallest value (1-based);
        -1 past the buckets (overflow)."""
        i = int(np.searchsorted(self.cum, k, side="left"))
        return i if i < self.cum.size else -1

    def value_at_rank(self, k: int) -> float:
        """The k-th order statistic (1-based), interpolated within its bucket."""
        if self.n == 0:
            return math.nan
        k = min(max(int(k), 1), self.n)
        i = self.rank_bucket(k)
        if i < 0:
            return self.max
        before = self.cum[i] - self.counts[i]
        frac = (k - before - 0.5) / self.counts[i]
        return float(self.clamp(self.lows[i] + frac * self.widths[i]))

    def rank_bounds(self, k: int) -> tuple[float, float]:
        """The smallest and largest value the k-th order statistic can have
        given the bucketing."""
        k = min(max(int(k), 1), self.n)
        i = self.rank_bucket(k)
        if i < 0:
            return self.max, self.max
        return (float(self.clamp(self.lows[i])),
                float(self.clamp(self.lows[i] + self.widths[i])))

    def clamp(self, x: float) -> float:
        if self.max > 0:
            return min(max(x, self.min), self.max)
        return x

    def quantile(self, p: float) -> float:
        """Nearest-rank quantile: the ceil(p*n)-th order statistic."""
        return self.value_at_rank(max(1, math.ceil(p * self.n - 1e-9)))

    def quantile_ci(self, p: float, conf: float = DEFAULT_CONF) -> tuple[float, float, float]:
        """(estimate, low, high): the distribution-free order-statistic CI
        of the p-quantile, widened to whole buckets so the histogram's
        resolution cannot make it too narrow. high is inf if n is too small."""
        lo_rank, hi_rank = quantile_ci_ranks(self.n, p, conf)
        low = self.rank_bounds(lo_rank)[0] if lo_rank >= 1 else 0.0
        high = self.rank_bounds(hi_rank)[1] if hi_rank <= self.n else math.inf
        return self.quantile(p), low, high

    def cdf(self, x: float) -> float:
        """Fraction of values <= x (uniform within buckets)."""
        if self.n == 0:
            return math.nan
        inside = np.clip((x - self.lows) / np.where(self.widths > 0, self.widths, 1), 0, 1)
        return float((inside * self.counts).sum() + (self.overflow if x >= self.max else 0)) / self.n

    def mean(self) -> float:
        mids = self.lows + self.widths / 2
        total = float((mids * self.counts).sum()) + self.overflow * self.max
        return total / self.n if self.n else math.nan

    def representative_sample(self, m: int) -> np.ndarray:
        """m values at the quantiles (i + 0.5)/m: a deterministic stand-in
        for the run's requests, with the run's distribution."""
        if self.n == 0 or m <= 0:
            return np.zeros(0)
        ranks = np.ceil((np.arange(m) + 0.5) / m * self.n).astype(np.int64)
        return np.array([self.value_at_rank(int(k)) for k in ranks])

    def merged(self, other: "Histogram") -> "Histogram":
        lows = np.concatenate([self.lows, other.lows])
        widths = np.concatenate([self.widths, other.widths])
        counts = np.concatenate([self.counts, other.counts])
        keys, inverse = np.unique(lows, return_inverse=True)
        w = np.zeros_like(keys)
        w[inverse] = widths
        return Histogram(keys, w, np.bincount(inverse, weights=counts).astype(np.int64),
                         overflow=self.overflow + other.overflow,
                         min=min(self.min, other.min) if self.n and other.n else max(self.min, other.min),
                         max=max(self.max, other.max))


# ------------------------------------------------------ order statistics CI

def quantile_ci_ranks(n: int, p: float, conf: float = DEFAULT_CONF) -> tuple[int, int]:
    """1-based ranks (l, u) such that [X_(l), X_(u)] covers the true
    p-quantile with probability >= conf, for any continuous distribution.

    B = #samples <= the true quantile ~ Binomial(n, p), and
    P(X_(l) <= q_p <= X_(u)) = P(l <= B <= u - 1). Each tail gets at most
    (1 - conf)/2. l = 0 or u = n + 1 mean the interval is unbounded on that
    side (too few samples for that confidence)."""
    if not 0 < p < 1:
        raise ValueError(f"quantile must be in (0, 1), not {p}")
    if not 0 < conf < 1:
        raise ValueError(f"confidence must be in (0, 1), not {conf}")
    if n <= 0:
        return 0, 1
    tail = (1 - conf) / 2
    b = sps.binom(n, p)
    # l: the largest l with P(B <= l - 1) <= tail.
    k = int(b.ppf(tail))            # smallest k with F(k) >= tail
    if b.cdf(k) > tail:
        k -= 1
    lo = k + 1                      # k = -1: no order statistic is low enough
    # u: the smallest u with P(B <= u - 1) >= 1 - tail.
    u = int(b.ppf(1 - tail)) + 1
    return max(lo, 0), min(u, n + 1)


def sample_quantile_ci(values: Sequence[float] | np.ndarray, p: float,
                       conf: float = DEFAULT_CONF) -> tuple[float, float, float]:
    """(nearest-rank estimate, low, high) from raw samples."""
    v = np.sort(np.asarray(values, dtype=float))
    n = v.size
    lo_rank, hi_rank = quantile_ci_ranks(n, p, conf)
    est = v[max(1, math.ceil(p * n - 1e-9)) - 1]
    low = v[lo_rank - 1] if lo_rank >= 1 else -math.inf
    high = v[hi_rank - 1] if hi_rank <= n else math.inf
    return float(est), float(low), float(high)


# ---------------------------------------------------------------- bootstrap

@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    n: int

    def as_dict(self) -> dict[str, float]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n}


def bootstrap_ci(values: Sequence[float] | np.ndarray,
                 stat: Callable[[np.ndarray], float] = np.median,
                 conf: float = DEFAULT_CONF, reps: int = 10000, seed: int = 1) -> Estimate:
    """Percentile bootstrap CI of `stat` over independent runs."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(reps, v.size))
    boots = np.apply_along_axis(stat, 1, v[idx]) if stat is not np.median else np.median(v[idx], axis=1)
    tail = (1 - conf) / 2
    lo, hi = np.quantile(boots, [tail, 1 - tail])
    return Estimate(float(stat(v)), float(lo), float(hi), int(v.size))


def bootstrap_ratio_ci(numerator: Sequence[float] | np.ndarray,
                       denominator: Sequence[float] | np.ndarray,
                       conf: float = DEFAULT_CONF, reps: int = 10000, seed: int = 1) -> Estimate:
    """Ratio of medians (numerator / denominator) with a percentile
    bootstrap CI, resampling the two groups of runs independently."""
    a = np.asarray(numerator, dtype=float)
    b = np.asarray(denominator, dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]
    if a.size == 0 or b.size == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    rng = np.random.default_rng(seed)
    ma = np.median(a[rng.integers(0, a.size, size=(reps, a.size))], axis=1)
    mb = np.median(b[rng.integers(0, b.size, size=(reps, b.size))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = ma / mb
    ratios = ratios[np.isfinite(ratios)]
    tail = (1 - conf) / 2
    lo, hi = np.quantile(ratios, [tail, 1 - tail]) if ratios.size else (math.nan, math.nan)
    return Estimate(float(np.median(a) / np.median(b)), float(lo), float(hi), int(min(a.size, b.size)))


def paired_ratio_ci(numerator: Sequence[float], denominator: Sequence[float],
                    conf: float = DEFAULT_CONF) -> Estimate:
    """Geometric mean of the per-pair ratios numerator[i] / denominator[i]
    with a t-based CI on their logs: for runs made in pairs, back to back,
    so that a drift of the machine between pairs cancels."""
    if len(numerator) != len(denominator):
        raise ValueError(f"{len(numerator)} numerators for {len(denominator)} denominators")
    logs = np.log(np.asarray(numerator, dtype=float) / np.asarray(denominator, dtype=float))
    n = int(logs.size)
    if n < 2:
        return Estimate(math.exp(logs[0]) if n else math.nan, math.nan, math.nan, n)
    mean = float(np.mean(logs))
    half = float(sps.t.ppf(0.5 + conf / 2, n - 1)) * float(np.std(logs, ddof=1)) / math.sqrt(n)
    return Estimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half), n)


# ------------------------------------------------------- quantile regression

@dataclass(frozen=True)
class Term:
    name: str
    effect: float
    stderr: float
    p_value: float
    low: float
    high: float


@dataclass(frozen=True)
class QRResult:
    quantile: float
    formula: str
    terms: list[Term]
    pseudo_r2: float
    n: int

    def term(self, name: str) -> Term:
        for t in self.terms:
            if t.name == name:
                return t
        raise KeyError(f"no term {name!r} in {[t.name for t in self.terms]}")

    def as_dict(self) -> dict[str, object]:
        return {"quantile": self.quantile, "formula": self.formula, "pseudo_r2": self.pseudo_r2,
                "n": self.n, "terms": [t.__dict__ for t in self.terms]}


def qr_formula(response: str, factors: Sequence[str], interactions: bool = True) -> str:
    joiner = " * " if interactions else " + "
    rhs = joiner.join(f"C({f}, Treatment(reference={_ref_placeholder(f)}))" for f in factors)
    return f"{response} ~ {rhs}" if factors else f"{response} ~ 1"


def _ref_placeholder(factor: str) -> str:
    return f"__REF_{factor}__"


def quantile_regression(rows: Mapping[str, Sequence[object]] | "object", response: str,
                        factors: Sequence[str], quantiles: Iterable[float] = (0.5, 0.95, 0.99),
                        interactions: bool = True,
                        references: Mapping[str, object] | None = None) -> list[QRResult]:
    """Linear quantile regression (statsmodels QuantReg) of `response` on
    categorical `factors` (treatment coding against `references`, default
    each factor's first level in order of appearance), with all
    interactions. Factors with one level are left out. Returns one result
    per quantile: effects, standard errors, p-values (statsmodels' robust
    kernel estimate) and Koenker-Machado pseudo-R²."""
    import pandas as pd
    import statsmodels.formula.api as smf
    from statsmodels.tools.sm_exceptions import IterationLimitWarning

    df = pd.DataFrame(rows)
    used = [f for f in factors if df[f].nunique() > 1]
    formula = qr_formula(response, used, interactions)
    for f in used:
        ref = (references or {}).get(f, df[f].iloc[0])
        formula = formula.replace(_ref_placeholder(f), repr(ref))
    results = []
    for q in quantiles:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IterationLimitWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            fit = smf.quantreg(formula, df).fit(q=q, max_iter=5000)
        ci = fit.conf_int()
        terms = [Term(name=_pretty_term(str(name)), effect=float(fit.params[name]),
                      stderr=float(fit.bse[name]), p_value=float(fit.pvalues[name]),
                      low=float(ci.loc[name, 0]), high=float(ci.loc[name, 1]))
                 for name in fit.params.index]
        results.append(QRResult(quantile=float(q), formula=_pretty_formula(formula), terms=terms,
                                pseudo_r2=float(fit.prsquared), n=int(fit.nobs)))
    return results


def _pretty_term(name: str) -> str:
    """'C(knob, Treatment(reference='off'))[T.on]' -> 'knob[on]'."""
    import re
    return re.sub(r"C\((\w+), Treatment\(reference=[^)]*\)\)\[T\.([^\]]*)\]", r"\1[\2]", name)


def _pretty_formula(formula: str) -> str:
    import re
    return re.sub(r"C\((\w+), Treatment\(reference=[^)]*\)\)", r"\1", formula)

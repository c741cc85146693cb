# SPDX-License-Identifier: BSD-3-Clause
"""Queueing models: closed forms (Pollaczek-Khinchine, Erlang C) and FCFS
simulations driven by arrival times (one shared queue with c servers, or
c independent queues with a fixed assignment of requests to queues, as
memcached's worker threads own their connections).

Times are in any one unit (the bench uses ns); rates are per that unit.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


class Unstable(ValueError):
    """Utilisation >= 1: the queue has no steady state."""


# ----------------------------------------------------------- closed forms

def pk_mean_wait(rate: float, mean_service: float, cs2: float) -> float:
    """M/G/1 mean waiting time (Pollaczek-Khinchine):
    W = rho * E[S] * (1 + C²) / (2 (1 - rho))."""
    rho = rate * mean_service
    if rho >= 1:
        raise Unstable(f"utilisation {rho:.3f} >= 1")
    return rho * mean_service * (1 + cs2) / (2 * (1 - rho))


def pk_mean_response(rate: float, mean_service: float, cs2: float) -> float:
    """M/G/1 mean time in system: E[S] + W."""
    return mean_service + pk_mean_wait(rate, mean_service, cs2)


def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits in M/M/c; offered = lambda/mu."""
    if servers < 1:
        raise ValueError(f"servers must be >= 1, not {servers}")
    rho = offered / servers
    if rho >= 1:
        raise Unstable(f"utilisation {rho:.3f} >= 1")
    # Stable recursion on the Erlang B formula, then B -> C.
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    return b / (1 - rho * (1 - b))


def mmc_mean_wait(rate: float, service_rate: float, servers: int) -> float:
    """M/M/c mean waiting time: C(c, a) / (c mu - lambda)."""
    return erlang_c(servers, rate / service_rate) / (servers * service_rate - rate)


def mmc_wait_quantile(rate: float, service_rate: float, servers: int, p: float) -> float:
    """p-quantile of the M/M/c waiting time: P(W > t) = C exp(-(c mu - lambda) t)."""
    c = erlang_c(servers, rate / service_rate)
    if p <= 1 - c:
        return 0.0
    return math.log(c / (1 - p)) / (servers * service_rate - rate)


def md1_mean_wait(rate: float, service: float) -> float:
    """M/D/1 mean waiting time (P-K with C² = 0)."""
    return pk_mean_wait(rate, service, 0.0)


# ------------------------------------------------------------ simulation

def lindley(arrivals: np.ndarray, services: np.ndarray) -> np.ndarray:
    """Waiting times of one FCFS queue with one server (Lindley's recursion)."""
    a = np.asarray(arrivals, dtype=float)
    s = np.asarray(services, dtype=float)
    waits = np.empty(a.size)
    free_at = -math.inf
    for i in range(a.size):
        start = a[i] if a[i] >= free_at else free_at
        waits[i] = start - a[i]
        free_at = start + s[i]
    return waits


def simulate_shared(arrivals: np.ndarray, services: np.ndarray, servers: int) -> np.ndarray:
    """Waiting times of an FCFS queue served by `servers` identical servers
    (G/G/c): each request takes the server that frees first."""
    if servers < 1:
        raise ValueError(f"servers must be >= 1, not {servers}")
    if servers == 1:
        return lindley(arrivals, services)
    a = np.asarray(arrivals, dtype=float)
    s = np.asarray(services, dtype=float)
    free = [-math.inf] * servers
    heapq.heapify(free)
    waits = np.empty(a.size)
    for i in range(a.size):
        earliest = heapq.heappop(free)
        start = a[i] if a[i] >= earliest else earliest
        waits[i] = start - a[i]
        heapq.heappush(free, start + s[i])
    return waits


def simulate_multiqueue(arrivals: np.ndarray, services: np.ndarray,
                        queue_of: np.ndarray) -> np.ndarray:
    """Waiting times when request i joins queue queue_of[i], each queue with
    its own single server (memcached: a connection belongs to one worker)."""
    a = np.asarray(arrivals, dtype=float)
    s = np.asarray(services, dtype=float)
    q = np.asarray(queue_of)
    waits = np.empty(a.size)
    for queue in np.unique(q):
        idx = np.flatnonzero(q == queue)
        waits[idx] = lindley(a[idx], s[idx])
    return waits


# ------------------------------------------------------- arrival processes

@dataclass(frozen=True)
class ArrivalProcess:
    """What loadgen's JSON says about its arrivals (meta.arrival)."""

    kind: str                   # det, exp or pareto
    rate: float                 # per ns
    alpha: float = 0.0          # pareto: shape
    lo: float = 0.0             # pareto: scaled range of the gaps, ns
    hi: float = 0.0

    @classmethod
    def from_loadgen_meta(cls, meta: dict[str, object]) -> "ArrivalProcess":
        arrival = meta.get("arrival") or {}
        assert isinstance(arrival, dict)
        kind = str(arrival.get("kind", "exp"))
        rate = float(meta.get("rate", 0)) / 1e9
        if kind == "pareto":
            threads = int(meta.get("threads", 1) or 1)
            # loadgen scales one thread's stream; the merged process has
            # `threads` streams. Approximate it as one stream at the full
            # rate with the range scaled by 1/threads.
            return cls(kind, rate, float(arrival["alpha"]),
                       float(arrival["scaled_lo_ns"]) / threads, float(arrival["scaled_hi_ns"]) / threads)
        return cls(kind, rate)

    def gaps(self, n: int, rng: np.random.Generator) -> np.ndarray:
        mean = 1.0 / self.rate
        if self.kind == "det":
            return np.full(n, mean)
        if self.kind == "exp":
            return rng.exponential(mean, n)
        if self.kind == "pareto":
            return bounded_pareto(self.alpha, self.lo, self.hi, n, rng)
        raise ValueError(f"unknown arrival kind {self.kind!r}")

    def times(self, n: int, rng: np.random.Generator) -> np.ndarray:
        return np.cumsum(self.gaps(n, rng))


def bounded_pareto(alpha: float, lo: float, hi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Inverse-CDF draws from the Pareto(alpha) truncated to [lo, hi]."""
    u = rng.random(n)
    r = (lo / hi) ** alpha
    return lo / (1 - u * (1 - r)) ** (1 / alpha)


# ------------------------------------------------------------ the ideal

@dataclass(frozen=True)
class IdealModel:
    """The queueing ideal a run is compared with: requests arrive as the
    run's arrival process says, each needs exactly `service_ns` of one of
    `servers` servers (deterministic service: no variance from the server
    at all), and a request's latency is the unloaded floor plus its wait.
    `shared`: one queue for all servers (httpd's listener hands work to any
    idle thread); otherwise request i goes to queue i mod servers
    (memcached's round-robin of connections to worker threads)."""

    service_ns: float
    servers: int
    shared: bool
    floor_ns: float

    def latencies(self, process: ArrivalProcess, n: int, seed: int = 1) -> np.ndarray:
        rng = np.random.default_rng(seed)
        arrivals = process.times(n, rng)
        services = np.full(n, self.service_ns)
        if self.shared:
            waits = simulate_shared(arrivals, services, self.servers)
        else:
            waits = simulate_multiqueue(arrivals, services, np.arange(n) % self.servers)
        return self.floor_ns + waits

    def quantiles(self, process: ArrivalProcess, ps: Sequence[float], n: int = 200_000,
                  seed: int = 1) -> dict[float, float]:
        lat = self.latencies(process, n, seed)
        lat = lat[n // 10:]           # drop the empty-system start
        return {p: float(np.quantile(lat, p)) for p in ps}

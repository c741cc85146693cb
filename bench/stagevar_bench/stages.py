# SPDX-License-Identifier: BSD-3-Clause
"""Stage statistics from the fork servers, the ranking by variance, what
the stages suggest (and the options to measure) and the M/G/1 prediction.

memcached answers `stats stages` with `STAT <stage>:<field> <value>`;
httpd's handler answers `/stage-stats?json` with
`{"stage_trace":true,"requests":N,"stages":{"<stage>":{"count":..},..}}`.
Both come out of here as {stage: {field: float}} with the `_ns` suffix
dropped (mean, stddev, cv2, p99, ...).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

from stagevar_bench import memcache_client as mc
from stagevar_bench.lru_options import LRU_BUDGET_DEFAULT_US, LRU_KNOB, LRU_OPTIONS
from stagevar_bench.queueing import Unstable, pk_mean_response

# The stages that add up to a request's time in the server (e1 -> e6).
COMPONENTS = ("kernel_to_read", "read_to_parse", "parse_to_response", "response_to_send")

Stages = dict[str, dict[str, float]]


def parse_memcached_stages(text: str) -> Stages:
    return mc.stages(mc.parse_stats(text))


def parse_httpd_stages(text: str) -> Stages:
    obj = json.loads(text)
    out: Stages = {}
    for stage, fields in (obj.get("stages") or {}).items():
        out[stage] = {k.removesuffix("_ns"): float(v) for k, v in fields.items()
                      if isinstance(v, (int, float))}
    return out


def read_memcached_stages(host: str, port: int, netns: str | None = None) -> Stages:
    return mc.stages(mc.stats(host, port, "stages", netns))


def read_httpd_stages(host: str, port: int, path: str = "/stage-stats?json",
                      netns: str | None = None) -> Stages:
    req = f"GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n".encode()
    reply = mc.exchange(host, port, req, b"", netns).decode(errors="replace")
    head, _, body = reply.partition("\r\n\r\n")
    if " 200 " not in head.splitlines()[0]:
        raise OSError(f"GET {path}: {head.splitlines()[0] if head else 'no reply'}")
    return parse_httpd_stages(body)


# --------------------------------------------------------------- ranking

@dataclass(frozen=True)
class RankedStage:
    name: str
    count: float
    mean_ns: float
    stddev_ns: float
    variance_ns2: float
    cv2: float
    p99_ns: float
    share: float                # of the summed component variances


def rank_stages(stages: Mapping[str, Mapping[str, float]]) -> list[RankedStage]:
    """The component stages, largest variance first."""
    rows = []
    for name in COMPONENTS:
        s = stages.get(name)
        if not s or not s.get("count"):
            continue
        rows.append((name, s))
    total = sum(float(s.get("stddev", 0.0)) ** 2 for _, s in rows) or 1.0
    ranked = [RankedStage(name=name, count=float(s["count"]), mean_ns=float(s.get("mean", 0.0)),
                          stddev_ns=float(s.get("stddev", 0.0)),
                          variance_ns2=float(s.get("stddev", 0.0)) ** 2,
                          cv2=float(s.get("cv2", 0.0)), p99_ns=float(s.get("p99", 0.0)),
                          share=float(s.get("stddev", 0.0)) ** 2 / total)
              for name, s in rows]
    return sorted(ranked, key=lambda r: r.variance_ns2, reverse=True)


# ------------------------------------------------------------- M/G/1 view

@dataclass(frozen=True)
class Prediction:
    rate_per_server: float      # requests/ns one server (worker) sees
    mean_service_ns: float
    cs2: float
    utilisation: float
    mean_latency_ns: float      # P-K; inf if the queue is unstable
    halved_stage: str
    halved_cs2: float
    halved_mean_latency_ns: float
    gain: float                 # 1 - halved/now


def pk_prediction(ranked: list[RankedStage], rate_per_s: float, servers: int,
                  mean_service_ns: float | None = None) -> Prediction | None:
    """M/G/1 per server (worker), Poisson arrivals at rate/servers.

    Service-time moments: the mean is the server's CPU time per request
    when given (what a request really occupies a worker for), else the sum
    of the component stages' means; C² is the component stages' summed
    variance over their summed mean squared (stages taken as independent):
    the variability the stages show, including the delays inside them.
    Then the same with the top stage's variance halved."""
    if not ranked:
        return None
    stage_mean = sum(r.mean_ns for r in ranked)
    var = sum(r.variance_ns2 for r in ranked)
    if stage_mean <= 0:
        return None
    es = mean_service_ns if mean_service_ns and mean_service_ns > 0 else stage_mean
    lam = rate_per_s / max(servers, 1) / 1e9
    cs2 = var / stage_mean ** 2
    top = ranked[0]
    cs2_half = (var - top.variance_ns2 / 2) / stage_mean ** 2

    def resp(c2: float) -> float:
        try:
            return pk_mean_response(lam, es, c2)
        except Unstable:
            return math.inf

    now, half = resp(cs2), resp(cs2_half)
    gain = 1 - half / now if math.isfinite(now) and now > 0 else math.nan
    return Prediction(lam, es, cs2, lam * es, now, top.name, cs2_half, half, gain)


# --------------------------------------------------------------- advice

@dataclass(frozen=True)
class Option:
    """One thing to measure: a name (the level's name in the LRU option
    set of `stagevar compare --lru-options`), how an operator gets it, and
    whether it needs the fork's code."""
    name: str
    how: str
    needs_fork: bool


@dataclass(frozen=True)
class Advice:
    """What the stage evidence says. `knob` names the knob the rule is
    about ("none", or "unknown" where evidence is missing); for the LRU the
    stages show a cause, not which remedy wins, so `suggests` names the
    cause and `measure` the options to run side by side, stock's first:
    the answer comes from measuring them (advise.py), not from here."""
    knob: str                   # what the rule points at, "none", or "unknown"
    option: str                 # the fork knob's own setting, where there is one
    reason: str                 # the figures weighed
    suggests: str = ""          # the cause the evidence points at
    measure: tuple[Option, ...] = ()


BATCH_CV2_VARIABLE = 0.25       # batch sizes vary (C² of requests per read)
# The LRU maintainer's CPU, in cores, that counts as busy: it works in
# short wake-ups (about a millisecond apart while it has work), so 0.5 %
# of a core is hundreds of preemptions a second of a worker that shares
# its core.
MAINTAINER_BUSY_CORES = 0.005
GROWTH = 1.2                    # 20% more from the lower to the higher load
# Other tasks' CPU on the server's cores that counts as an outside
# neighbour: a tenth of a core. Beside a busy loop on the worker's core
# every option that leaves the maintainer little to do raised p99 and
# mean over stock's: stock's maintainer, waking about every millisecond,
# is what lets a waiting worker in past the loop (docs/memcached.md).
OUTSIDE_BUSY_CORES = 0.1


@dataclass(frozen=True)
class Evidence:
    """What the amortized LRU rule weighs besides the stages, whichever
    source measured it: the local profile (the server's threads and CPUs
    read from /proc around a run) or the fleet (rates of the exporter's
    series over the window). None: not measured; `how_to_know` says what
    would measure it, for the "unknown" answer."""
    maintainer_cores: float | None = None   # the mc-lrumaint thread's CPU
    outside_cores: float | None = None      # other tasks' CPU on the server's allowed CPUs
    worker_wait_share: float | None = None  # of the workers' runnable time, waiting for a CPU
    spare_cpus: str | None = None           # CPUs outside the server's and loadgen's, where known
    how_to_know: str = "`stagevar profile --server memcached` on the server's host measures them"

    def missing(self) -> list[str]:
        return [what for what, v in (("the LRU maintainer thread's CPU", self.maintainer_cores),
                                     ("other tasks' CPU on the server's cores", self.outside_cores))
                if v is None]

    def text(self) -> str:
        """The measured figures, for a reason: 'the LRU maintainer thread
        took 0.012 cores, other tasks 0.85 cores of the server's CPUs, ...'."""
        parts = []
        if self.maintainer_cores is not None:
            parts.append(f"the LRU maintainer thread took {self.maintainer_cores:.3f} cores")
        if self.outside_cores is not None:
            parts.append(f"other tasks took {self.outside_cores:.2f} cores of the server's CPUs")
        if self.worker_wait_share is not None:
            parts.append(f"the workers waited for a CPU {self.worker_wait_share:.1%} of their runnable time")
        return ", ".join(parts)


NO_EVIDENCE = Evidence()


def recommend(server: str, ranked: list[RankedStage], stages: Mapping[str, Mapping[str, float]],
              evidence: Evidence = NO_EVIDENCE,
              low_load: list[RankedStage] | None = None) -> Advice:
    """The method's rule for the top stage (see README, `profile`): the
    one decision function of the local and the fleet profile."""
    if not ranked:
        return Advice("none", "", "no stage statistics (is stage tracing on, and the server the fork?)")
    top = ranked[0]
    if server == "memcached" and top.name == "kernel_to_read":
        return lru_rule(top, evidence)
    if server == "memcached" and top.name == "read_to_parse":
        batch = stages.get("batch_size", {})
        cv2 = float(batch.get("cv2", 0.0))
        if cv2 >= BATCH_CV2_VARIABLE and float(batch.get("max", 1)) > 1:
            return Advice("client batching", "loadgen --batch-interval-us N (e.g. 50)",
                          f"read_to_parse varies most ({100 * top.share:.0f}% of the variance) and batch "
                          f"sizes vary (C² {cv2:.2f}, max {batch.get('max', 0):.0f}): queueing inside "
                          "uneven batches")
        return Advice("none", "", f"read_to_parse varies most but batch sizes are steady (C² {cv2:.2f})")
    if server == "httpd" and top.name in ("parse_to_response", "kernel_to_read"):
        if low_load:
            def pair(rs: list[RankedStage]) -> float:
                return sum(r.mean_ns for r in rs if r.name in ("parse_to_response", "kernel_to_read"))
            hi, lo = pair(ranked), pair(low_load)
            if lo > 0 and hi >= GROWTH * lo:
                return Advice("process pinning", "ProcessCorePinning on",
                              f"{top.name} varies most and parse_to_response + kernel_to_read grew "
                              f"{hi / lo:.2f}x from the lower to the higher load: threads of a child "
                              "migrate between cores")
            return Advice("none", "", f"{top.name} varies most but parse_to_response + kernel_to_read "
                          f"did not grow with load ({hi / lo if lo else math.nan:.2f}x)")
        return Advice("none", "", "httpd: profile at two loads to see whether the stages grow with load")
    return Advice("none", "", f"{top.name} varies most; the method has no knob for it")


# What the profile asks to measure when the maintainer competes with the
# workers: stock as it runs, stock's own remedies (no code), then the
# fork's options: the segmented LRU without HOT, and its knob, a fixed
# budget. Stock's -o no_lru_maintainer matched the knob's p90 in issue
# 45's runs; it gives up the segmented LRU, so its hit ratio is weighed.
PROFILE_LRU_OPTIONS = ("stock", "stock-no_lru_maintainer", "stock-lrumaint-idle", "stock-helpers-spare",
                       "fork-hot0", "fork-budget")


def lru_options(spare_cpus: str | None) -> tuple[Option, ...]:
    """PROFILE_LRU_OPTIONS with how an operator gets each (LRU_OPTIONS),
    the helpers' CPU from `spare_cpus` where it is known."""
    where = (f"CPUs {spare_cpus}" if spare_cpus
             else "a CPU the server and its clients do not use, where the host has one")
    by_name = {o.name: o for o in LRU_OPTIONS}
    return tuple(Option(name, by_name[name].how.format(spare=where), by_name[name].variant == "fork")
                 for name in PROFILE_LRU_OPTIONS)


def lru_rule(top: RankedStage, ev: Evidence) -> Advice:
    """kernel_to_read varies most in a memcached: if its maintainer thread
    is busy and no neighbour shares its cores, the maintainer competes
    with the workers, and the options that calm it are to be measured
    (stock's first). A neighbour declines the amortized knob even when the
    maintainer's CPU is unknown: declining is never blind."""
    varies = f"kernel_to_read varies most ({100 * top.share:.0f}% of the variance)"
    measured = ev.text()
    if ev.outside_cores is not None and ev.outside_cores >= OUTSIDE_BUSY_CORES:
        return Advice("none", "", f"{varies}, but {measured}: beside a busy neighbour the "
                      "LRU options are slower than stock, whose maintainer's wake-ups let the "
                      "worker in past it (docs/memcached.md); give the server cores of its own "
                      "or run the neighbour at nice 19 first")
    missing = ev.missing()
    if missing or ev.maintainer_cores is None:
        return Advice("unknown", "", f"{varies}, but {' and '.join(missing)} "
                      f"{'is' if len(missing) == 1 else 'are'} not known"
                      f"{' (' + measured + ')' if measured else ''}: the amortized LRU helps only "
                      "where the maintainer is busy and hurts beside a neighbour, so it is not "
                      f"recommended blind; {ev.how_to_know}")
    if ev.maintainer_cores >= MAINTAINER_BUSY_CORES:
        return Advice("amortized LRU", f"-o {LRU_KNOB}={LRU_BUDGET_DEFAULT_US}",
                      f"{varies} and the maintainer was busy ({measured})",
                      suggests="the LRU maintainer thread competes with the workers for their "
                      "core: its wake-ups delay theirs",
                      measure=lru_options(ev.spare_cpus))
    return Advice("none", "", f"{varies} but the maintainer was not busy ({measured}): "
                  "interference comes from elsewhere")


def advice_lines(a: Mapping[str, Any], indent: str, label: str) -> list[str]:
    """An Advice (as its dict) as text, the profile's and the fleet's:
    `label` heads the first line ("recommendation", "knob")."""
    if a["knob"] == "none":
        return [f"{indent}{label}: no knob indicated ({a['reason']})"]
    if a["knob"] == "unknown":
        return [f"{indent}{label}: unknown ({a['reason']})"]
    measure = a.get("measure") or ()
    if not measure:
        return [f"{indent}{label}: {a['knob']}: {a['option']}", f"{indent}  because {a['reason']}"]
    lines = [f"{indent}{label}: measure before choosing: the stages show a cause, not which "
             "remedy wins",
             f"{indent}  evidence: {a['reason']}",
             f"{indent}  suggests: {a['suggests']}",
             f"{indent}  options to measure side by side, stock's first (then `stagevar advise "
             "RESULTS` names the one to run):"]
    for o in measure:
        lines.append(f"{indent}    {o['name']:<32} {o['how']}")
    return lines

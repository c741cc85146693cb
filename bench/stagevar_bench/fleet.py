# SPDX-License-Identifier: BSD-3-Clause
"""profile --prometheus: the method's first two steps, measure and rank,
for servers the runner did not start, read from the Prometheus that
scrapes them (docs/monitoring.md).

For each instance and stage, the bucket counts of the window are the
difference of `stagevar_stage_seconds_bucket` at its end and at its start
(a series born inside the window counts from zero, so a window longer than
a server's life covers all of it; a series that reset inside the window
takes Prometheus's increase()). The variance is that of the bucket
midpoints; its bound against libstagevar's Welford variance is in
docs/monitoring.md. Stages are ranked by variance share per instance and
pooled over the instances of each server kind, with the knob of
stages.recommend().

The scheduling evidence that rule weighs for a memcached (its LRU
maintainer thread's CPU, other tasks' CPU on its allowed CPUs, its
workers' run-queue wait) comes from the exporter's per-thread and
other-tasks counters, which it serves only for a memcached on its own
host: each counter's growth over the window, with resets, divided by the
time its samples span there. An instance without them is "unknown".
"""
from __future__ import annotations

import json
import math
import re
import statistics
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from stagevar_bench.stages import (OUTSIDE_BUSY_CORES, Advice, Evidence, RankedStage, advice_lines,
                                   rank_stages, recommend)

STAGE = "stagevar_stage_seconds"
BATCH = "stagevar_batch_size"
THREAD_CPU = "stagevar_memcached_thread_cpu_seconds_total"
THREAD_WAIT = "stagevar_memcached_thread_runqueue_seconds_total"
OTHER_CPU = "stagevar_memcached_other_tasks_cpu_seconds_total"
MAINTAINER, WORKER = "mc-lrumaint", "mc-worker"
DEPLOY = ("run `stagevar exporter` on the memcached's own host (as root, or with CAP_SYS_PTRACE), "
          "which then serves its threads' and its CPUs' counters (stagevar_memcached_local_process 1)")
STAND_OUT = 2.0             # an instance's variance this many times the fleet median's


class FleetError(Exception):
    """Bad input or an unreachable Prometheus: one line, exit status 2."""


# ------------------------------------------------------------ input

WINDOW = re.compile(r"^(\d+)(ms|s|m|h|d)$")
UNIT_S = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_window(text: str) -> float:
    """A Prometheus duration ('5m', '90s', '1h') -> seconds."""
    m = WINDOW.match(text)
    if not m or int(m.group(1)) == 0:
        raise FleetError(f"bad --window {text!r}: a Prometheus duration such as 5m, 90s or 1h")
    return int(m.group(1)) * UNIT_S[m.group(2)]


def check_url(url: str) -> str:
    u = urllib.parse.urlparse(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise FleetError(f"bad --prometheus URL {url!r}: expected http://HOST:PORT")
    try:
        u.port
    except ValueError:
        raise FleetError(f"bad --prometheus URL {url!r}: its port is not a number") from None
    return url.rstrip("/")


def matchers(selector: str) -> str:
    """'{job="mc"}' or 'job="mc"' -> 'job="mc"' (what goes in the braces)."""
    s = selector.strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1].strip()
    if "{" in s or "}" in s:
        raise FleetError(f"bad --match {selector!r}: label matchers, e.g. '{{job=\"memcached\"}}'")
    return s


# ------------------------------------------------------------ Prometheus

@dataclass
class Prometheus:
    url: str
    timeout: float = 30.0

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": promql} | ({"time": f"{at:.3f}"} if at is not None else {})
        req = f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                body = json.loads(r.read().decode())
        except urllib.error.HTTPError as e:
            try:
                why = json.loads(e.read().decode()).get("error", e.reason)
            except ValueError:
                why = e.reason
            raise FleetError(f"Prometheus at {self.url} refused {promql!r}: {why}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise FleetError(f"cannot reach Prometheus at {self.url}: {reason}") from None
        if body.get("status") != "success":
            raise FleetError(f"Prometheus at {self.url} refused {promql!r}: {body.get('error')}")
        return list(body["data"]["result"])

    def scalar_time(self) -> float:
        req = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': 'time()'})}"
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                body = json.loads(r.read().decode())
            return float(body["data"]["result"][0])
        except urllib.error.HTTPError as e:
            raise FleetError(f"{self.url} is not a Prometheus API ({e.code} {e.reason} "
                             "for /api/v1/query)") from None
        except (urllib.error.URLError, OSError) as e:
            raise FleetError(f"cannot reach Prometheus at {self.url}: {getattr(e, 'reason', e)}") from None
        except (ValueError, KeyError, IndexError, TypeError):
            raise FleetError(f"{self.url} is not a Prometheus API (no time() result)") from None


Key = tuple[tuple[str, str], ...]


def key_of(metric: Mapping[str, str]) -> Key:
    return tuple(sorted((k, v) for k, v in metric.items() if k != "__name__"))


def window_delta(prom: Prometheus, series: str, end: float, window_s: float) -> dict[Key, float]:
    """Each counter's growth over (end - window, end]."""
    rng = f"{window_s:g}s"
    last = {key_of(r["metric"]): float(r["value"][1]) for r in prom.query(series, end)}
    first = {key_of(r["metric"]): float(r["value"][1]) for r in prom.query(series, end - window_s)}
    reset = {key_of(r["metric"]) for r in prom.query(f"resets({series}[{rng}]) > 0", end)}
    grown = {key_of(r["metric"]): float(r["value"][1])
             for r in prom.query(f"increase({series}[{rng}])", end)} if reset else {}
    return {k: (grown.get(k, v) if k in reset else v - first.get(k, 0.0)) for k, v in last.items()}


def growth_and_span(values: list[list[Any]]) -> tuple[float, float] | None:
    """A counter's growth over its samples [[t, "v"], ...] (a drop is a
    reset: the count starts again from 0) and the seconds they span; None
    with fewer than two samples."""
    if len(values) < 2:
        return None
    grown, last = 0.0, float(values[0][1])
    for _, v in values[1:]:
        x = float(v)
        grown += x - last if x >= last else x
        last = x
    return grown, float(values[-1][0]) - float(values[0][0])


def window_rates(prom: Prometheus, series: str, end: float, window_s: float,
                 label: str | None = None) -> dict[tuple[str, str], tuple[float, float]]:
    """{(instance, `label`'s value): (growth, seconds)} of a counter's
    samples in (end - window, end]."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for r in prom.query(f"{series}[{window_s:g}s]", end):
        gs = growth_and_span(r.get("values", []))
        if gs is not None and gs[1] > 0:
            m = r["metric"]
            out[(m.get("instance", "?"), m.get(label, "") if label else "")] = gs
    return out


def fleet_evidence(prom: Prometheus, sel: str, end: float, window_s: float) -> dict[str, Evidence]:
    """Each memcached's scheduling evidence over the window, from the
    exporter's counters; an instance without them is not in the answer."""
    braces = "{" + sel + "}"
    cpu = window_rates(prom, THREAD_CPU + braces, end, window_s, "thread")
    wait = window_rates(prom, THREAD_WAIT + braces, end, window_s, "thread")
    other = window_rates(prom, OTHER_CPU + braces, end, window_s)
    out: dict[str, Evidence] = {}
    for inst in sorted({i for i, _ in cpu} | {i for i, _ in other}):
        maint = cpu.get((inst, MAINTAINER))
        has_threads = any(i == inst for i, _ in cpu)
        run, queued = cpu.get((inst, WORKER)), wait.get((inst, WORKER))
        out[inst] = Evidence(
            # threads but no maintainer among them: it does not run (the knob is on)
            maintainer_cores=maint[0] / maint[1] if maint else (0.0 if has_threads else None),
            outside_cores=other[(inst, "")][0] / other[(inst, "")][1] if (inst, "") in other else None,
            worker_wait_share=(queued[0] / (run[0] + queued[0]) if run and queued and run[0] + queued[0] > 0
                               else None),
            how_to_know=DEPLOY)
    return out


def pooled_evidence(members: list[Evidence]) -> Evidence:
    """The evidence for one knob on every instance at once: the knob fits
    the fleet only if it fits each instance, so the most other tasks' CPU
    and workers' wait and the least busy maintainer, unknown if any
    instance's is; but one instance with a neighbour declines it for all,
    whatever the others' evidence."""
    def worst(values: list[float | None], pick: Any) -> float | None:
        return None if not values or any(v is None for v in values) else pick(values)
    known = [e.outside_cores for e in members if e.outside_cores is not None]
    neighbour = max(known) if known and max(known) >= OUTSIDE_BUSY_CORES else None
    return Evidence(maintainer_cores=worst([e.maintainer_cores for e in members], min),
                    outside_cores=neighbour if neighbour is not None
                    else worst([e.outside_cores for e in members], max),
                    worker_wait_share=worst([e.worker_wait_share for e in members], max),
                    how_to_know=DEPLOY)


# ------------------------------------------------------------ statistics

@dataclass
class Hist:
    """One stage's bucket counts over the window: (upper edge, count)."""
    buckets: dict[float, float] = field(default_factory=dict)     # le -> cumulative count
    sum: float = 0.0

    def add(self, other: "Hist") -> None:
        for le, c in other.buckets.items():
            self.buckets[le] = self.buckets.get(le, 0.0) + c
        self.sum += other.sum

    def counts(self) -> list[tuple[float, float, float]]:
        """(low, high, count) per bucket; the +Inf bucket as (last edge, inf)."""
        out, low, below = [], 0.0, 0.0
        for le in sorted(self.buckets):
            cum = max(self.buckets[le], below)
            out.append((low, le, cum - below))
            low, below = le, cum
        return out

    @property
    def count(self) -> float:
        return self.buckets.get(math.inf, max(self.buckets.values(), default=0.0))


def midpoint(low: float, high: float, integer: bool) -> float:
    if math.isinf(high):
        return low                      # overflow: its values are above the last edge
    if integer:
        return (math.floor(low) + 1 + high) / 2   # (low, high] of whole numbers
    return (low + high) / 2


def moments(h: Hist, integer: bool = False) -> dict[str, float]:
    """count, mean, stddev, cv2, p99, max (in the buckets' unit) from the
    midpoints; the mean from the exact sum when there is one."""
    rows = [(midpoint(lo, hi, integer), c, hi) for lo, hi, c in h.counts() if c > 0]
    n = sum(c for _, c, _ in rows)
    if n <= 0:
        return {"count": 0.0}
    mid_mean = sum(m * c for m, c, _ in rows) / n
    var = sum(c * (m - mid_mean) ** 2 for m, c, _ in rows) / n
    mean = h.sum / n if h.sum > 0 else mid_mean
    seen, p99 = 0.0, rows[-1][0]
    for m, c, _ in rows:
        seen += c
        if seen >= 0.99 * n:
            p99 = m
            break
    top = rows[-1]
    return {"count": n, "mean": mean, "stddev": math.sqrt(var), "cv2": var / mean ** 2 if mean else 0.0,
            "p99": p99, "max": top[2] if math.isfinite(top[2]) else top[0]}


def server_kind(stages: Mapping[str, Any]) -> str:
    return "httpd" if "listener_to_worker" in stages else "memcached"


def stage_table(hists: Mapping[str, Hist]) -> dict[str, dict[str, float]]:
    """{stage: moments in ns}; batch_size in requests."""
    out: dict[str, dict[str, float]] = {}
    for stage, h in hists.items():
        if stage == "batch_size":
            out[stage] = moments(h, integer=True)
            continue
        m = moments(h)
        out[stage] = {k: (v * 1e9 if k in ("mean", "stddev", "p99", "max") else v) for k, v in m.items()}
    return out


# ------------------------------------------------------------ the profile

@dataclass
class Instance:
    name: str
    kind: str
    stages: dict[str, dict[str, float]]
    ranked: list[RankedStage]
    advice: Advice
    evidence: Evidence = field(default_factory=lambda: Evidence(how_to_know=DEPLOY))


def collect(prom: Prometheus, sel: str, window_s: float) -> tuple[dict[str, dict[str, Hist]], float]:
    """{instance: {stage: Hist}} over the window, and its end."""
    end = prom.scalar_time()
    braces = "{" + sel + "}"
    found = prom.query(f"count by (instance) ({STAGE}_bucket{braces})", end)
    if not found:
        bare = prom.query(f"stagevar_memcached_stage_histograms{braces} == 0", end)
        why = (f"stagevar_memcached_stage_histograms is 0 for {len(bare)} memcached: they do "
               "not answer `stats stages hist` with their buckets" if bare
               else "is it scraping the exporter or httpd's ?metrics?")
        raise FleetError(f"--match {braces!r} matches no {STAGE}_bucket series in Prometheus at "
                         f"{prom.url} ({why})")
    out: dict[str, dict[str, Hist]] = {}
    for metric, what in ((STAGE, "stage"), (BATCH, None)):
        buckets = window_delta(prom, f"{metric}_bucket{braces}", end, window_s)
        sums = window_delta(prom, f"{metric}_sum{braces}", end, window_s)
        for key, value in buckets.items():
            labels = dict(key)
            inst = labels.get("instance", "?")
            stage = labels.get("stage", "") if what else "batch_size"
            h = out.setdefault(inst, {}).setdefault(stage, Hist())
            le = float(labels.get("le", "inf").replace("+Inf", "inf"))
            h.buckets[le] = h.buckets.get(le, 0.0) + value
        for key, value in sums.items():
            labels = dict(key)
            stage = labels.get("stage", "") if what else "batch_size"
            inst = labels.get("instance", "?")
            if inst in out and stage in out[inst]:
                out[inst][stage].sum += value
    return out, end


def profile_fleet(url: str, selector: str = "", window: str = "5m") -> dict[str, Any]:
    url = check_url(url)
    window_s = parse_window(window)
    sel = matchers(selector)
    prom = Prometheus(url)
    hists, end = collect(prom, sel, window_s)
    evidence = fleet_evidence(prom, sel, end, window_s)
    instances: list[Instance] = []
    pooled: dict[str, dict[str, Hist]] = {}
    for name in sorted(hists):
        table = stage_table(hists[name])
        kind = server_kind(table)
        ranked = rank_stages(table)
        ev = evidence.get(name, Evidence(how_to_know=DEPLOY)) if kind == "memcached" else Evidence()
        instances.append(Instance(name, kind, table, ranked, recommend(kind, ranked, table, ev), ev))
        for stage, h in hists[name].items():
            pooled.setdefault(kind, {}).setdefault(stage, Hist()).add(h)
    fleets = {}
    for kind, hs in sorted(pooled.items()):
        table = stage_table(hs)
        ranked = rank_stages(table)
        members = [i for i in instances if i.kind == kind]
        ev = pooled_evidence([i.evidence for i in members]) if kind == "memcached" else Evidence()
        fleets[kind] = {"instances": [i.name for i in members], "stages": table,
                        "ranked": [asdict(r) for r in ranked], "evidence": asdict(ev),
                        "advice": asdict(recommend(kind, ranked, table, ev)),
                        "stand_out": stand_out(members, ranked)}
    return {"prometheus": url, "match": "{" + sel + "}", "window": window, "end": end,
            "fleets": fleets,
            "instances": [{"name": i.name, "kind": i.kind, "stages": i.stages,
                           "ranked": [asdict(r) for r in i.ranked], "evidence": asdict(i.evidence),
                           "advice": asdict(i.advice)}
                          for i in instances]}


def stand_out(members: list[Instance], fleet_ranked: list[RankedStage]) -> list[dict[str, Any]]:
    """Instances whose top stage is not the fleet's, or whose variance of
    the fleet's top stage is STAND_OUT times the instances' median."""
    if not fleet_ranked or len(members) < 2:
        return []
    top = fleet_ranked[0].name
    var = {i.name: next((r.variance_ns2 for r in i.ranked if r.name == top), 0.0) for i in members}
    median = statistics.median(var.values())
    out = []
    for i in members:
        why = []
        if i.ranked and i.ranked[0].name != top:
            why.append(f"its top stage is {i.ranked[0].name}, not {top}")
        if median > 0 and var[i.name] >= STAND_OUT * median:
            why.append(f"{top} variance {var[i.name] / median:.1f}x the instances' median")
        if why:
            out.append({"instance": i.name, "why": "; ".join(why)})
    return out


# ------------------------------------------------------------ text

def table_lines(ranked: list[dict[str, Any]], indent: str) -> list[str]:
    lines = [f"{indent}{'stage':<20}{'traced':>10}{'mean us':>10}{'stddev us':>12}{'var share':>11}"
             f"{'C2':>8}{'p99 us':>10}"]
    for r in ranked:
        lines.append(f"{indent}{r['name']:<20}{r['count']:>10.0f}{r['mean_ns'] / 1e3:>10.1f}"
                     f"{r['stddev_ns'] / 1e3:>12.1f}{100 * r['share']:>10.0f}%{r['cv2']:>8.2f}"
                     f"{r['p99_ns'] / 1e3:>10.1f}")
    return lines


def text(p: Mapping[str, Any]) -> str:
    lines = [f"fleet profile from {p['prometheus']}, selector {p['match']}, the last {p['window']}:"]
    for kind, f in p["fleets"].items():
        lines.append(f"{kind}: {len(f['instances'])} instance(s), pooled, ranked by variance:")
        lines += table_lines(f["ranked"], "  ")
        lines += advice_lines(f["advice"], "  ", "knob")
        for s in f["stand_out"]:
            lines.append(f"  stands out: {s['instance']}: {s['why']}")
    for i in p["instances"]:
        top = i["ranked"][0] if i["ranked"] else None
        head = (f"{i['name']} ({i['kind']}): top {top['name']}, {100 * top['share']:.0f}% of the variance"
                if top else f"{i['name']} ({i['kind']}): no traced requests in the window")
        lines.append(head)
        lines += table_lines(i["ranked"], "    ")
        measured = Evidence(**i["evidence"]).text() if i.get("evidence") else ""
        if measured:
            lines.append(f"    scheduling over the window: {measured}")
        if top:
            lines += advice_lines(i["advice"], "    ", "knob")
    return "\n".join(lines)


def run(url: str, selector: str, window: str, json_out: Any = None) -> int:
    p = profile_fleet(url, selector, window)
    print(text(p))
    if json_out:
        json_out.write_text(json.dumps(p, indent=1))
    return 0 if any(i["ranked"] for i in p["instances"]) else 1

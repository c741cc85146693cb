# SPDX-License-Identifier: BSD-3-Clause
"""From results (runs) to conclusions: per-run percentiles with
order-statistic CIs, per-cell medians with bootstrap CIs, knob ratios with
bootstrap and exact rank CIs, what the runs could resolve, the workers'
scheduling (the mechanism), quantile regression and the queueing ideal."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from stagevar_bench import power, ranks
from stagevar_bench.queueing import ArrivalProcess, IdealModel
from stagevar_bench.stats import (Histogram, bootstrap_ci, bootstrap_ratio_ci, quantile_regression)

PERCENTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}
QR_QUANTILES = (0.5, 0.95, 0.99)
QR_SAMPLES_PER_RUN = 400
IDEAL_REQUESTS = 100_000
RANKED = ("mean", "p50", "p90", "p99")     # the metrics compared with exact rank tests
TARGET_EFFECT = 0.3                 # the change an experiment should resolve


def run_ok(run: dict[str, Any]) -> bool:
    return not run.get("error") and bool(run.get("loadgen", {}).get("latency_scheduled", {}).get("count"))


def run_summary(run: dict[str, Any], conf: float) -> dict[str, Any]:
    lg = run["loadgen"]
    h = Histogram.from_json(lg["latency_scheduled"])
    pct = {}
    for name, p in PERCENTILES.items():
        est, lo, hi = h.quantile_ci(p, conf)
        pct[name] = {"value": est, "low": lo, "high": hi}
    served = run.get("requests_served") or 0
    counts = lg.get("counts", {})
    return {
        "cell": run["cell"], "rep": run["rep"], "order": run.get("order"),
        "n": h.n, "mean_ns": lg["latency_scheduled"].get("mean"), "min_ns": h.min,
        "percentiles": pct,
        "achieved": lg.get("rates", {}).get("achieved"), "offered": lg.get("rates", {}).get("offered"),
        "errors": counts.get("errors", 0), "lost": counts.get("lost", 0),
        "timeouts": counts.get("timeouts", 0), "late": counts.get("late", 0),
        "cpu_per_request_ns": run.get("server_cpu_s", 0) * 1e9 / served if served else None,
        "loadgen_busy": (lg.get("cpu", {}) or {}).get("busy_fraction"),
        "schedule_error_p50_ns": (lg.get("schedule_error") or {}).get("p50"),
        "loadavg": [(run.get("loadavg_before") or [None])[0], (run.get("loadavg_after") or [None])[0]],
        "worker_sched": run.get("worker_sched"),
        "outside_cores": run.get("outside_cores"),
        "host_steal_s": run.get("host_steal_s"),
        "lru_amortized": run.get("lru_amortized"),
        "moves_per_eviction": moves_per_eviction(run),
        "capacity": capacity(run),
        "hit_ratio": hit_ratio(run),
    }


def hit_ratio(run: dict[str, Any]) -> float | None:
    """The share of the keys a run's gets asked for that came back: from
    loadgen's counts, which cover the measured window alone, or, in a
    results file older than those, memcached's get_hits / (get_hits +
    get_misses) over the server's life (warm-up included). None without
    gets (httpd, a set-only load)."""
    counts = (run.get("loadgen") or {}).get("counts") or {}
    if "hits" in counts and "get_keys" in counts:
        return counts["hits"] / counts["get_keys"] if counts["get_keys"] else None
    st = run.get("server_stats") or {}
    gets = st.get("get_hits", 0) + st.get("get_misses", 0)
    return st["get_hits"] / gets if gets else None


def moves_per_eviction(run: dict[str, Any]) -> float | None:
    """memcached's moves to COLD an eviction over the server's life (the
    preload's too): about 1 where new items go through HOT, 0 where they
    go straight into COLD (the flat LRU, which does not count moves, or
    hot_lru_pct=0). None where the run evicted nothing."""
    st = run.get("server_stats") or {}
    return st.get("moves_to_cold", 0) / st["evictions"] if st.get("evictions") else None


def capacity(run: dict[str, Any]) -> float | None:
    """Requests served per CPU-second of memcached's worker threads: what a
    knob like batching changes at the root, free of queueing."""
    worker_s = (run.get("server_thread_cpu_s") or {}).get("mc-worker")
    served = run.get("requests_served")
    return served / worker_s if worker_s and served else None


def metric_values(runs: list[dict[str, Any]], metric: str) -> list[float]:
    """Each run's mean or percentile, or the server's CPU per request
    ("cpu"), ns."""
    if metric == "mean":
        return [s["mean_ns"] for s in runs]
    if metric == "cpu":
        return [s["cpu_per_request_ns"] or 0.0 for s in runs]
    return [s["percentiles"][metric]["value"] for s in runs]


def rank_entry(knob_runs: list[dict[str, Any]], base_runs: list[dict[str, Any]], metric: str,
               conf: float) -> dict[str, Any]:
    """The exact rank comparison of one metric, knob against baseline, and
    what these runs could resolve."""
    a, b = metric_values(base_runs, metric), metric_values(knob_runs, metric)
    if min(a + b, default=0) <= 0:
        return {"error": "a run without latency"}
    r = ranks.compare(a, b, conf)
    res = power.resolution(a, b, TARGET_EFFECT, conf)
    return {"ratio": r.ratio, "low": r.ci[0], "high": r.ci[1], "conf": r.conf, "p": r.p_value,
            "sd_log": res.sd_log, "mde": res.mde, "runs_needed": res.needed,
            "target_effect": TARGET_EFFECT, "runs": [r.n_b, r.n_a]}


def sched_summary(runs: list[dict[str, Any]]) -> dict[str, float] | None:
    """The workers' scheduling over a cell's runs, medians: the share of
    runnable time spent waiting for a CPU, and switches per second."""
    seen = [s["worker_sched"] for s in runs if s.get("worker_sched")]
    if not seen:
        return None
    return {"wait_share": float(np.median([w["wait_share"] for w in seen])),
            "wait_ns": float(np.median([w["wait_ns"] for w in seen])),
            "involuntary": float(np.median([w["involuntary"] for w in seen])),
            "voluntary": float(np.median([w["voluntary"] for w in seen]))}


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    """The median of a per-run figure over the runs that have it."""
    seen = [s[key] for s in runs if s.get(key) is not None]
    return float(np.median(seen)) if seen else None


def cell_key(cell: dict[str, Any]) -> tuple[str, float, str]:
    return (str(cell["knob"]), float(cell["load"]), str(cell["arrival"]))


def analyze_experiment(exp: dict[str, Any], conf: float = 0.95, reps: int = 5000,
                       with_qr: bool = True, with_ideal: bool = True) -> dict[str, Any]:
    design = exp["design"]
    levels = [l["name"] for l in design["levels"]]
    params = {l["name"]: l.get("params", {}) for l in design["levels"]}
    baseline = levels[0]
    ok_runs = [r for r in exp["runs"] if run_ok(r)]
    summaries = [run_summary(r, conf) for r in ok_runs]
    by_cell: dict[tuple[str, float, str], list[dict[str, Any]]] = {}
    for s in summaries:
        by_cell.setdefault(cell_key(s["cell"]), []).append(s)
    raw_by_cell: dict[tuple[str, float, str], list[dict[str, Any]]] = {}
    for r in ok_runs:
        raw_by_cell.setdefault(cell_key(r["cell"]), []).append(r)

    cells = []
    for (knob, load, arrival), runs in sorted(by_cell.items(), key=lambda kv: (levels.index(kv[0][0]), kv[0][1], kv[0][2])):
        cell: dict[str, Any] = {"knob": knob, "load": load, "arrival": arrival, "runs": len(runs),
                                "params": params.get(knob, {}), "percentiles": {}}
        for name in PERCENTILES:
            vals = [s["percentiles"][name]["value"] for s in runs]
            cell["percentiles"][name] = bootstrap_ci(vals, conf=conf, reps=reps).as_dict()
        cell["mean_ns"] = bootstrap_ci([s["mean_ns"] for s in runs], conf=conf, reps=reps).as_dict()
        cell["achieved"] = float(np.median([s["achieved"] or 0 for s in runs]))
        cell["errors"] = int(sum(s["errors"] + s["lost"] + s["timeouts"] for s in runs))
        cell["requests"] = int(sum(s["n"] + s["errors"] + s["lost"] + s["timeouts"] for s in runs))
        cell["loss"] = cell["errors"] / cell["requests"] if cell["requests"] else 0.0
        cpr = [s["cpu_per_request_ns"] for s in runs if s["cpu_per_request_ns"]]
        cell["cpu_per_request_ns"] = float(np.median(cpr)) if cpr else None
        cell["loadavg_max"] = max((x for s in runs for x in s["loadavg"] if x is not None), default=None)
        cell["worker_sched"] = sched_summary(runs)
        cell["outside_cores"] = median_of(runs, "outside_cores")
        cell["host_steal_s"] = median_of(runs, "host_steal_s")
        caps = [s["capacity"] for s in runs if s.get("capacity")]
        cell["capacity"] = float(np.median(caps)) if caps else None
        cell["hit_ratio"] = median_of(runs, "hit_ratio")
        if with_ideal and cpr:
            cell["ideal"] = ideal_for_cell(design, raw_by_cell[(knob, load, arrival)], runs)
            cell["measured_over_ideal"] = {
                name: (cell["percentiles"][name]["value"] / v if v > 0 else None)
                for name, v in cell["ideal"]["percentiles"].items()}
        cells.append(cell)

    ratios = []
    for (knob, load, arrival), runs in by_cell.items():
        if knob == baseline or (baseline, load, arrival) not in by_cell:
            continue
        base = by_cell[(baseline, load, arrival)]
        entry: dict[str, Any] = {"knob": knob, "baseline": baseline, "load": load, "arrival": arrival,
                                 "params": params.get(knob, {}), "percentiles": {}}
        for name in PERCENTILES:
            entry["percentiles"][name] = bootstrap_ratio_ci(
                [s["percentiles"][name]["value"] for s in runs],
                [s["percentiles"][name]["value"] for s in base], conf=conf, reps=reps).as_dict()
        entry["mean"] = bootstrap_ratio_ci([s["mean_ns"] for s in runs], [s["mean_ns"] for s in base],
                                           conf=conf, reps=reps).as_dict()
        entry["ranks"] = {m: rank_entry(runs, base, m, conf) for m in RANKED}
        entry["ranks"]["cpu"] = rank_entry(runs, base, "cpu", conf)
        entry["worker_sched"] = [sched_summary(base), sched_summary(runs)]
        caps = [[s["capacity"] for s in group if s.get("capacity")] for group in (runs, base)]
        if all(caps):
            entry["capacity"] = bootstrap_ratio_ci(caps[0], caps[1], conf=conf, reps=reps).as_dict()
            entry["capacity_per_s"] = [float(np.median(caps[1])), float(np.median(caps[0]))]
        ratios.append(entry)
    ratios.sort(key=lambda e: (levels.index(e["knob"]), e["load"], e["arrival"]))

    out: dict[str, Any] = {
        "name": design["name"], "server": design["server"], "description": design.get("description", ""),
        "load_unit": design.get("load_unit", "req/s"), "sweep": design.get("sweep"),
        "knob_param": design.get("knob_param"),
        "baseline": baseline, "levels": levels, "params": params, "conf": conf,
        "variants": {l["name"]: l.get("variant", "fork") for l in design["levels"]},
        "runs_total": len(exp["runs"]), "runs_failed": len(exp["runs"]) - len(ok_runs),
        "failures": sorted({r.get("error") or "no latency recorded" for r in exp["runs"] if not run_ok(r)}),
        "runs": summaries, "cells": cells, "ratios": ratios, "qr": [],
    }
    if design.get("sweep") and design.get("knob_param"):
        out["knob_by_sweep"] = knob_by_sweep(summaries, params, design["sweep"], design["knob_param"],
                                             conf, reps)
    if with_qr and ok_runs:
        out["qr"] = qr_for(ok_runs, baseline, design)
    return out


def knob_by_sweep(summaries: list[dict[str, Any]], params: dict[str, dict[str, float]], sweep: str,
                  knob: str, conf: float, reps: int) -> list[dict[str, Any]]:
    """At each value of the swept parameter, the knob on / off ratio (the
    level parameter `knob`: 0 is off) of the runs' means and p99s."""
    groups: dict[tuple[float, bool], list[dict[str, Any]]] = {}
    for s in summaries:
        prm = params.get(s["cell"]["knob"], {})
        if sweep in prm and knob in prm:
            groups.setdefault((float(prm[sweep]), bool(prm[knob])), []).append(s)
    rows = []
    for value in sorted({v for v, _ in groups}):
        on, off = groups.get((value, True), []), groups.get((value, False), [])
        if not on or not off:
            continue
        rows.append({sweep: value, "runs": [len(on), len(off)],
                     "mean": bootstrap_ratio_ci([s["mean_ns"] for s in on], [s["mean_ns"] for s in off],
                                                conf=conf, reps=reps).as_dict(),
                     "p99": bootstrap_ratio_ci([s["percentiles"]["p99"]["value"] for s in on],
                                               [s["percentiles"]["p99"]["value"] for s in off],
                                               conf=conf, reps=reps).as_dict()})
    return rows


def knob_helps_from(rows: list[dict[str, Any]], sweep: str, metric: str = "mean",
                    bound: str = "high") -> float | None:
    """The smallest swept value from which on the knob's ratio has its
    whole CI (bound "high"; "value": its estimate) below 1, at that value
    and every larger one; None if not even at the largest."""
    helps_from = None
    for row in sorted(rows, key=lambda r: r[sweep], reverse=True):
        if not row[metric][bound] < 1:
            break
        helps_from = row[sweep]
    return helps_from


def qr_for(runs: list[dict[str, Any]], baseline: str, design: dict[str, Any]) -> list[dict[str, Any]]:
    rows: dict[str, list[Any]] = {"latency_us": [], "knob": [], "load": [], "arrival": []}
    for r in runs:
        sample = Histogram.from_json(r["loadgen"]["latency_scheduled"]).representative_sample(QR_SAMPLES_PER_RUN)
        rows["latency_us"] += list(sample / 1e3)
        rows["knob"] += [r["cell"]["knob"]] * sample.size
        rows["load"] += [f"{float(r['cell']['load']):g}"] * sample.size
        rows["arrival"] += [r["cell"]["arrival"]] * sample.size
    refs = {"knob": baseline, "load": f"{min(float(x) for x in design['loads']):g}",
            "arrival": design["arrivals"][0]}
    try:
        res = quantile_regression(rows, "latency_us", ["knob", "load", "arrival"], QR_QUANTILES,
                                  interactions=True, references=refs)
    except (ValueError, np.linalg.LinAlgError) as e:
        return [{"error": str(e)}]
    return [r.as_dict() for r in res]


def ideal_for_cell(design: dict[str, Any], raw_runs: list[dict[str, Any]],
                   summaries: list[dict[str, Any]]) -> dict[str, Any]:
    cpr = float(np.median([s["cpu_per_request_ns"] for s in summaries if s["cpu_per_request_ns"]]))
    floor = float(np.median([s["min_ns"] for s in summaries]))
    meta = raw_runs[0]["loadgen"]["meta"]
    process = ArrivalProcess.from_loadgen_meta(meta)
    servers = int(design.get("ideal_servers") or 1)
    model = IdealModel(service_ns=cpr, servers=servers, shared=bool(design.get("ideal_shared")),
                       floor_ns=floor)
    util = process.rate * cpr / servers
    q = model.quantiles(process, list(PERCENTILES.values()), n=IDEAL_REQUESTS)
    return {"model": "M/D/c shared queue" if design.get("ideal_shared") else "D service, one queue per worker",
            "arrival": process.kind, "servers": servers, "service_ns": cpr, "floor_ns": floor,
            "utilisation": util,
            "percentiles": {name: q[p] for name, p in PERCENTILES.items()}}


def analyze(results: dict[str, Any], conf: float = 0.95, reps: int = 5000,
            with_qr: bool = True, with_ideal: bool = True) -> dict[str, Any]:
    return {"format": "stagevar-analysis/1", "conf": conf,
            "experiments": [analyze_experiment(e, conf, reps, with_qr, with_ideal)
                            for e in results.get("experiments", [])],
            "profiles": results.get("profiles", []), "notes": results.get("notes", []),
            "meta": results.get("meta", {})}


# --------------------------------------------------------------- printing

def us(ns: float | None) -> str:
    if ns is None or (isinstance(ns, float) and not math.isfinite(ns)):
        return "inf" if ns is not None else "-"
    return f"{ns / 1e3:.1f}"


def fmt_ci(e: dict[str, float], scale: float = 1e3, digits: int = 1) -> str:
    f = f"{{:.{digits}f}}"
    return f"{f.format(e['value'] / scale)} [{f.format(e['low'] / scale)}, {f.format(e['high'] / scale)}]"


def fmt_rank(e: dict[str, float]) -> str:
    """An exact rank comparison as 'x1.05 [0.98, 1.12]'."""
    return f"x{e['ratio']:.3f} [{e['low']:.3f}, {e['high']:.3f}]"


def text_tables(analysis: dict[str, Any]) -> str:
    lines: list[str] = []
    for exp in analysis["experiments"]:
        conf = int(round(exp["conf"] * 100))
        w = max([14] + [len(c["knob"]) + 1 for c in exp["cells"]])   # the knob column fits every name
        lines.append(f"== {exp['name']} ({exp['server']}; {exp['runs_total']} runs, "
                     f"{exp['runs_failed']} failed) ==")
        if exp["description"]:
            lines.append(exp["description"])
        lines.append(f"latency from the schedule, us: median over runs [{conf}% bootstrap CI]")
        lines.append(f"{'knob':<{w}}{'load':>10} {'arr':<5}{'runs':>5}  {'mean':<26}{'p50':<26}{'p99':<26}"
                     f"{'p99.9':<26}lost")
        for c in exp["cells"]:
            p = c["percentiles"]
            lines.append(f"{c['knob']:<{w}}{c['load']:>10g} {c['arrival']:<5}{c['runs']:>5}  "
                         f"{fmt_ci(c['mean_ns']):<25} {fmt_ci(p['p50']):<25} {fmt_ci(p['p99']):<25} "
                         f"{fmt_ci(p['p999']):<25} {c['errors']} ({c['loss']:.2%})")
        if exp["ratios"]:
            lines.append(f"ratio knob / {exp['baseline']} (median over runs) [{conf}% bootstrap CI]; < 1 is better")
            for r in exp["ratios"]:
                p = r["percentiles"]
                lines.append(f"{r['knob']:<{w}}{r['load']:>10g} {r['arrival']:<5}  p50 "
                             f"{fmt_ci(p['p50'], 1, 3)}  p99 {fmt_ci(p['p99'], 1, 3)}  mean {fmt_ci(r['mean'], 1, 3)}")
            lines.append(f"exact rank ratios knob / {exp['baseline']} (Hodges-Lehmann) [{conf}% CI]; "
                         "cpu: the server's CPU time per request")
            for r in exp["ratios"]:
                shown = [f"{m} {fmt_rank(r['ranks'][m])}" for m in ("p99", "mean", "cpu")
                         if "error" not in r["ranks"].get(m, {"error": None})]
                lines.append(f"{r['knob']:<{w}}{r['load']:>10g} {r['arrival']:<5}  " + "  ".join(shown))
        mech = [c for c in exp["cells"] if c.get("worker_sched") or c.get("outside_cores") is not None]
        if mech:
            lines.append("the mechanism: the workers' wait for their CPU (share of runnable time) and the "
                         "cores other tasks took of the server's CPUs")
            for c in mech:
                wait = (c.get("worker_sched") or {}).get("wait_share")
                out = c.get("outside_cores")
                lines.append(f"{c['knob']:<{w}}{c['load']:>10g} {c['arrival']:<5}  workers waited "
                             + (f"{wait:.1%}" if wait is not None else "-") + "  others took "
                             + (f"{out:.2f} cores" if out is not None else "-"))
        ideal = [c for c in exp["cells"] if c.get("ideal")]
        if ideal:
            lines.append("queueing ideal (deterministic service = server CPU per request): measured / ideal")
            for c in ideal:
                m = c["measured_over_ideal"]
                lines.append(f"{c['knob']:<{w}}{c['load']:>10g} {c['arrival']:<5} rho {c['ideal']['utilisation']:.2f}"
                             f"  p50 {m['p50']:.2f}  p99 {m['p99']:.2f}  p99.9 {m['p999']:.2f}")
        for q in exp["qr"]:
            if "error" in q:
                lines.append(f"quantile regression failed: {q['error']}")
                continue
            lines.append(f"quantile regression q={q['quantile']}: {q['formula']} "
                         f"(pseudo-R2 {q['pseudo_r2']:.3f}, n {q['n']})")
            for t in q["terms"]:
                lines.append(f"    {t['name']:<40} {t['effect']:>12.1f} us  p={t['p_value']:.3g}")
        lines.append("")
    return "\n".join(lines)

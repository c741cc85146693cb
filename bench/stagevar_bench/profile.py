# SPDX-License-Identifier: BSD-3-Clause
"""profile: run the fork with stage tracing under load, rank the stages by
variance, say what they suggest (for the LRU: the options to measure) and
predict with M/G/1 what calming the top stage would buy."""
from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import asdict, replace
from typing import Any

from stagevar_bench import machine
from stagevar_bench.experiment import Design, Level, run_one, target_for
from stagevar_bench.lru_options import spare_core
from stagevar_bench.stages import (Advice, Evidence, Prediction, RankedStage, advice_lines,
                                   pk_prediction, rank_stages, recommend)
from stagevar_bench.thread_tuning import cpu_text


def worker_count(design: Design, level: Level) -> int:
    """memcached: its worker threads (-t, default 4), each a queue of its
    own; httpd: the CPUs it may run on (its threads share them)."""
    if design.server == "memcached":
        args = [*design.server_args, *level.server_args]
        for i, a in enumerate(args):
            if a == "-t" and i + 1 < len(args):
                return int(args[i + 1])
            if a.startswith("--threads="):
                return int(a.split("=", 1)[1])
        return 4
    cpus = level.server_cpus or design.server_cpus
    return len(machine.parse_cpu_list(cpus)) if cpus else (os.cpu_count() or 1)


def profile(design: Design, level: Level, rates: list[float], arrival: str = "exp",
            seed: int = 1) -> dict[str, Any]:
    """One traced run per rate (ascending); the analysis is of the highest."""
    design = replace(design, stage_trace=True, runs=max(design.runs, 2), levels=[level])
    design.validate()
    if level.variant != "fork":
        raise ValueError("profile needs the fork (stage tracing); stock has no stage statistics")
    runs = []
    with ExitStack() as stack:
        target = target_for(design, stack)
        for i, rate in enumerate(sorted(rates)):
            runs.append(run_one(design, level, rate, arrival, 0, seed + i, target))
    out: dict[str, Any] = {"server": design.server, "level": asdict(level), "arrival": arrival,
                           "design": asdict(design), "runs": runs}
    good = [r for r in runs if not r.get("error") and r.get("stages")]
    if not good:
        out["error"] = "; ".join(sorted({str(r.get("error") or "no stage statistics") for r in runs}))
        return out
    top_run = good[-1]
    ranked = rank_stages(top_run["stages"])
    low = rank_stages(good[0]["stages"]) if len(good) > 1 else None
    evidence = local_evidence(design, top_run)
    advice = recommend(design.server, ranked, top_run["stages"], evidence, low)
    servers = worker_count(design, level)
    rate = design.request_rate(float(top_run["cell"]["load"]))
    served = top_run.get("requests_served") or 0
    cpu_per_request = top_run.get("server_cpu_s", 0) * 1e9 / served if served else None
    pred = pk_prediction(ranked, rate, servers, cpu_per_request)
    out.update({"rate": rate, "servers": servers, "maintainer_cores": evidence.maintainer_cores,
                "outside_cores": evidence.outside_cores, "worker_wait_share": evidence.worker_wait_share,
                "ranked": [asdict(r) for r in ranked], "advice": asdict(advice),
                "prediction": asdict(pred) if pred else None, "cpu_per_request_ns": cpu_per_request,
                "measured_mean_ns": top_run["loadgen"]["latency_scheduled"].get("mean"),
                "server_total_mean_ns": top_run["stages"].get("server_total", {}).get("mean"),
                "stages": top_run["stages"]})
    return out


def local_evidence(design: Design, run: dict[str, Any]) -> Evidence:
    """The advisor's evidence from a run of ours: the mc-lrumaint thread's
    CPU over the run (0 when there is none: the knob is on), the other
    tasks' CPU on the server's CPUs (known
    when the design pins the server), the workers' run-queue share and the
    CPUs outside a pinned server's, where its helper threads could go."""
    if design.server != "memcached":
        return Evidence()
    wall = run["loadgen"]["meta"].get("wall_s") or 1.0
    return Evidence(maintainer_cores=run.get("server_thread_cpu_s", {}).get("mc-lrumaint", 0.0) / wall,
                    outside_cores=run.get("outside_cores"),
                    worker_wait_share=(run.get("worker_sched") or {}).get("wait_share"),
                    spare_cpus=spare_cpus(design.levels[0].server_cpus or design.server_cpus,
                                          design.client_cpus),
                    how_to_know="pin the server (--server-cpus) so that the profile can measure the "
                    "other tasks on its cores")


def spare_cpus(server_cpus: str | None, client_cpus: str | None) -> str | None:
    """The CPUs outside a pinned server's and loadgen's, as a list ('2,3'):
    where the server's helper threads could go (the LRU option set's
    spare_core). None when the server is not pinned or none is left."""
    return cpu_text(spare_core(server_cpus, client_cpus)) or None


def text(p: dict[str, Any]) -> str:
    if p.get("error"):
        return f"profile failed: {p['error']}"
    lines = [f"stages of {p['server']} ({p['level']['name']}) at {p['rate']:g} req/s, "
             f"{p['arrival']} arrivals, ranked by variance:",
             f"  {'stage':<20}{'mean us':>10}{'stddev us':>12}{'var share':>11}{'C2':>10}{'p99 us':>10}"]
    for r in p["ranked"]:
        lines.append(f"  {r['name']:<20}{r['mean_ns'] / 1e3:>10.1f}{r['stddev_ns'] / 1e3:>12.1f}"
                     f"{100 * r['share']:>10.0f}%{r['cv2']:>10.2f}{r['p99_ns'] / 1e3:>10.1f}")
    b = p["stages"].get("batch_size")
    if b:
        lines.append(f"  requests per read (batch size): mean {b.get('mean', 0):.2f}, C2 {b.get('cv2', 0):.2f}, "
                     f"p99 {b.get('p99', 0):g}, max {b.get('max', 0):g}")
    if p.get("maintainer_cores") is not None:
        lines.append(f"  LRU maintainer thread: {p['maintainer_cores']:.3f} cores")
    if p.get("worker_wait_share") is not None:
        lines.append(f"  workers waited for their CPU {p['worker_wait_share']:.1%} of their runnable time"
                     + (f"; other tasks took {p['outside_cores']:.2f} cores of the server's CPUs"
                        if p.get("outside_cores") is not None else ""))
    lines += advice_lines(p["advice"], "", "recommendation")
    pr = p.get("prediction")
    if pr:
        lines.append(
            f"M/G/1 (Pollaczek-Khinchine), per worker ({p['servers']} workers): lambda "
            f"{pr['rate_per_server'] * 1e9:.0f}/s, E[S] {pr['mean_service_ns'] / 1e3:.1f} us (server CPU per "
            f"request), C2 {pr['cs2']:.2f} (of the stages), "
            f"rho {pr['utilisation']:.2f} -> mean latency {fmt_us(pr['mean_latency_ns'])} us "
            f"(measured: server_total mean {fmt_us(p.get('server_total_mean_ns'))} us, "
            f"client mean {fmt_us(p.get('measured_mean_ns'))} us)")
        gain = pr["gain"]
        lines.append(f"  if {pr['halved_stage']}'s variance were halved: C2 {pr['halved_cs2']:.2f} -> mean "
                     f"{fmt_us(pr['halved_mean_latency_ns'])} us"
                     + (f" ({100 * gain:.0f}% lower)" if gain == gain else " (queue unstable either way)"))
        lines.append("  (C2 from the component stages taken as independent; they include the delays "
                     "inside the server, so this is the model's view of the variability)")
    return "\n".join(lines)


def fmt_us(ns: float | None) -> str:
    if ns is None:
        return "-"
    if ns == float("inf"):
        return "inf (rho >= 1)"
    return f"{ns / 1e3:.1f}"


__all__ = ["profile", "text", "Advice", "Prediction", "RankedStage"]

# SPDX-License-Identifier: BSD-3-Clause
"""The report: one list of blocks (headings, paragraphs, tables, images,
preformatted text) rendered both as Markdown and as a stand-alone HTML
page, with PNG plots next to them."""
from __future__ import annotations

import datetime
import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from stagevar_bench import plots
from stagevar_bench.analyze import analyze, fmt_ci, knob_helps_from
from stagevar_bench.machine import cpu_idle_text
from stagevar_bench.profile import text as profile_text


@dataclass
class H:
    level: int
    text: str


@dataclass
class P:
    text: str


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass
class Img:
    path: str           # relative to the report
    caption: str


@dataclass
class Pre:
    text: str


Block = Union[H, P, Table, Img, Pre]


def to_markdown(blocks: list[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, H):
            out.append("#" * b.level + " " + b.text)
        elif isinstance(b, P):
            out.append(b.text)
        elif isinstance(b, Table):
            out.append("| " + " | ".join(b.headers) + " |")
            out.append("|" + "---|" * len(b.headers))
            out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in b.rows]
        elif isinstance(b, Img):
            out.append(f"![{b.caption}]({b.path})")
        elif isinstance(b, Pre):
            out.append("```\n" + b.text.rstrip() + "\n```")
        out.append("")
    return "\n".join(out)


CSS = """body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.85em}td,th{border:1px solid #bbb;padding:3px 6px}
th{background:#eee}pre{background:#f6f6f6;padding:0.6em;overflow-x:auto;font-size:0.8em}
img{max-width:100%;border:1px solid #ddd}figure{margin:1em 0}figcaption{font-size:0.85em;color:#555}"""


def to_html(blocks: list[Block], title: str) -> str:
    out = [f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
           f"<style>{CSS}</style></head><body>"]
    for b in blocks:
        if isinstance(b, H):
            out.append(f"<h{b.level}>{html.escape(b.text)}</h{b.level}>")
        elif isinstance(b, P):
            out.append(f"<p>{inline(b.text)}</p>")
        elif isinstance(b, Table):
            out.append("<table><tr>" + "".join(f"<th>{inline(h)}</th>" for h in b.headers) + "</tr>")
            out += ["<tr>" + "".join(f"<td>{inline(c)}</td>" for c in row) + "</tr>" for row in b.rows]
            out.append("</table>")
        elif isinstance(b, Img):
            out.append(f"<figure><img src='{html.escape(b.path)}' alt='{html.escape(b.caption)}'>"
                       f"<figcaption>{html.escape(b.caption)}</figcaption></figure>")
        elif isinstance(b, Pre):
            out.append(f"<pre>{html.escape(b.text)}</pre>")
    out.append("</body></html>\n")
    return "\n".join(out)


def inline(text: str) -> str:
    """Markdown's `code` and **bold** in HTML."""
    import re
    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    return re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", t)


# ----------------------------------------------------------- the content

NO_WORSE_MARGIN = 0.1
NO_DIFFERENCE_MDE = 0.2     # "no difference found" counts when the runs resolve 20 %


def unresolved(e: dict[str, Any]) -> str:
    """Why a CI that spans the goal decides nothing: what these runs could
    resolve, and how many it would take."""
    if "mde" not in e:
        return "inconclusive (CI spans it)"
    return (f"not resolvable here: these runs resolve changes of {e['mde']:.0%} or more "
            f"({e['runs'][0]} vs {e['runs'][1]} runs, run-to-run spread x{math.exp(e['sd_log']):.2f}); "
            f"{e['runs_needed']} runs per side would resolve {e['target_effect']:.0%}")


def target_verdict(e: dict[str, Any], at_most: float) -> str:
    """Is the ratio at most `at_most`? Met if the whole CI is, not met if
    none of it is; otherwise the runs could not tell, and the verdict says
    what they could resolve."""
    if not all(math.isfinite(e[k]) for k in ("low", "high")):
        return "not resolvable here: too few runs for an exact 95% CI"
    if e["high"] <= at_most:
        return "met"
    if e["low"] > at_most:
        return "not met"
    return unresolved(e)


def no_worse_verdict(e: dict[str, Any]) -> str:
    """Did the knob cost nothing? Met if the whole CI is at most
    1 + NO_WORSE_MARGIN, or if the rank test finds no difference with runs
    that would have resolved NO_DIFFERENCE_MDE; not met if all of the CI
    is above 1."""
    if not all(math.isfinite(e[k]) for k in ("low", "high")):
        return "not resolvable here: too few runs for an exact 95% CI"
    if e["high"] <= 1 + NO_WORSE_MARGIN:
        return "met"
    if e["low"] > 1:
        return "not met (worse)"
    if e.get("p", 0) >= 0.05 and e.get("mde", math.inf) <= NO_DIFFERENCE_MDE:
        return f"met: no difference found, and these runs resolve {e['mde']:.0%}"
    return unresolved(e)


def ranked(r: dict[str, Any], metric: str) -> dict[str, Any]:
    """A ratio's exact rank comparison of `metric` where the analysis has
    one, else its bootstrap CI (results made before rank tests)."""
    rank = (r.get("ranks") or {}).get(metric)
    if rank and "error" not in rank:
        return {"value": rank["ratio"], **rank}
    return r["mean"] if metric == "mean" else r["percentiles"][metric]


def check_load(chk: dict[str, Any], loads: list[float]) -> float:
    if chk["load"] == "highest":
        return max(loads)
    if chk["load"] == "lowest":
        return min(loads)
    return float(chk["load"])


def check_verdicts(chk: dict[str, Any], exp: dict[str, Any], knob: str) -> list[str]:
    """One verdict per arrival process at the check's load."""
    rs = [r for r in exp["ratios"] if r["knob"] == knob]
    at = check_load(chk, [r["load"] for r in rs])
    out = []
    if chk.get("kind") == "loss":
        for c in (c for c in exp["cells"] if c["knob"] == knob and c["load"] == at):
            out.append(f"requests lost at {at:g} ({c['arrival']}): {c['errors']} of {c['requests']}: "
                       + ("met" if c["errors"] == 0 else "not met"))
        return out
    for r in (r for r in rs if r["load"] == at):
        e = ranked(r, chk["metric"])
        if chk.get("kind") == "no-worse":
            out.append(f"{chk['metric']} at {at:g} ({r['arrival']}) no worse than x{1 + NO_WORSE_MARGIN:g}: "
                       + no_worse_verdict(e))
        else:
            out.append(f"{chk['metric']} at {at:g} ({r['arrival']}) <= x{chk['at_most']:g}: "
                       + target_verdict(e, chk["at_most"]))
    return out


def helps_from_text(exp: dict[str, Any]) -> str:
    """Where, along the sweep, the knob starts to help (computed from the
    CIs of knob_by_sweep)."""
    rows, sweep = exp.get("knob_by_sweep") or [], exp.get("sweep") or ""
    if not rows:
        return f"no {sweep} value had both knob levels measured"
    strict, point = knob_helps_from(rows, sweep), knob_helps_from(rows, sweep, bound="value")
    if strict is not None:
        return f"the knob lowers the mean (whole 95% CI below 1) from {sweep} = {strict:g} up"
    if point is not None:
        return (f"the mean ratio is below 1 from {sweep} = {point:g} up, but no CI lies wholly "
                "below 1: not shown at 95%")
    return f"the knob did not lower the mean at the largest {sweep}"


def claims_table(results: dict[str, Any], analysis: dict[str, Any]) -> list[Block]:
    claims = results.get("claims") or []
    if not claims:
        return []
    rows = []
    exps = {e["name"]: e for e in analysis["experiments"]}
    for c in claims:
        exp = exps.get(c.get("experiment", ""))
        if c.get("skipped") or exp is None:
            rows.append([c["use_case"], c["claim"], "not measured: " + c.get("skipped", "no experiment"), "-"])
            continue
        rs = [r for r in exp["ratios"] if r["knob"] == c["knob"]]
        if not rs:
            rows.append([c["use_case"], c["claim"], "no successful runs to compare", "-"])
            continue
        sat = c.get("saturation") or {}
        parts, verdicts = [], []
        for r in sorted(rs, key=lambda r: (r["load"], r["arrival"])):
            share = f" ({r['load'] / sat['rate']:.0%} of saturation)" if sat.get("rate") else ""
            parts.append(f"{r['load']:g} {exp['load_unit']}{share} {r['arrival']}: mean "
                         f"x{fmt_ratio(ranked(r, 'mean'))}, p99 x{fmt_ratio(ranked(r, 'p99'))}, "
                         f"p50 x{fmt_ratio(ranked(r, 'p50'))}" + mechanism_text(r))
        if sat.get("rate"):
            parts.insert(0, f"saturation measured at {sat['rate']:.0f} req/s")
        for chk in c.get("checks") or [{"metric": "p99", "load": "highest", "at_most": 1.0}]:
            verdicts += check_verdicts(chk, exp, c["knob"])
        if c.get("capacity"):
            parts += [capacity_text(r) for r in sorted(rs, key=lambda r: (r["load"], r["arrival"]))
                      if r.get("capacity")]
        if c.get("sweep_experiment") in exps:
            verdicts.append(helps_from_text(exps[c["sweep_experiment"]]))
        rows.append([c["use_case"], c["claim"], "; ".join(parts), "; ".join(verdicts)])
    return [H(2, "Paper's claim vs measured here"),
            P("Ratios are knob / baseline of each run's mean or percentile: the Hodges-Lehmann "
              "estimate with its exact 95% CI from the Mann-Whitney distribution (runs interleaved, "
              "knob and baseline alternating); below 1 means the knob lowered latency. Beside each, "
              "the mechanism: the share of the worker threads' runnable time spent waiting for a "
              "CPU, baseline -> knob (median over runs). The claims are the reference paper's results "
              "as the project's issues state them; a goal is met when the whole CI is at or below it, "
              "not met when none of it is, and otherwise not resolvable here, with the smallest change "
              "these runs could resolve and the runs that would resolve a 30% change."),
            Table(["use case", "paper's claim", "measured here (ratio knob/baseline)", "verdict"], rows)]


def fmt_ratio(e: dict[str, Any]) -> str:
    """A ratio with its CI, or a note where the runs were too few for one."""
    if not all(math.isfinite(e[k]) for k in ("low", "high")):
        return f"{e['value']:.2f} [too few runs for an exact CI]"
    return fmt_ci(e, 1, 2)


def capacity_text(r: dict[str, Any]) -> str:
    base, knob = r["capacity_per_s"]
    return (f"capacity at {r['load']:g} ({r['arrival']}): {base:,.0f} -> {knob:,.0f} requests per worker "
            f"CPU-second, x{fmt_ci(r['capacity'], 1, 2)}")


def mechanism_text(r: dict[str, Any]) -> str:
    """The workers' run-queue wait, baseline -> knob, where it was read."""
    base, knob = r.get("worker_sched") or [None, None]
    if not base or not knob:
        return ""
    return (f"; workers waiting for a CPU {base['wait_share']:.1%} -> {knob['wait_share']:.1%} "
            f"of runnable time, preempted {base['involuntary']:.0f} -> {knob['involuntary']:.0f} "
            "times a run")


def machine_blocks(results: dict[str, Any]) -> list[Block]:
    m = results.get("meta", {})
    v = m.get("versions", {})
    start = m.get("time_unix")
    end = m.get("time_end_unix")
    rows = [
        ["started", datetime.datetime.fromtimestamp(start, datetime.timezone.utc).isoformat(timespec="seconds") if start else "-"],
        ["wall time", f"{(end - start) / 60:.1f} min" if start and end else "-"],
        ["kernel", m.get("kernel", "-")],
        ["CPU", f"{m.get('cpu_model', '-')} x {m.get('cpus', '-')}"],
        ["governor", json.dumps(m.get("governor", "-"))],
        ["CPU idle", cpu_idle_text(m["cpu_idle"]) if "cpu_idle" in m else "-"],
        ["load average at start / end", f"{m.get('loadavg', '-')} / {m.get('loadavg_end', '-')}"],
        ["git commit", m.get("git_commit", "-")],
    ] + [[k, str(val)] for k, val in sorted(v.items())]
    for server, series in (m.get("patches") or {}).items():
        rows.append([f"patches/{server}/topics", ", ".join(series)])
    return [H(2, "Machine and software"), Table(["what", "value"], rows)]


def experiment_blocks(results: dict[str, Any], exp: dict[str, Any], out: Path) -> list[Block]:
    conf = int(round(exp["conf"] * 100))
    b: list[Block] = [H(2, f"Experiment `{exp['name']}` ({exp['server']})")]
    if exp["description"]:
        b.append(P(exp["description"]))
    b.append(P(f"{exp['runs_total']} runs, {exp['runs_failed']} failed"
               + (f" ({'; '.join(exp['failures'])[:400]})" if exp["failures"] else "")
               + f". Baseline: `{exp['baseline']}`. Latency is measured from each request's scheduled "
                 "send time (no coordinated omission)."))
    rows = []
    for c in exp["cells"]:
        p = c["percentiles"]
        rows.append([c["knob"], f"{c['load']:g}", c["arrival"], str(c["runs"]), fmt_ci(c["mean_ns"]),
                     fmt_ci(p["p50"]), fmt_ci(p["p90"]), fmt_ci(p["p99"]), fmt_ci(p["p999"]),
                     f"{c['achieved']:.0f}", f"{c['errors']} ({c.get('loss', 0):.2%})",
                     f"{c['loadavg_max']:.1f}" if c.get("loadavg_max") is not None else "-"])
    b.append(P(f"Latency (µs): median over runs of each run's mean and percentiles [{conf}% bootstrap CI]. "
               "Lost: requests that failed, were lost with a connection the server closed, or were "
               "unanswered at the end, summed over the cell's runs (share of its requests)."))
    b.append(Table(["knob", f"load ({exp['load_unit']})", "arrival", "runs", "mean", "p50", "p90", "p99",
                    "p99.9", "achieved req/s", "lost", "max load avg"], rows))
    if exp["ratios"]:
        b.append(P(f"Ratio knob / `{exp['baseline']}` [{conf}% bootstrap CI, runs resampled per group]."))
        b.append(Table(["knob", "load", "arrival", "p50", "p95", "p99", "p99.9", "mean"],
                       [[r["knob"], f"{r['load']:g}", r["arrival"],
                         *[fmt_ci(r["percentiles"][k], 1, 3) for k in ("p50", "p95", "p99", "p999")],
                         fmt_ci(r["mean"], 1, 3)] for r in exp["ratios"]]))
        ranked_rows = [rank_row(r) for r in exp["ratios"] if r.get("ranks")]
        if ranked_rows:
            b.append(P(f"The same, exact: Hodges-Lehmann ratio [its exact {conf}% CI from the Mann-Whitney "
                       "distribution] and the two-sided p; the smallest change (MDE) these runs resolve "
                       "with 80% power, and the runs per side that would resolve a 30% change, from the "
                       "runs' own spread; and the workers' share of runnable time spent waiting for a "
                       "CPU, baseline -> knob."))
            b.append(Table(["knob", "load", "arrival", "p99", "p", "p99 MDE", "runs for 30%", "mean", "p",
                            "worker CPU wait"], ranked_rows))
    if exp.get("knob_by_sweep"):
        b += knob_by_sweep_blocks(exp, conf)
    ideal = [c for c in exp["cells"] if c.get("ideal")]
    if ideal:
        b.append(P("Queueing ideal: the same arrival process (regenerated from the run's settings), "
                   "every request needing exactly the server's measured CPU time per request, "
                   f"{ideal[0]['ideal']['servers']} server(s) ({ideal[0]['ideal']['model']}); ideal latency "
                   "= the runs' minimum latency + simulated wait. Measured / ideal per percentile:"))
        b.append(Table(["knob", "load", "arrival", "CPU/request µs", "ρ", "ideal p99 µs", "p50", "p90", "p99", "p99.9"],
                       [[c["knob"], f"{c['load']:g}", c["arrival"], f"{c['ideal']['service_ns'] / 1e3:.1f}",
                         f"{c['ideal']['utilisation']:.2f}", f"{c['ideal']['percentiles']['p99'] / 1e3:.1f}",
                         *[f"{c['measured_over_ideal'][k]:.2f}" for k in ("p50", "p90", "p99", "p999")]]
                        for c in ideal]))
    for q in exp["qr"]:
        if "error" in q:
            b.append(P(f"Quantile regression failed: {q['error']}"))
            continue
        b.append(P(f"Quantile regression at q = {q['quantile']}: `{q['formula']}` (µs; treatment coding "
                   f"against the baseline, lowest load and first arrival process), pseudo-R² "
                   f"{q['pseudo_r2']:.3f}, n = {q['n']} (400 representative requests per run)."))
        b.append(Table(["term", "effect µs", "95% CI", "p"],
                       [[t["name"], f"{t['effect']:.1f}", f"[{t['low']:.1f}, {t['high']:.1f}]",
                         f"{t['p_value']:.2g}"] for t in q["terms"]]))
    name = exp["name"]
    for fn, fname, caption in (
            (lambda p: plots.cdf_tails(results, exp, p) if not exp.get("sweep") else None, f"{name}-tail.png",
             "Latency tail, 80th to 99.9th percentile, stock/off vs knob"),
            (lambda p: plots.improvement_vs_load(exp, p), f"{name}-ratio-vs-load.png",
             "Improvement vs load: ratio knob/baseline with 95% CI"),
            (lambda p: plots.batch_cdfs(results, exp, p)
             if any("batch_interval_us" in prm for prm in exp["params"].values()) else None,
             f"{name}-batch-cdf.png", "Client batch sizes (requests per send), CDF"),
            (lambda p: plots.sensitivity(exp, p), f"{name}-sensitivity.png",
             f"Sensitivity to {exp.get('sweep')}")):
        made = fn(out / "plots" / fname)
        if made:
            b.append(Img(f"plots/{fname}", caption))
    return b


def rank_row(r: dict[str, Any]) -> list[str]:
    p99, mean = r["ranks"]["p99"], r["ranks"]["mean"]
    if "error" in p99 or "error" in mean:
        return [r["knob"], f"{r['load']:g}", r["arrival"], p99.get("error", mean.get("error", "")),
                *["-"] * 6]
    base, knob = r.get("worker_sched") or [None, None]
    wait = f"{base['wait_share']:.1%} -> {knob['wait_share']:.1%}" if base and knob else "-"
    return [r["knob"], f"{r['load']:g}", r["arrival"], fmt_ci({"value": p99["ratio"], **p99}, 1, 3),
            f"{p99['p']:.2g}", f"{p99['mde']:.0%}", str(p99["runs_needed"]),
            fmt_ci({"value": mean["ratio"], **mean}, 1, 3), f"{mean['p']:.2g}", wait]


def knob_by_sweep_blocks(exp: dict[str, Any], conf: int) -> list[Block]:
    sweep, knob = exp["sweep"], exp.get("knob_param", "knob")
    return [P(f"Knob on / off at each {sweep} ({knob} > 0 vs 0; medians over runs, "
              f"[{conf}% bootstrap CI]). Where it starts to help: {helps_from_text(exp)}."),
            Table([sweep, "runs on/off", "mean", "p99"],
                  [[f"{r[sweep]:g}", f"{r['runs'][0]}/{r['runs'][1]}", fmt_ci(r["mean"], 1, 3),
                    fmt_ci(r["p99"], 1, 3)] for r in exp["knob_by_sweep"]])]


def profile_blocks(results: dict[str, Any], out: Path) -> list[Block]:
    profiles = results.get("profiles") or []
    if not profiles:
        return []
    b: list[Block] = [H(2, "Profiles: stages ranked by variance, and the recommended knob")]
    for p in profiles:
        b.append(H(3, f"{p.get('use_case', p['server'])}: {p['level']['name']}"))
        b.append(Pre(profile_text(p)))
    made = plots.stage_variance(profiles, out / "plots" / "stage-variance.png")
    if made:
        b.append(Img("plots/stage-variance.png", "Per-stage standard deviation in each profile run"))
    return b


METHOD = """How the numbers are made. Every run starts the server afresh, discards loadgen's warm-up,
and records loadgen's full latency histogram (log-linear, 0.8% resolution). A run's percentile
has a distribution-free order-statistic CI (binomial ranks, widened to whole histogram buckets).
Across the runs of a cell the report gives the median of the runs' percentiles with a percentile
bootstrap CI; a knob's ratio is the ratio of those medians with the two groups of runs resampled
independently. With 5 runs a 95% CI of a median is wide by nature: that is the honest width.
Quantile regression pools 400 representative requests per run, so its p-values treat requests as
independent and are too small when runs differ from each other more than requests do: read the
effects and the bootstrap CIs first. Runs are made in a random order so that drifts of a shared
machine spread over all cells instead of biasing one."""


def write_report(results: dict[str, Any], out: Path, conf: float = 0.95) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    analysis = analyze(results, conf=conf)
    (out / "analysis.json").write_text(json.dumps(analysis, default=str))
    blocks: list[Block] = [H(1, results.get("title", "stagevar report"))]
    for note in results.get("notes", []):
        blocks.append(P(note))
    blocks += claims_table(results, analysis)
    blocks += profile_blocks(results, out)
    for exp in analysis["experiments"]:
        blocks += experiment_blocks(results, exp, out)
    blocks += [H(2, "Method"), P(" ".join(METHOD.split()))]
    blocks += machine_blocks(results)
    md = out / "report.md"
    md.write_text(to_markdown(blocks))
    (out / "report.html").write_text(to_html(blocks, results.get("title", "stagevar report")))
    return md

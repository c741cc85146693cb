# SPDX-License-Identifier: BSD-3-Clause
"""PNG plots for the report (matplotlib, Agg: no display needed)."""
from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from stagevar_bench.experiment import iter_runs  # noqa: E402
from stagevar_bench.stats import Histogram  # noqa: E402

DPI = 72
PALETTE = 64
TAIL_PS = np.array([0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999])


def _save(fig: Any, path: Path) -> Path:
    """The figure as a PNG of PALETTE colours: line plots need no more, and
    the file is a third of the size of a full-colour one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, dpi=DPI, format="png")
    plt.close(fig)
    image = Image.open(buf).convert("RGB").quantize(colors=PALETTE, method=Image.Quantize.MEDIANCUT)
    image.save(path, format="PNG", optimize=True)
    return path


def merged_histograms(results: dict[str, Any], exp_name: str, key: str = "latency_scheduled"
                      ) -> dict[tuple[str, float, str], Histogram]:
    out: dict[tuple[str, float, str], Histogram] = {}
    for exp, run in iter_runs(results):
        if exp["design"]["name"] != exp_name or run.get("error") or "loadgen" not in run:
            continue
        obj = run["loadgen"].get(key) or {}
        if not obj.get("count"):
            continue
        h = Histogram.from_json(obj)
        k = (run["cell"]["knob"], float(run["cell"]["load"]), run["cell"]["arrival"])
        out[k] = out[k].merged(h) if k in out else h
    return out


def nines(p: np.ndarray) -> np.ndarray:
    return -np.log10(1 - p)


def cdf_tails(results: dict[str, Any], exp: dict[str, Any], path: Path) -> Path | None:
    """Latency at the 80th..99.9th percentiles, every knob level, one panel
    per (load, arrival); all runs of a cell pooled."""
    hists = merged_histograms(results, exp["name"])
    if not hists:
        return None
    panels = sorted({(k[1], k[2]) for k in hists})[:4]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (load, arrival) in zip(axes[0], panels):
        for level in exp["levels"]:
            h = hists.get((level, load, arrival))
            if h is None:
                continue
            ax.plot([h.quantile(p) / 1e3 for p in TAIL_PS], nines(TAIL_PS), marker=".", label=level)
        ax.set_xscale("log")
        ax.set_yticks(nines(np.array([0.8, 0.9, 0.99, 0.999])))
        ax.set_yticklabels(["80", "90", "99", "99.9"])
        ax.set_xlabel("latency from schedule (us, log)")
        ax.set_ylabel("percentile")
        ax.set_title(f"{load:g} {exp['load_unit']}, {arrival}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{exp['name']}: latency tail (all runs pooled)", fontsize=10)
    return _save(fig, path)


def improvement_vs_load(exp: dict[str, Any], path: Path) -> Path | None:
    """Ratio knob/baseline of p50 and p99 (median over runs, CI bars) against load."""
    if not exp["ratios"] or len({r["load"] for r in exp["ratios"]}) < 2:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.3), squeeze=False)
    for ax, pname in zip(axes[0], ("p50", "p99")):
        for (knob, arrival) in sorted({(r["knob"], r["arrival"]) for r in exp["ratios"]}):
            rows = sorted((r for r in exp["ratios"] if r["knob"] == knob and r["arrival"] == arrival),
                          key=lambda r: r["load"])
            x = [r["load"] for r in rows]
            e = [r["percentiles"][pname] for r in rows]
            y = np.array([v["value"] for v in e])
            lo = np.array([v["low"] for v in e])
            hi = np.array([v["high"] for v in e])
            ax.errorbar(x, y, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)], marker="o",
                        capsize=3, label=f"{knob} ({arrival})")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_xlabel(f"load ({exp['load_unit']})")
        ax.set_ylabel(f"{pname} ratio to {exp['baseline']}")
        ax.set_title(f"{pname}: below 1 is better", fontsize=9)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{exp['name']}: improvement vs load (median over runs, 95% CI)", fontsize=10)
    return _save(fig, path)


def sensitivity(exp: dict[str, Any], path: Path) -> Path | None:
    """p50/p99 (median over runs, CI) against the swept parameter; one line
    per combination of the other parameters."""
    key = exp.get("sweep")
    if not key:
        return None
    cells = [c for c in exp["cells"] if key in c.get("params", {})]
    if not cells:
        return None
    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.3), squeeze=False)
    groups: dict[str, list[dict[str, Any]]] = {}
    for c in cells:
        other = ", ".join(f"{k}={v:g}" for k, v in sorted(c["params"].items()) if k != key)
        groups.setdefault(f"{other} {c['load']:g} {exp['load_unit']} {c['arrival']}".strip(), []).append(c)
    for ax, pname in zip(axes[0], ("p50", "p99")):
        for label, cs in sorted(groups.items()):
            cs = sorted(cs, key=lambda c: c["params"][key])
            x = [c["params"][key] for c in cs]
            e = [c["percentiles"][pname] for c in cs]
            y = np.array([v["value"] for v in e]) / 1e3
            lo = np.array([v["low"] for v in e]) / 1e3
            hi = np.array([v["high"] for v in e]) / 1e3
            ax.errorbar(x, y, yerr=[np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)], marker="o",
                        capsize=3, label=label)
        ax.set_xlabel(key)
        ax.set_ylabel(f"{pname} latency (us)")
        ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=6)
    fig.suptitle(f"{exp['name']}: sensitivity to {key} (median over runs, 95% CI)", fontsize=10)
    return _save(fig, path)


def batch_cdfs(results: dict[str, Any], exp: dict[str, Any], path: Path) -> Path | None:
    """Requests per send() of the load generator, pooled per knob level."""
    hists = merged_histograms(results, exp["name"], "batch_size")
    if not hists:
        return None
    top_load = max(k[1] for k in hists)
    fig, ax = plt.subplots(figsize=(4.8, 3.3))
    for level in exp["levels"]:
        hs = [h for k, h in hists.items() if k[0] == level and k[1] == top_load]
        if not hs:
            continue
        h = hs[0]
        for other in hs[1:]:
            h = h.merged(other)
        # Batch sizes are whole numbers: bucket i holds [low, low + width),
        # so P(X <= last value of bucket i) is the count through bucket i.
        xs = np.concatenate([[h.lows[0]], h.lows + h.widths - 1])
        ys = np.concatenate([[0.0], h.cum / max(h.n, 1)])
        ax.step(xs, ys, where="post", label=level)
    ax.set_xscale("log")
    ax.set_xlabel("requests per send() (client batch size)")
    ax.set_ylabel("CDF")
    ax.set_title(f"{exp['name']} at {top_load:g} {exp['load_unit']}", fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    return _save(fig, path)


def stage_variance(profiles: list[dict[str, Any]], path: Path) -> Path | None:
    """Standard deviation of each component stage, per profile."""
    good = [p for p in profiles if not p.get("error") and p.get("ranked")]
    if not good:
        return None
    stages = ["kernel_to_read", "read_to_parse", "parse_to_response", "response_to_send"]
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    width = 0.8 / len(good)
    for i, p in enumerate(good):
        sd = {r["name"]: r["stddev_ns"] / 1e3 for r in p["ranked"]}
        ax.bar(np.arange(len(stages)) + i * width, [max(sd.get(s, 0), 1e-3) for s in stages], width,
               label=f"{p.get('use_case', p['server'])}: {p['level']['name']} @ {p['rate']:g}/s")
    ax.set_xticks(np.arange(len(stages)) + 0.4 - width / 2)
    ax.set_xticklabels(stages, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("stddev of stage (us, log)")
    ax.set_title("per-stage variability (profile runs, stage tracing on)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=6)
    return _save(fig, path)


def finite(x: float) -> bool:
    return x is not None and math.isfinite(x)

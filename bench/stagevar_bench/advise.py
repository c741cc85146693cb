# SPDX-License-Identifier: BSD-3-Clause
"""advise: which option to run, from a compare experiment that measured
them side by side (`stagevar advise RESULTS`).

The stage evidence (profile, fleet) names a cause and the options to
measure; this names the one to run from their measurements, per load
and arrival process:

1. An option whose memcached hit ratio is resolved below the best one's
   by a point or more is left out: a latency won by evicting what the
   segmented LRU keeps is not a win.
2. Of the rest, an option is dominated when another's latency on the
   chosen statistic is resolved lower than its own: the exact
   Hodges-Lehmann CI of the ratio of their runs (ranks.compare, the
   analysis's own test) lies wholly on one side of 1.
3. The answer is the simplest option nothing dominates: stock before the
   fork, then the order the experiment lists its levels in (the LRU
   option set lists stock as it runs first, then stock's remedies). So a
   gain that the runs do not resolve never outranks what needs no code.

Every answer names its evidence: each option's runs, median, ratio
against the baseline and against the answer, with CIs and p-values.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Mapping, NoReturn, Sequence

from stagevar_bench import ranks

PROG = "stagevar advise"
METRICS = ("p90", "p99", "mean", "p50", "p95", "p999")
# A hit ratio this far below the best (in ratio points) is a loss that
# matters: bench lru's bar for "equal to the thread" (issue 5), where the
# hit ratios of equal LRU work stayed within a point of each other.
HIT_RATIO_POINTS = 0.01


class AdviseError(Exception):
    """Bad input: one line naming it, exit status 2."""


@dataclass(frozen=True)
class Comparison:
    """One option's runs against a reference's: the Hodges-Lehmann ratio
    option / reference with its exact CI, the Mann-Whitney p, the runs."""
    against: str
    ratio: float
    low: float
    high: float
    conf: float
    p: float
    runs: tuple[int, int]       # (option, reference)

    @property
    def lower(self) -> bool:
        return self.high < 1

    @property
    def higher(self) -> bool:
        return self.low > 1

    def text(self) -> str:
        if math.isnan(self.low):
            return f"x{self.ratio:.3f} against {self.against} (too few runs for a CI)"
        return (f"x{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}] against {self.against}, "
                f"p {self.p:.2g}, {self.runs[0]} and {self.runs[1]} runs")


@dataclass(frozen=True)
class OptionFigures:
    name: str
    variant: str | None
    runs: int
    median_ns: float            # of the runs' values of the statistic
    hit_ratio: float | None     # median over runs
    loss: float                 # the cell's share of requests lost, errors and timeouts
    vs_baseline: Comparison | None
    vs_answer: Comparison | None
    left_out: str = ""          # why it cannot be the answer, if it cannot


@dataclass(frozen=True)
class Answer:
    experiment: str
    load: float
    arrival: str
    metric: str
    conf: float
    baseline: str
    run: str                    # the option to run
    because: str
    options: list[OptionFigures]
    missing: list[str] = field(default_factory=list)
    cautions: list[str] = field(default_factory=list)


def run_values(exp: Mapping[str, Any], level: str, load: float, arrival: str,
               metric: str) -> list[float]:
    """One value of the statistic per run of a cell, ns."""
    return [s["mean_ns"] if metric == "mean" else s["percentiles"][metric]["value"]
            for s in exp["runs"] if cell_of(s) == (level, load, arrival)]


def cell_of(summary: Mapping[str, Any]) -> tuple[str, float, str]:
    c = summary["cell"]
    return (str(c["knob"]), float(c["load"]), str(c["arrival"]))


def compare(option: Sequence[float], reference: Sequence[float], against: str,
            conf: float) -> Comparison | None:
    """ranks.compare of option over reference; None where a value is not
    positive (a run without latency, or a hit ratio of 0)."""
    try:
        r = ranks.compare(reference, option, conf)
    except ValueError:
        return None
    return Comparison(against, r.ratio, r.ci[0], r.ci[1], r.conf, r.p_value, (r.n_b, r.n_a))


def simplicity(exp: Mapping[str, Any], name: str) -> tuple[bool, int]:
    """Sort key: stock's options (no code) before the fork's, then the
    experiment's own order of levels."""
    variants = exp.get("variants") or {}
    return (variants.get(name, "fork") != "stock", exp["levels"].index(name))


def hit_ratio_drops(hits: Mapping[str, list[float]], conf: float) -> tuple[dict[str, str], list[str]]:
    """The options whose median hit ratio is HIT_RATIO_POINTS or more below
    the highest median's: ({option: why} for those whose runs resolve the
    drop, rule 1's losers; a `missing` line for each of the others, too few
    runs for a rank CI, which rule 1 cannot leave out and the reader must
    be told of)."""
    if not hits:
        return {}, []
    top = max(hits, key=lambda n: statistics.median(hits[n]))
    top_median = statistics.median(hits[top])
    losers, unresolved = {}, []
    for name, values in hits.items():
        median = statistics.median(values)
        if name == top or top_median - median < HIT_RATIO_POINTS:
            continue
        c = compare(values, hits[top], top, conf)
        if c is not None and c.lower:
            losers[name] = (f"hit ratio {median:.3f} against {top}'s {top_median:.3f} "
                            f"(x{c.ratio:.4f} [{c.low:.4f}, {c.high:.4f}], p {c.p:.2g})")
        else:
            unresolved.append(f"runs enough to resolve {name}'s hit ratio ({median:.3f}) below {top}'s "
                              f"({top_median:.3f}): it is weighed as if it kept it")
    return losers, unresolved


def cell_hit_ratios(exp: Mapping[str, Any], names: list[str], load: float,
                    arrival: str) -> dict[str, list[float]]:
    """Each level's runs' hit ratios at one cell (empty where not kept)."""
    return {n: [s["hit_ratio"] for s in exp["runs"] if cell_of(s) == (n, load, arrival)
                and s.get("hit_ratio") is not None] for n in names}


def resolved_lower(values: Mapping[str, list[float]], candidates: list[str],
                   conf: float) -> dict[str, list[str]]:
    """{option: the candidates whose statistic is resolved below its own}."""
    out: dict[str, list[str]] = {}
    for name in candidates:
        for other in candidates:
            c = compare(values[name], values[other], other, conf)
            if other != name and c is not None and c.higher:
                out.setdefault(name, []).append(other)
    return out


def advise_cell(exp: Mapping[str, Any], load: float, arrival: str, metric: str) -> Answer:
    """The option to run at one load and arrival process of an analysed
    experiment (analyze.analyze_experiment's output)."""
    conf = float(exp["conf"])
    cells = {c["knob"]: c for c in exp["cells"] if (float(c["load"]), c["arrival"]) == (load, arrival)}
    names = [n for n in exp["levels"] if n in cells]
    values = {n: run_values(exp, n, load, arrival, metric) for n in names}
    hits = cell_hit_ratios(exp, names, load, arrival)
    missing = []
    absent = [n for n in exp["levels"] if n not in cells]
    if absent:
        missing.append(f"successful runs of {', '.join(absent)} here: not weighed")
    if not exp.get("variants"):
        missing.append("the levels' variants (an analysis from before they were recorded): stock's "
                       "options are not put first, only the experiment's order of levels")
    without = [n for n in names if not hits[n]]
    if exp.get("server") == "memcached" and without:
        missing.append(f"the hit ratio of {', '.join(without)} (no get_hits/get_misses in the runs' "
                       "server_stats): an option that loses hit ratio cannot be ruled out there")
    losers, unresolved = hit_ratio_drops({n: v for n, v in hits.items() if v}, conf)
    missing += unresolved
    candidates = [n for n in names if n not in losers]
    beaten = resolved_lower(values, candidates, conf)
    free = [n for n in candidates if n not in beaten]
    if not free:       # resolution is not transitive: fall back to the lowest median
        free = [min(candidates, key=lambda n: statistics.median(values[n]))]
    answer = min(free, key=lambda n: simplicity(exp, n))
    baseline = exp["baseline"]
    options = []
    for n in names:
        vs_answer = None if n == answer else compare(values[n], values[answer], answer, conf)
        left_out = losers.get(n, "")
        if n in beaten:      # cite the answer where it is among those that beat it
            by = answer if answer in beaten[n] else beaten[n][0]
            c = vs_answer if by == answer else compare(values[n], values[by], by, conf)
            left_out = f"its {metric} is resolved above {by}'s: {c.text() if c else ''}"
        options.append(OptionFigures(
            name=n, variant=(exp.get("variants") or {}).get(n), runs=len(values[n]),
            median_ns=statistics.median(values[n]),
            hit_ratio=statistics.median(hits[n]) if hits[n] else None, loss=float(cells[n].get("loss", 0.0)),
            vs_baseline=compare(values[n], values[baseline], baseline, conf) if baseline in values else None,
            vs_answer=vs_answer, left_out=left_out))
    too_few = [o.name for o in options if o.vs_answer is not None and math.isnan(o.vs_answer.low)]
    if too_few:
        missing.append(f"runs enough for a {conf:.0%} CI of {', '.join(too_few)} against {answer}: "
                       "those pairs cannot be resolved either way")
    # A latency counts only the requests answered: say where some were not,
    # rather than rank the options by a loss share no threshold is measured for.
    cautions = [f"{o.name} lost {o.loss:.2%} of its requests (errors, losses, timeouts): its "
                f"{metric} is of those answered" for o in options if o.loss > 0]
    return Answer(exp["name"], load, arrival, metric, conf, baseline, answer,
                  because(answer, baseline, metric, options, free, bool(losers)), options, missing,
                  cautions)


def because(answer: str, baseline: str, metric: str, options: list[OptionFigures],
            free: list[str], some_lose_hits: bool) -> str:
    """One sentence: why this option, with the figures."""
    figures = {o.name: o for o in options}
    chosen = figures[answer]
    ties = [n for n in free if n != answer]
    tied = (f"; {', '.join(ties)} {'is' if len(ties) == 1 else 'are'} not resolved apart from it, and "
            f"{answer} is simpler" if ties else "")
    keeping = " that keeps the hit ratio" if some_lose_hits else ""
    if answer == baseline:
        return (f"no option{keeping} has a {metric} resolved below {baseline}'s "
                f"({chosen.median_ns / 1e3:.1f} us over {chosen.runs} runs){tied}: run {baseline} as it is")
    vs = chosen.vs_baseline.text() if chosen.vs_baseline else f"no comparison with {baseline}"
    return (f"{answer}'s {metric} ({chosen.median_ns / 1e3:.1f} us) is {vs}, and no option{keeping} "
            f"has one resolved below it{tied}")


def advise_experiment(exp: Mapping[str, Any], metric: str = "p90") -> list[Answer]:
    """One answer per (load, arrival) of an analysed experiment."""
    if metric not in METRICS:
        raise AdviseError(f"unknown statistic {metric!r} (choose from {', '.join(METRICS)})")
    if len(exp["levels"]) < 2:
        raise AdviseError(f"experiment {exp['name']!r} has one level ({exp['levels'][0]!r}): "
                          "nothing to weigh it against")
    pairs = sorted({(float(c["load"]), c["arrival"]) for c in exp["cells"]})
    return [advise_cell(exp, load, arrival, metric) for load, arrival in pairs]


# ------------------------------------------------------------ text

def notes(a: Answer) -> list[str]:
    """The options left out and why, what the answer could not weigh,
    and its cautions: one line each."""
    return [*(f"not {o.name}: {o.left_out}" for o in a.options if o.left_out),
            *(f"missing: {m}" for m in a.missing), *(f"caution: {c}" for c in a.cautions)]


def text(answers: list[Answer]) -> str:
    lines: list[str] = []
    for a in answers:
        lines.append(f"== {a.experiment} at {a.load:g}, {a.arrival} arrivals: {a.metric}, "
                     f"{a.conf:.0%} exact CIs ==")
        lines.append(f"run: {a.run}")
        lines.append(f"  because {a.because}")
        lines.append(f"  {'option':<34}{'runs':>5}{a.metric + ' us':>12}{'hit ratio':>11}{'lost':>8}"
                     f"  against {a.baseline}")
        for o in a.options:
            hit = "-" if o.hit_ratio is None else f"{o.hit_ratio:.3f}"
            vs = "baseline" if o.name == a.baseline else (o.vs_baseline.text() if o.vs_baseline else "-")
            lines.append(f"  {o.name:<34}{o.runs:>5}{o.median_ns / 1e3:>12.1f}{hit:>11}{o.loss:>8.2%}  {vs}")
        lines += [f"  {note}" for note in notes(a)]
        lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------ command

def read_analysis(path: Path, conf: float) -> dict[str, Any]:
    """An analysis (`stagevar analyze --json`) as it is, or a results file
    (`stagevar compare --out`) analysed here."""
    from stagevar_bench.experiment import FORMAT, ExperimentError, read_json
    try:
        obj = read_json(path)
    except ExperimentError as e:
        raise AdviseError(str(e)) from None
    if isinstance(obj, dict) and obj.get("format") == "stagevar-analysis/1":
        return obj
    from stagevar_bench.analyze import analyze
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        raise AdviseError(f"{path} is neither a stagevar results file ({FORMAT}) nor an analysis "
                          "(stagevar-analysis/1)")
    return analyze(obj, conf=conf, with_qr=False, with_ideal=False)


def conf_level(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad confidence {text!r}") from None
    if not 0.5 <= value < 1:
        raise argparse.ArgumentTypeError(f"confidence must be in [0.5, 1), not {text!r}")
    return value


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise AdviseError(message)


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="Which option to run, from a compare experiment that measured "
               "them side by side: the simplest option (stock before the fork) whose latency no "
               "other option's resolves lower, among those that keep the best hit ratio.")
    p.add_argument("results", type=Path, help="a results file (stagevar compare --out) or an analysis "
                   "(stagevar analyze --json)")
    p.add_argument("--metric", choices=METRICS, default="p90",
                   help="the statistic of each run compared (default p90)")
    p.add_argument("--conf", type=conf_level, default=0.95,
                   help="confidence of the exact CIs, when RESULTS is a results file (default 0.95)")
    p.add_argument("--json", dest="json_out", type=Path, help="write the answers as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
        analysis = read_analysis(args.results, args.conf)
        compared = [e for e in analysis["experiments"] if len(e["levels"]) > 1]
        if not compared:
            raise AdviseError(f"{args.results} has no experiment of two levels or more to weigh")
        answers = [a for e in compared for a in advise_experiment(e, args.metric)]
    except AdviseError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    print(text(answers))
    if args.json_out:
        args.json_out.write_text(json.dumps([asdict(a) for a in answers], indent=1))
    return 0

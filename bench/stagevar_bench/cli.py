# SPDX-License-Identifier: BSD-3-Clause
"""stagevar: find the stage whose service time varies most, pick the knob,
and measure what it does, with confidence intervals.

    stagevar profile   ...   rank a server's stages, recommend a knob
    stagevar compare   ...   factorial experiment -> results JSON
    stagevar analyze   RESULTS
    stagevar advise    RESULTS [--metric p90]   which measured option to run
    stagevar report    RESULTS --out DIR
    stagevar compact   RESULTS OUT [--per-octave 16]
    stagevar reproduce [--quick] --out DIR
    stagevar bench trace|lru|loadgen|peers ...   the benchmarks
    stagevar soak      ...   the amortized fork and stock side by side, for long
    stagevar exporter  --target HOST:PORT ...   memcached stages for Prometheus
    stagevar load      --agents USER@HOST,... -- LOADGEN_ARGS   loadgen on several hosts, merged

Each command's --help says more; docs/stagevar/ documents each on a page
of its own (docs/stagevar/README.md lists them).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence, TypeVar

from stagevar_bench import hog
from stagevar_bench.lru_options import LRU_BUDGET_DEFAULT_US, LRU_OPTION_NAMES
from stagevar_bench.runs import MAX_RUNS, MIN_RUNS, OUT_OF_RANGE, runs_ok
from stagevar_bench.timespec import parse_seconds

PROG = "stagevar"
Number = TypeVar("Number", int, float)


class CliError(Exception):
    """Bad input: printed as one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise CliError(message)


# --------------------------------------------------------------- values

def duration(text: str) -> float:
    """'3s', '500ms', '2' (seconds) -> seconds."""
    try:
        value = parse_seconds(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad duration {text!r} (e.g. 3s, 500ms)") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"duration must be > 0, not {text!r}")
    return value


def number_list(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"bad number list {text!r} (e.g. 10000,20000)") from None
    if not values or any(not v > 0 for v in values):
        raise argparse.ArgumentTypeError(f"values must be > 0: {text!r}")
    return values


def word_list(text: str) -> list[str]:
    values = [x.strip() for x in text.split(",") if x.strip()]
    if not values:
        raise argparse.ArgumentTypeError(f"empty list {text!r}")
    return values


def cpu_list(text: str) -> str:
    from stagevar_bench.machine import parse_cpu_list
    try:
        parse_cpu_list(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def number_in_range(text: str, parse: Callable[[str], Number], in_range: Callable[[Number], bool],
                    unparsable: str, out_of_range: str) -> Number:
    """`text` parsed by `parse` and accepted by `in_range`, else one
    ArgumentTypeError naming the value: `unparsable` or `out_of_range`,
    formatted with {text} (as given) and, for the range, {value} (parsed)."""
    try:
        value = parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(unparsable.format(text=text)) from None
    if not in_range(value):
        raise argparse.ArgumentTypeError(out_of_range.format(text=text, value=value))
    return value


def runs_count(text: str) -> int:
    return number_in_range(text, int, runs_ok, "bad run count {text!r}", OUT_OF_RANGE)


def conf_level(text: str) -> float:
    return number_in_range(text, float, lambda c: 0.5 <= c < 1,
                           "bad confidence {text!r}", "confidence must be in [0.5, 1), not {text!r}")


def hog_duty(text: str) -> float:
    return number_in_range(text, float, lambda d: hog.duty_error(d) is None, "bad hog duty {text!r}",
                           "hog duty must be a percentage from 0 to 100, not {text!r}")


def keyed(text: str) -> tuple[str, str]:
    """'NAME=VALUE' (split at the first '=')."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, not {text!r}")
    return name, value


def level_thread_sched(text: str) -> tuple[str, str]:
    """'NAME=THREAD:POLICY', the policy checked; (NAME, 'THREAD:POLICY')."""
    from stagevar_bench.thread_tuning import parse_thread_sched
    name, value = keyed(text)
    try:
        parse_thread_sched(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return name, value


def level_cpus(text: str) -> tuple[str, str]:
    """'NAME=CPUS', the CPU list checked against this machine."""
    name, value = keyed(text)
    return name, cpu_list(value)


def lru_budget(text: str) -> int:
    return number_in_range(text, int, lambda b: b >= 1, "bad LRU budget {text!r} (microseconds, e.g. 10)",
                           "the LRU budget must be a positive number of microseconds, not {text!r}")


# ------------------------------------------------------------ commands

def add_target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", choices=["memcached", "httpd"], default="memcached",
                   help="which server (default memcached)")
    p.add_argument("--server-cpus", type=cpu_list, help="pin the server with taskset -c LIST")
    p.add_argument("--client-cpus", type=cpu_list, help="pin loadgen's threads (loadgen --cpus LIST)")
    p.add_argument("--netns", action="store_true",
                   help="run server and loadgen in two network namespaces joined by veth "
                        "(created and removed by the tool; root)")
    p.add_argument("--duration", type=duration, default=3.0, help="measurement per run (default 3s)")
    p.add_argument("--warmup", type=duration, default=1.0, help="discarded warm-up per run (default 1s)")
    p.add_argument("--conn-rate", action="store_true",
                   help="loads are connections/s (requests/s = load x --requests-per-conn); "
                        "use with loadgen's --sequential-clients")
    p.add_argument("--requests-per-conn", type=int, default=75, help="with --conn-rate (default 75)")
    p.add_argument("--seed", type=int, default=1, help="random seed (run order, loadgen seeds)")
    p.add_argument("--hog", type=hog_duty, default=0.0, metavar="PERCENT",
                   help="the shared-CPU condition: on each --server-cpus CPU a process busy PERCENT "
                        "of every 10 ms (100: a busy loop) during each run (default 0: none)")
    p.add_argument("--hog-group", choices=hog.GROUPS, default="server",
                   help="where --hog sits for the scheduler: server (the server's session, a peer of "
                        "each server thread) or own (a session of its own: a task group apart, as a "
                        "neighbouring service's cgroup is) (default server)")


def build_parser() -> Parser:
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    p = sub.add_parser("profile", help="rank a server's stages by variance and recommend a knob")
    add_target_options(p)
    p.add_argument("--variant", choices=["fork"], default="fork", help="only the fork has stage tracing")
    p.add_argument("--server-args", default="", help="memcached options, one shell-quoted string")
    p.add_argument("--httpd-conf", default="", help="extra httpd configuration text")
    p.add_argument("--client-args", default="", help="extra loadgen options, one shell-quoted string")
    p.add_argument("--rate", type=number_list, default=None,
                   help="offered load(s), comma-separated; the highest is analysed, the lowest "
                        "shows growth with load (default: memcached 20000; httpd 10,40 conn/s "
                        "with --conn-rate, else 1000,4000)")
    p.add_argument("--arrival", default="exp", help="loadgen arrival process (default exp)")
    p.add_argument("--json", dest="json_out", type=Path, help="write the profile as JSON")
    p.add_argument("--prometheus", metavar="URL", help="profile the servers a Prometheus scrapes "
                   "instead of one started here (docs/monitoring.md)")
    p.add_argument("--match", default="", metavar="SELECTOR",
                   help="with --prometheus: label matchers, e.g. '{job=\"memcached\"}'")
    p.add_argument("--window", default="5m", help="with --prometheus: the last DURATION (default 5m)")

    c = sub.add_parser("compare", help="factorial experiment: knob levels x loads x arrivals")
    add_target_options(c)
    c.add_argument("--name", default="compare", help="experiment name")
    c.add_argument("--level", type=keyed, action="append", default=[], metavar="NAME=VARIANT",
                   help="a knob level (stock or fork); the first is the baseline; repeat")
    c.add_argument("--lru-options", action="store_true",
                   help="add memcached's LRU option set as levels, before any --level, stock the "
                        "baseline: " + ", ".join(LRU_OPTION_NAMES) + " (the last only where a CPU "
                        "is outside --server-cpus and --client-cpus); docs/stagevar/compare.md")
    c.add_argument("--lru-budget", type=lru_budget, default=None, metavar="US",
                   help="with --lru-options: fork-budget's lru_amortized_budget_us "
                        f"(default {LRU_BUDGET_DEFAULT_US})")
    c.add_argument("--thread-sched", type=level_thread_sched, action="append", default=[],
                   metavar="NAME=THREAD:POLICY",
                   help="in level NAME ('*' = every level) give every memcached thread named THREAD "
                        "(e.g. mc-lrumaint) POLICY idle (SCHED_IDLE) or nice19, after the server is "
                        "up and before the warm-up; a THREAD the server lacks fails the run; repeat")
    c.add_argument("--helper-cpus", type=level_cpus, action="append", default=[], metavar="NAME=CPUS",
                   help="in level NAME ('*' = every level) move every memcached thread but the "
                        "workers (mc-worker) to CPUS, which must be outside the server's "
                        "--server-cpus")
    c.add_argument("--server-args", type=keyed, action="append", default=[], metavar="NAME=ARGS",
                   help="server options of level NAME ('*' = every level), shell-quoted")
    c.add_argument("--client-args", type=keyed, action="append", default=[], metavar="NAME=ARGS",
                   help="loadgen options of level NAME ('*' = every level)")
    c.add_argument("--httpd-conf", type=keyed, action="append", default=[], metavar="NAME=TEXT",
                   help="httpd configuration of level NAME ('*' = every level)")
    c.add_argument("--loads", type=number_list, required=True, help="offered loads, comma-separated")
    c.add_argument("--arrivals", type=word_list, default=["exp"],
                   help="arrival processes, comma-separated: det, exp, pareto:cv2=C (default exp)")
    c.add_argument("--runs", type=runs_count, default=5,
                   help=f"runs per cell, {MIN_RUNS}..{MAX_RUNS} (default 5)")
    c.add_argument("--stage-trace", action="store_true", help="stage tracing on in fork levels")
    c.add_argument("--ideal-servers", type=int, default=1, help="servers of the queueing ideal (default 1)")
    c.add_argument("--ideal-shared", action="store_true",
                   help="the ideal has one shared queue (httpd) rather than one per worker")
    c.add_argument("--out", type=Path, required=True, help="results file (.json or .json.gz)")

    a = sub.add_parser("analyze", help="statistics of a results file")
    a.add_argument("results", type=Path)
    a.add_argument("--conf", type=conf_level, default=0.95, help="confidence level (default 0.95)")
    a.add_argument("--no-qr", action="store_true", help="skip quantile regression")
    a.add_argument("--json", dest="json_out", type=Path, help="write the analysis as JSON")

    r = sub.add_parser("report", help="Markdown + HTML report with plots from a results file")
    r.add_argument("results", type=Path)
    r.add_argument("--out", type=Path, required=True, help="directory for report.md, report.html, plots/")
    r.add_argument("--conf", type=conf_level, default=0.95)

    k = sub.add_parser("compact", help="a smaller copy of a results file (coarser histograms)")
    k.add_argument("results", type=Path)
    k.add_argument("out", type=Path, help="the copy (.json or .json.gz)")
    k.add_argument("--per-octave", type=int, default=16,
                   help="histogram buckets per power of two: 4, 8, 16, 32 or 64 (default 16)")

    q = sub.add_parser("reproduce", help="the paper's three use cases, then the report")
    size = q.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", const="quick", dest="size",
                      help="about 4 minutes instead of about 51 on 2 cores")
    size.add_argument("--size", choices=["tiny", "quick", "full"], default="full",
                      help="tiny is for the end-to-end test (about a minute)")
    q.add_argument("--only", type=word_list, default=None,
                   help="use cases to run, comma-separated: batching, lru, pinning (default all)")
    q.add_argument("--out", type=Path, required=True, help="directory for results.json.gz and the report")
    q.add_argument("--netns", action="store_true", help="server and loadgen in network namespaces")

    # The benchmarks and the soak have parsers of their own: the rest of
    # the command line is theirs, --help included.
    b = sub.add_parser("bench", add_help=False, help="the benchmarks: " + ", ".join(
        f"{name} ({what})" for name, (_, what) in BENCHES.items()))
    b.add_argument("rest", nargs=argparse.REMAINDER)
    s = sub.add_parser("soak", add_help=False, help="the amortized fork and stock side by side under a "
                       "set-heavy load, for long (default 30 minutes)")
    s.add_argument("rest", nargs=argparse.REMAINDER)
    e = sub.add_parser("exporter", add_help=False, help="serve memcached forks' stage histograms "
                       "and stats to Prometheus (docs/monitoring.md)")
    e.add_argument("rest", nargs=argparse.REMAINDER)
    sub.add_parser("advise", add_help=False, help="which option to run, from a compare experiment that "
                   "measured them side by side (docs/stagevar/advise.md)").add_argument(
                       "rest", nargs=argparse.REMAINDER)
    ld = sub.add_parser("load", add_help=False, help="loadgen on several hosts over ssh, one start, "
                        "one exactly merged report (docs/stagevar/load.md)")
    ld.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


# name: (module, what it measures)
BENCHES = {"trace": ("trace_cost", "what stage tracing costs memcached (--server httpd: httpd)"),
           "lru": ("bench_lru", "every LRU option, stock's and the fork's, side by side"),
           "loadgen": ("bench_loadgen", "one loadgen thread's capacity and precision"),
           "peers": ("bench_peers", "loadgen side by side with mutilate and wrk2")}


def split_args(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as e:
        raise CliError(f"cannot split {text!r}: {e}") from None


def per_level(pairs: list[tuple[str, str]], names: list[str], what: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {n: [] for n in names}
    for name, value in pairs:
        if name != "*" and name not in out:
            raise CliError(f"{what} names level {name!r}, which no --level defines")
        for n in (names if name == "*" else [name]):
            out[n] = out[n] + [value]
    return out


def cmd_profile(args: argparse.Namespace) -> int:
    if args.prometheus is not None:
        from stagevar_bench import fleet
        try:
            return fleet.run(args.prometheus, args.match, args.window, args.json_out)
        except fleet.FleetError as e:
            raise CliError(str(e)) from None
    from stagevar_bench import profile as prof
    from stagevar_bench.experiment import Design, ExperimentError, Level
    rates = args.rate
    if rates is None:
        rates = [20000.0] if args.server == "memcached" else ([10.0, 40.0] if args.conn_rate else [1000.0, 4000.0])
    level = Level(name="fork", variant="fork", server_args=split_args(args.server_args),
                  client_args=split_args(args.client_args), httpd_conf=args.httpd_conf)
    design = Design(name="profile", server=args.server, levels=[level], loads=rates,
                    duration_s=args.duration, warmup_s=args.warmup, server_cpus=args.server_cpus,
                    client_cpus=args.client_cpus, netns=args.netns, seed=args.seed,
                    load_unit="conn/s" if args.conn_rate else "req/s",
                    requests_per_conn=args.requests_per_conn, hog=args.hog,
                    hog_group=args.hog_group)
    try:
        result = prof.profile(design, level, rates, args.arrival, args.seed)
    except (ExperimentError, ValueError) as e:
        raise CliError(str(e)) from None
    print(prof.text(result))
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1, default=str))
    return 1 if result.get("error") else 0


def option_set_levels(args: argparse.Namespace) -> tuple[list[Any], list[str]]:
    """The LRU option set's levels if --lru-options asks for them, and the
    note on its helpers' option; bad combinations refused."""
    from stagevar_bench.lru_options import lru_option_levels, spare_core, spare_core_note
    if not args.lru_options:
        if args.lru_budget is not None:
            raise CliError(f"--lru-budget {args.lru_budget} sets the fork-budget level of --lru-options, "
                           "which is not given")
        return [], []
    if args.server != "memcached":
        raise CliError(f"--lru-options compares memcached's LRU options, not {args.server}'s")
    budget = LRU_BUDGET_DEFAULT_US if args.lru_budget is None else args.lru_budget
    levels = lru_option_levels(budget, spare_core(args.server_cpus, args.client_cpus))
    return levels, [spare_core_note(args.server_cpus, args.client_cpus)]


def with_level_options(level: Any, args: argparse.Namespace, names: list[str]) -> Any:
    """`level` with what --server-args, --client-args, --httpd-conf,
    --thread-sched and --helper-cpus give it (after its own)."""
    from stagevar_bench.thread_tuning import parse_thread_sched
    n = level.name
    level.server_args += [a for s in per_level(args.server_args, names, "--server-args")[n] for a in split_args(s)]
    level.client_args += [a for s in per_level(args.client_args, names, "--client-args")[n] for a in split_args(s)]
    level.httpd_conf = "\n".join(c for c in [level.httpd_conf, *per_level(args.httpd_conf, names, "--httpd-conf")[n]]
                                 if c)
    level.thread_sched.update(parse_thread_sched(v) for v in per_level(args.thread_sched, names, "--thread-sched")[n])
    helpers = per_level(args.helper_cpus, names, "--helper-cpus")[n]
    if helpers:
        level.helper_cpus = helpers[-1]
    return level


def cmd_compare(args: argparse.Namespace) -> int:
    from stagevar_bench.experiment import (Design, ExperimentError, Level, finish_results,
                                           new_results, run_design, save_results)
    option_levels, notes = option_set_levels(args)
    levels = option_levels + [Level(name=n, variant=v) for n, v in args.level]
    if not levels:
        raise CliError("no levels: give --level NAME=VARIANT (repeat) or --lru-options")
    names = [l.name for l in levels]
    levels = [with_level_options(l, args, names) for l in levels]
    design = Design(name=args.name, server=args.server, levels=levels, loads=args.loads,
                    arrivals=args.arrivals, runs=args.runs, duration_s=args.duration,
                    warmup_s=args.warmup, server_cpus=args.server_cpus, client_cpus=args.client_cpus,
                    netns=args.netns, stage_trace=args.stage_trace, seed=args.seed,
                    load_unit="conn/s" if args.conn_rate else "req/s",
                    requests_per_conn=args.requests_per_conn, ideal_servers=args.ideal_servers,
                    ideal_shared=args.ideal_shared, hog=args.hog, hog_group=args.hog_group)
    try:
        design.validate()
    except ExperimentError as e:
        raise CliError(str(e)) from None
    for note in notes:
        print(f"{PROG} compare: {note}", file=sys.stderr)
    results = new_results(notes)
    results["experiments"].append(run_design(design))
    finish_results(results)
    save_results(results, args.out)
    failed = sum(1 for r in results["experiments"][0]["runs"] if r.get("error"))
    print(f"{PROG} compare: {len(results['experiments'][0]['runs'])} runs ({failed} failed) -> {args.out}")
    return 0


def read_results(path: Path) -> dict[str, Any]:
    """A results file, or bad input naming it."""
    from stagevar_bench.experiment import ExperimentError, load_results
    try:
        return load_results(path)
    except ExperimentError as e:
        raise CliError(str(e)) from None


def cmd_analyze(args: argparse.Namespace) -> int:
    from stagevar_bench.analyze import analyze, text_tables
    results = read_results(args.results)
    analysis = analyze(results, conf=args.conf, with_qr=not args.no_qr)
    print(text_tables(analysis))
    if args.json_out:
        args.json_out.write_text(json.dumps(analysis, indent=1, default=str))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from stagevar_bench.report import write_report
    results = read_results(args.results)
    md = write_report(results, args.out, conf=args.conf)
    print(f"{PROG} report: {md} and {md.with_suffix('.html')}")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from stagevar_bench.experiment import ExperimentError, compact_results, save_results
    try:
        results = compact_results(read_results(args.results), args.per_octave)
    except ExperimentError as e:
        raise CliError(str(e)) from None
    save_results(results, args.out)
    print(f"{PROG} compact: {args.results} ({args.results.stat().st_size} bytes) -> {args.out} "
          f"({args.out.stat().st_size} bytes)")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    from stagevar_bench.reproduce import NAMES, reproduce
    only = args.only or NAMES
    for name in only:
        if name not in NAMES:
            raise CliError(f"unknown use case {name!r} (choose from {', '.join(NAMES)})")
    return reproduce(args.out, args.size or "full", only, netns=args.netns)


def cmd_bench(args: argparse.Namespace) -> int:
    import importlib
    which = args.rest[0] if args.rest else ""
    if which in ("-h", "--help"):
        print(f"usage: {PROG} bench {{{','.join(BENCHES)}}} [OPTIONS]  ({PROG} bench NAME --help)")
        for name, (_, what) in BENCHES.items():
            print(f"  {name:<8} {what}")
        return 0
    if which not in BENCHES:
        raise CliError(f"bench: choose one of {', '.join(BENCHES)}, not {which!r}")
    module = importlib.import_module(f"stagevar_bench.{BENCHES[which][0]}")
    return int(module.main(args.rest[1:]))


def cmd_soak(args: argparse.Namespace) -> int:
    from stagevar_bench import soak
    return soak.main(args.rest)


def cmd_load(args: argparse.Namespace) -> int:
    from stagevar_bench import agents
    return agents.main(args.rest)


def cmd_advise(args: argparse.Namespace) -> int:
    from stagevar_bench import advise
    return advise.main(args.rest)


def cmd_exporter(args: argparse.Namespace) -> int:
    from stagevar_bench import exporter
    return exporter.main(args.rest)


COMMANDS = {"profile": cmd_profile, "compare": cmd_compare, "analyze": cmd_analyze,
            "report": cmd_report, "compact": cmd_compact, "reproduce": cmd_reproduce,
            "bench": cmd_bench, "soak": cmd_soak, "exporter": cmd_exporter, "load": cmd_load,
            "advise": cmd_advise}


# Commands whose arguments, options included, all go to a parser of their
# own (argparse's REMAINDER does not take a leading option such as --help).
PASS_THROUGH = ("bench", "soak", "exporter", "load", "advise")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in PASS_THROUGH:
            return COMMANDS[argv[0]](argparse.Namespace(rest=argv[1:]))
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except CliError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def run() -> Any:
    sys.exit(main())

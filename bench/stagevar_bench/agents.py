# SPDX-License-Identifier: BSD-3-Clause
"""stagevar load --agents: one loadgen run from several hosts, merged exactly.

    stagevar load --agents USER@HOST[,USER@HOST...] [--ssh-opt OPT]...
                  [--agent-loadgen PATH] [--start-lead TIME] [--json FILE]
                  [--hdr-log FILE] -- LOADGEN_ARGS

Each agent is any host with loadgen and sshd: this runs `ssh USER@HOST
loadgen ...` on all of them at once (OpenSSH's client, no daemon of ours).
Every agent gets 1/N of -r, a seed of its own (--seed S gives agent i
S+i) and one --start-at: once every ssh session is up, an absolute
CLOCK_REALTIME instant --start-lead ahead, so their schedules begin
together. Each JSON report comes back on its ssh channel. The merged report adds counts, rates and histograms and
takes percentiles from the added histograms (stagevar_bench.merge), and
keeps each agent's own report under `agents`. An agent that cannot be
reached, lacks loadgen or fails mid-run is named, the exit status is 1,
and the others' merged results are still written, marked partial.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Sequence

from stagevar_bench.merge import Report, merge_reports
from stagevar_bench.timespec import parse_seconds

PROG = "stagevar load"
DEFAULT_LOADGEN = "loadgen"
SSH_UNREACHABLE = 255           # ssh's own failures (and a remote killed by a signal)
SHELL_NOT_FOUND = 127
# Options this command sets on each agent itself.
OWNED = {"--json": "the merged report is --json of stagevar load",
         "--start-at": "stagevar load picks one start for all agents",
         "-q": "stagevar load reads each agent's JSON", "--quiet": "stagevar load reads each agent's JSON",
         "-n": "use -d: a request count does not split into one shared schedule",
         "--requests": "use -d: a request count does not split into one shared schedule"}
AGENT_RE = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*@)?(?:[A-Za-z0-9][A-Za-z0-9.-]*|\[[0-9A-Fa-f:.]+\])")
# After the planned end: loadgen's own --timeout, connecting, JSON over ssh.
GRACE_S = 30.0
# For every ssh session to be up (key exchange on a busy host takes seconds).
CONNECT_TIMEOUT_S = 60.0


class LoadError(Exception):
    """Bad input: one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise LoadError(message)


@dataclass(frozen=True)
class Agent:
    spec: str       # USER@HOST as given

    @property
    def host(self) -> str:
        return self.spec.rsplit("@", 1)[-1]


def parse_agents(text: str) -> list[Agent]:
    specs = [s.strip() for s in text.split(",")]
    for s in specs:
        if not AGENT_RE.fullmatch(s):
            raise LoadError(f"--agents: bad agent {s!r} (want USER@HOST, comma-separated)")
    dup = sorted({s for s in specs if specs.count(s) > 1})
    if dup:
        raise LoadError(f"--agents: {dup[0]} is named twice")
    return [Agent(s) for s in specs]


def parse_time_s(text: str, what: str) -> float:
    """loadgen's TIME syntax (5s, 500ms, 2m; plain numbers are seconds)."""
    try:
        return parse_seconds(text)
    except ValueError as e:
        raise LoadError(f"{what}: {e}") from None


@dataclass
class LoadgenArgs:
    """LOADGEN_ARGS with -r and --seed taken out, to be set per agent."""
    rest: list[str]
    rate: float
    seed: int
    run_s: float        # warm-up + measurement + loadgen's reply timeout


def option_value(args: list[str], i: int, short: str, long: str) -> tuple[str | None, int]:
    """(value, how many words it took) when args[i] is -X V, -XV, --long V or --long=V."""
    a = args[i]
    if a in (short, long):
        if i + 1 >= len(args):
            raise LoadError(f"LOADGEN_ARGS: {a} needs a value")
        return args[i + 1], 2
    if a.startswith(long + "="):
        return a[len(long) + 1:], 1
    if len(short) == 2 and a.startswith(short) and not a.startswith("--") and len(a) > 2:
        return a[2:], 1
    return None, 0


def parse_loadgen_args(args: Sequence[str]) -> LoadgenArgs:
    args = list(args)
    rest: list[str] = []
    rate: float | None = None
    seed, times = 1, {"-d": 10.0, "-w": 1.0, "--timeout": 1.0}
    i = 0
    while i < len(args):
        a = args[i]
        name = a.split("=", 1)[0]
        if name in OWNED:
            raise LoadError(f"LOADGEN_ARGS: {a} is not allowed ({OWNED[name]})")
        v, used = option_value(args, i, "-r", "--rate")
        if used:
            try:
                rate = float(v)
            except ValueError:
                raise LoadError(f"LOADGEN_ARGS: bad rate {v!r}") from None
            if not rate > 0:
                raise LoadError(f"LOADGEN_ARGS: rate must be > 0, not {v!r}")
            i += used
            continue
        v, used = option_value(args, i, "--seed", "--seed")
        if used:
            if not v.isdigit():
                raise LoadError(f"LOADGEN_ARGS: bad --seed {v!r}")
            seed, i = int(v), i + used
            continue
        for short, long in (("-d", "--duration"), ("-w", "--warmup"), ("--timeout", "--timeout")):
            v, used = option_value(args, i, short, long)
            if used:
                times[short] = parse_time_s(v, f"LOADGEN_ARGS {a}")
                break
        rest.extend(args[i:i + max(used, 1)])
        i += max(used, 1)
    if rate is None:
        raise LoadError("LOADGEN_ARGS need -r RATE: it is split evenly among the agents")
    return LoadgenArgs(rest=rest, rate=rate, seed=seed, run_s=sum(times.values()))


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="loadgen on several hosts over ssh, one start, one merged report",
               epilog="Everything after -- goes to every agent's loadgen (docs/stagevar/load.md).")
    p.add_argument("--agents", required=True, help="USER@HOST[,USER@HOST...]: the hosts to run loadgen on")
    p.add_argument("--ssh-opt", action="append", default=[], metavar="OPT",
                   help="options for ssh, one shell-quoted string each, repeatable (e.g. \"-i KEY\")")
    p.add_argument("--agent-loadgen", default=DEFAULT_LOADGEN, metavar="PATH",
                   help="loadgen's path on the agents (default: loadgen on their PATH)")
    p.add_argument("--start-lead", default="2s", metavar="TIME",
                   help="once every ssh session is up, how far ahead the common start is: time for "
                        "loadgen to connect (and --preload) (default 2s)")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="write the merged report here (-: stdout, the summary then on stderr)")
    p.add_argument("--hdr-log", type=Path, metavar="FILE",
                   help="write latency_scheduled per second as an HdrHistogram interval log")
    p.add_argument("loadgen_args", nargs=argparse.REMAINDER, help="-- LOADGEN_ARGS")
    return p


@dataclass
class Outcome:
    agent: Agent
    report: Report | None = None
    error: str | None = None


def ssh_command(agent: Agent, ssh_opts: Sequence[str], loadgen: str, args: Sequence[str]) -> list[str]:
    """ssh that says `ready` once connected, then reads the start instant
    on stdin and execs loadgen with it: ssh's own connect time, which
    varies from agent to agent, is then spent before the start is chosen."""
    script = ("echo ready && read -r start && exec " + " ".join(shlex.quote(a) for a in [loadgen, *args])
              + ' --start-at "$start"')
    return ["ssh", "-o", "BatchMode=yes", *ssh_opts, agent.spec, "sh -c " + shlex.quote(script)]


def last_line(text: str) -> str:
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else "(no message)"


def judge(agent: Agent, loadgen: str, rc: int, out: str, err: str) -> Outcome:
    if rc == SSH_UNREACHABLE and not out:
        return Outcome(agent, error=f"agent {agent.spec}: ssh failed or loadgen was killed: {last_line(err)}")
    if rc == SHELL_NOT_FOUND:
        return Outcome(agent, error=f"agent {agent.spec} lacks loadgen at {loadgen}: {last_line(err)}")
    if rc != 0:
        return Outcome(agent, error=f"agent {agent.spec}: loadgen exited {rc}: {last_line(err)}")
    try:
        report = json.loads(out)
    except json.JSONDecodeError:
        return Outcome(agent, error=f"agent {agent.spec}: loadgen's report is not JSON: {last_line(err)}")
    return Outcome(agent, report=report)


class Start:
    """The agents' rendezvous: each says whether it connected, then all
    get one start instant."""

    def __init__(self, n: int) -> None:
        self.cond = threading.Condition()
        self.n = n
        self.answered: set[Agent] = set()
        self.at_ns: int | None = None

    def connected(self, agent: Agent) -> None:
        with self.cond:
            self.answered.add(agent)
            self.cond.notify_all()

    def wait_all(self, timeout_s: float) -> set[Agent]:
        """The agents that answered (connected or failed) in time."""
        with self.cond:
            self.cond.wait_for(lambda: len(self.answered) == self.n, timeout=timeout_s)
            return set(self.answered)

    def set(self, at_ns: int) -> None:
        with self.cond:
            self.at_ns = at_ns
            self.cond.notify_all()

    def get(self) -> int:
        with self.cond:
            self.cond.wait_for(lambda: self.at_ns is not None)
            return self.at_ns      # type: ignore[return-value]


def run_agent(cmd: list[str], agent: Agent, loadgen: str, start: Start, run_s: float,
              into: dict[Agent, Outcome], procs: dict[Agent, subprocess.Popen[str]]) -> None:
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
    except OSError as e:
        into[agent] = Outcome(agent, error=f"agent {agent.spec}: cannot run ssh: {e}")
        start.connected(agent)
        return
    procs[agent] = proc
    ready = proc.stdout.readline() == "ready\n"        # type: ignore[union-attr]
    start.connected(agent)
    try:
        out, err = proc.communicate(input=f"{start.get()}\n" if ready else None, timeout=run_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        into[agent] = Outcome(agent, error=f"agent {agent.spec}: no report {run_s:.0f} s after the start")
        return
    if agent not in into:
        into[agent] = judge(agent, loadgen, proc.returncode, out, err)


def run_agents(agents: Sequence[Agent], ssh_opts: Sequence[str], loadgen: str, lg: LoadgenArgs,
               lead_s: float) -> tuple[int, list[Outcome]]:
    """Every agent's outcome, and the start instant they were given."""
    outcomes: dict[Agent, Outcome] = {}
    procs: dict[Agent, subprocess.Popen[str]] = {}
    start = Start(len(agents))
    threads = []
    for i, agent in enumerate(agents):
        args = [*lg.rest, "-r", repr(lg.rate / len(agents)), "--seed", str(lg.seed + i), "--json", "-", "--quiet"]
        t = threading.Thread(target=run_agent, args=(ssh_command(agent, ssh_opts, loadgen, args), agent,
                                                     loadgen, start, lead_s + lg.run_s + GRACE_S, outcomes, procs))
        t.start()
        threads.append(t)
    answered = start.wait_all(CONNECT_TIMEOUT_S)
    for agent in agents:
        if agent not in answered:
            outcomes[agent] = Outcome(agent, error=f"agent {agent.spec}: no ssh session within "
                                                    f"{CONNECT_TIMEOUT_S:.0f} s")
            if agent in procs:
                procs[agent].kill()
    at_ns = time.time_ns() + int(lead_s * 1e9)
    start.set(at_ns)
    for t in threads:
        t.join()
    return at_ns, [outcomes[a] for a in agents]


def start_summary(start_at_ns: int, reports: Sequence[Report]) -> Report:
    """Skew of the schedules' origins, of when each agent's load threads
    began at its own (start_woke_unix_ns, on the agent's clock), and how
    late each agent's first request went."""
    origins = [r["meta"]["start_unix_ns"] for r in reports]
    woke = [r["meta"].get("start_woke_unix_ns", 0) for r in reports]
    return {"requested_unix_ns": start_at_ns,
            "skew_ns": max(origins) - min(origins) if origins else 0,
            "woke_skew_ns": max(woke) - min(woke) if woke else 0,
            "woke_late_ns": [w - start_at_ns for w in woke],
            "first_send_late_ns": [r["meta"].get("first_send_late_ns", 0) for r in reports]}


def merged_report(agents: Sequence[Agent], outcomes: Sequence[Outcome], start_at_ns: int,
                  argv: Sequence[str]) -> Report:
    good = [o for o in outcomes if o.report is not None]
    reports = [{"agent": o.agent.spec, **o.report} for o in good]   # type: ignore[dict-item]
    failed = [{"agent": o.agent.spec, "error": o.error} for o in outcomes if o.error]
    meta = {"tool": "stagevar-load", "argv": list(argv), "agents": [a.spec for a in agents],
            "start": start_summary(start_at_ns, reports)}
    return {"meta": meta, "partial": bool(failed), "failed": failed, **merge_reports(reports),
            "agents": reports}


def print_summary(r: Report, out: Any = sys.stdout) -> None:
    meta = r["meta"]
    print(f"stagevar load: {len(r['agents'])} of {len(meta['agents'])} agents reported"
          f"{' (PARTIAL)' if r['partial'] else ''}", file=out)
    if r["agents"]:
        lat = r["latency_scheduled"]
        print(f"  offered {r['rates']['offered']:.0f} req/s, achieved {r['rates']['achieved']:.0f} req/s, "
              f"completed {r['counts']['completed']}", file=out)
        print(f"  latency from schedule: p50 {lat['p50'] / 1e3:.1f} us, p99 {lat['p99'] / 1e3:.1f} us, "
              f"p99.9 {lat['p999'] / 1e3:.1f} us (merged histogram)", file=out)
        s = meta["start"]
        print(f"  start skew {s['skew_ns'] / 1e3:.1f} us (schedules), {s['woke_skew_ns'] / 1e3:.1f} us "
              f"(load threads began)", file=out)
    for f in r["failed"]:
        print(f"  FAILED {f['error']}", file=out)


def load(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(argv)
    rest = list(args.loadgen_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    if not rest:
        raise LoadError("no LOADGEN_ARGS: put loadgen's options after --")
    agents = parse_agents(args.agents)
    ssh_opts = [w for opt in args.ssh_opt for w in split_opt(opt)]
    lead_s = parse_time_s(args.start_lead, "--start-lead")
    if not lead_s > 0:
        raise LoadError(f"--start-lead must be > 0, not {args.start_lead!r}")
    lg = parse_loadgen_args(rest)
    for name, path in (("--json", args.json), ("--hdr-log", args.hdr_log)):
        if path is not None and path != Path("-") and not path.parent.is_dir():
            raise LoadError(f"{name}: {str(path)!r}: no such directory {str(path.parent)!r}")
    if args.hdr_log:
        from stagevar_bench import hdrlog      # only then is the library needed
        try:
            hdrlog.check_available()
        except hdrlog.HdrLogError as e:
            raise LoadError(str(e)) from None
    start_at_ns, outcomes = run_agents(agents, ssh_opts, args.agent_loadgen, lg, lead_s)
    report = merged_report(agents, outcomes, start_at_ns, argv)
    to_stdout = args.json == Path("-")
    print_summary(report, sys.stderr if to_stdout else sys.stdout)
    if to_stdout:
        print(json.dumps(report))
    elif args.json:
        args.json.write_text(json.dumps(report) + "\n")
    if args.hdr_log and report["agents"]:
        hdrlog.write(args.hdr_log, report)
    return 1 if report["failed"] else 0


def split_opt(text: str) -> list[str]:
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise LoadError(f"--ssh-opt: cannot split {text!r}: {e}") from None
    if not words or not words[0].startswith("-"):
        raise LoadError(f"--ssh-opt: {text!r} is not an ssh option (e.g. \"-i KEY\")")
    return words


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return load(sys.argv[1:] if argv is None else argv)
    except LoadError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-3-Clause
"""What a result needs to be re-read later: the machine, the software and
the processes' CPU time, read from /proc, /sys and the built binaries.
Every bench module reads CPU time and the load average through here."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from stagevar_bench.servers import REPO, build_binary

CLK_TCK = os.sysconf("SC_CLK_TCK")


def loadavg_text() -> str:
    """The 1, 5 and 15 minute load averages as /proc/loadavg has them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def loadavg() -> list[float]:
    try:
        return [float(x) for x in loadavg_text().split()]
    except OSError:
        return []


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def read_or_none(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def governors() -> dict[str, str]:
    out: dict[str, str] = {}
    for cpu in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*")):
        gov = read_or_none(cpu / "cpufreq" / "scaling_governor")
        if gov is not None:
            out[cpu.name] = gov
    return out


CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
HALT_POLL_NS = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


def cpu_idle() -> dict[str, Any]:
    """How idle CPUs wait for work: the cpuidle driver and governor and,
    in a guest with the haltpoll driver, how long a vCPU polls before it
    halts. A halted vCPU is woken by an IPI, which the waker pays: on the
    project's VM that is about half of a send() to an idle memcached and
    of memcached's p50 (bench/results/2026-11-27-loadgen-server-idle.md),
    so results taken with different settings do not compare."""
    poll = read_or_none(HALT_POLL_NS)
    return {"driver": read_or_none(CPUIDLE / "current_driver"),
            "governor": read_or_none(CPUIDLE / "current_governor"),
            "guest_halt_poll_ns": int(poll) if poll is not None and poll.isdigit() else None}


def cpu_idle_text(idle: dict[str, Any]) -> str:
    """cpu_idle() in a line: 'haltpoll (governor haltpoll), halt-polling 0 ns'."""
    if not idle.get("driver"):
        return "no cpuidle driver"
    text = f"{idle['driver']} (governor {idle.get('governor') or '?'})"
    if idle.get("guest_halt_poll_ns") is not None:
        text += f", halt-polling {idle['guest_halt_poll_ns']} ns"
    return text


def load_and_idle_text() -> str:
    """The load average and how idle CPUs wait, for a benchmark's first line."""
    return f"{loadavg_text()}; CPU idle: {cpu_idle_text(cpu_idle())}"


def first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
        return (out.stdout or out.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unavailable"


def loadgen_path() -> Path:
    env = os.environ.get("STAGEVAR_LOADGEN")
    return Path(env) if env else REPO / "bench" / "loadgen" / "loadgen"


def run_loadgen(cpu: int, args: list[str], timeout_s: float = 600) -> dict[str, Any]:
    """loadgen's JSON report of one run with `args`, pinned to `cpu`."""
    with tempfile.TemporaryDirectory(prefix="stagevar-loadgen-") as tmp:
        report = os.path.join(tmp, "report.json")
        subprocess.run(["taskset", "-c", str(cpu), str(loadgen_path()), "--cpus", str(cpu), *args,
                        "--quiet", "--json", report], check=True, timeout=timeout_s)
        with open(report) as f:
            return json.load(f)


def versions() -> dict[str, str]:
    v = {"loadgen": first_line([str(loadgen_path()), "-V"]), "python": platform.python_version()}
    for variant in ("stock", "fork"):
        v[f"memcached-{variant}"] = first_line([str(build_binary(variant, "memcached")), "-V"])
        v[f"httpd-{variant}"] = first_line([str(build_binary(variant, "httpd")), "-v"]).split(": ")[-1]
    for mod in ("numpy", "scipy", "statsmodels", "matplotlib", "pandas"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = "missing"
    return v


def listing(path: Path) -> list[str]:
    """The entries of a series or topics file, comments and blanks dropped."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def patches() -> dict[str, list[str]]:
    """The patches applied to each fork build, in order: each topic of
    patches/<server>/topics as topic/patch, then the fork-only ones."""
    out: dict[str, list[str]] = {}
    for topics in sorted((REPO / "patches").glob("*/topics")):
        applied = []
        for entry in listing(topics):
            series = topics.parent / entry / "series"
            applied += [f"{entry}/{p}" for p in listing(series)] if series.exists() else [entry]
        out[topics.parent.name] = applied
    return out


def git_commit() -> str:
    return first_line(["git", "-C", str(REPO), "rev-parse", "HEAD"])


def metadata() -> dict[str, Any]:
    uname = platform.uname()
    return {
        "time_unix": time.time(),
        "hostname": uname.node,
        "kernel": f"{uname.system} {uname.release} {uname.version}",
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "governor": governors() or "not readable",
        "cpu_idle": cpu_idle(),
        "versions": versions(),
        "patches": patches(),
        "git_commit": git_commit(),
        "loadavg": loadavg(),
    }


def stat_user_sys_s(stat: Path) -> tuple[float, float]:
    """(utime, stime) in seconds from a /proc stat file: a process's (all
    its threads) or one thread's (/proc/PID/task/TID/stat). Clock ticks:
    for ns resolution see schedstat_ns."""
    # comm, in parentheses, may hold spaces: the fields follow the last ')'
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / CLK_TCK, int(fields[12]) / CLK_TCK


def proc_user_sys_s(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds of a process, all its threads."""
    return stat_user_sys_s(Path(f"/proc/{pid}/stat"))


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), seconds; 0 if it is gone."""
    try:
        return sum(proc_user_sys_s(pid))
    except (OSError, IndexError, ValueError):
        return 0.0


def children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def tree_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds of a process and of its children (httpd's workers), each
    the sum of its threads' schedstat times: ns resolution, where utime and
    stime count 10 ms ticks (a light run's CPU per request needs better)."""
    out: dict[int, float] = {}
    for p in [pid, *children(pid)]:
        try:
            out[p] = proc_cpu_ns(p) / 1e9
        except OSError:
            pass    # exited meanwhile
    return out


def cpu_busy_s(cpus: list[int]) -> float:
    """Seconds the given CPUs spent running tasks (user, nice and system
    time, from /proc/stat, summed; interrupts, whose time the kernel keeps
    apart from any task's, are left out, as is the hypervisor's steal):
    less a process's own CPU time, what other tasks took of its cores."""
    busy = cpu_busy_by_cpu()
    return sum(busy.get(c, 0.0) for c in cpus)


def cpu_busy_by_cpu() -> dict[int, float]:
    """{cpu: seconds it spent running tasks}, as cpu_busy_s counts them."""
    return {cpu: (t[0] + t[1] + t[2]) / CLK_TCK for cpu, t in cpu_stat_ticks().items()}


STAT_STEAL = 7      # user nice system idle iowait irq softirq steal ... (proc(5))


def cpu_steal_s(cpus: list[int] | None = None) -> float:
    """Seconds the hypervisor ran something else while the given CPUs
    (None: every CPU) had work (/proc/stat's steal, summed): time a server
    pinned there waited for a CPU the VM could not see. The kernel keeps
    it in ns and shows it in 10-ms ticks, so a difference is good to a
    tick."""
    ticks = cpu_stat_ticks()
    return sum(t[STAT_STEAL] for c, t in ticks.items() if cpus is None or c in cpus) / CLK_TCK


def cpu_stat_ticks() -> dict[int, list[int]]:
    """{cpu: its /proc/stat times in clock ticks, in proc(5)'s order}."""
    out: dict[int, list[int]] = {}
    for line in Path("/proc/stat").read_text().splitlines():
        fields = line.split()
        if fields and fields[0].startswith("cpu") and fields[0][3:].isdigit():
            out[int(fields[0][3:])] = [int(x) for x in fields[1:]]
    return out


def allowed_cpus(pid: int) -> list[int]:
    """The CPUs a process may run on (Cpus_allowed_list of its main thread:
    what taskset or a cgroup's cpuset gave it)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key == "Cpus_allowed_list":
            return expand_cpu_list(value.strip())
    raise OSError(f"/proc/{pid}/status has no Cpus_allowed_list")


def expand_cpu_list(spec: str) -> list[int]:
    """'0,2-3' -> [0, 2, 3], without parse_cpu_list's check against this
    machine's CPUs (the kernel's own lists are right by construction)."""
    cpus: list[int] = []
    for part in filter(None, spec.split(",")):
        a, _, b = part.partition("-")
        cpus += range(int(a), int(b or a) + 1)
    return cpus


def thread_cpu_s(pid: int) -> dict[str, float]:
    """CPU seconds per thread name (memcached: mc-worker, mc-lrumaint, ...),
    threads of the same name summed."""
    out: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            name = (task / "comm").read_text().strip()
            user, system = stat_user_sys_s(task / "stat")
        except OSError:
            continue
        out[name] = out.get(name, 0.0) + user + system
    return out


def schedstat_ns(schedstat: Path) -> int:
    """Time spent on a CPU, in ns, from a thread's /proc schedstat file."""
    return int(schedstat.read_text().split()[0])


def proc_cpu_ns(pid: int, thread_name: str | None = None) -> int:
    """CPU time, user and system, in ns, of every thread of `pid`, or only
    of those named `thread_name` (memcached's workers: mc-worker)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if thread_name is None or (task / "comm").read_text().strip() == thread_name:
                total += schedstat_ns(task / "schedstat")
        except (OSError, IndexError, ValueError):
            pass    # a thread that just exited
    return total


def this_thread_cpu_ns() -> int:
    """CPU time of the calling thread, in ns."""
    return schedstat_ns(Path("/proc/thread-self/schedstat"))


def parse_cpu_list(spec: str) -> list[int]:
    """'0,2-3' -> [0, 2, 3]; ValueError naming the value if malformed."""
    cpus: list[int] = []
    try:
        for part in spec.split(","):
            if "-" in part:
                a, b = part.split("-", 1)
                if int(b) < int(a):
                    raise ValueError
                cpus += range(int(a), int(b) + 1)
            else:
                cpus.append(int(part))
    except ValueError:
        raise ValueError(f"bad CPU list {spec!r} (expected e.g. 0,2-3)") from None
    online = os.cpu_count() or 1
    bad = [c for c in cpus if c < 0 or c >= online]
    if bad or not cpus:
        raise ValueError(f"CPU list {spec!r} names CPUs this machine lacks (it has 0-{online - 1})")
    return cpus

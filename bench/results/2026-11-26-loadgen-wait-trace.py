# SPDX-License-Identifier: BSD-3-Clause
"""What loadgen's loop was doing when its sends went late (issue 20).

Builds a traced copy of bench/loadgen in a temporary directory (the
source is patched there, never in the tree): every send() call, read,
poll, sleep, spin and generate pass, and every measured request's
scheduled and send times, go to a buffer written out at the end. Then
runs it against stock memcached -t 1 (CPU 1, loadgen on CPU 0) and
prints: the schedule error; the loop's own part of it (after the
thread's previous send() returned, what loadgen now reports as
loop_lateness); for the requests later than --late-us, what the loop
was doing when they fell due; and how long each kind of step took.

    flock /work/bench.lock .venv/bin/python bench/results/2026-11-26-loadgen-wait-trace.py \\
        --rate 5000 [--late-us 8] [-- EXTRA LOADGEN ARGS]
"""
import argparse
import bisect
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from stagevar_bench.servers import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("STAGEVAR_BUILD", ROOT / "build"))
KINDS = {1: "send", 2: "read", 3: "poll", 4: "sleep", 5: "request", 6: "generate", 7: "spin"}

TRACE_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
void trace(int kind, uint64_t a, uint64_t b);
void trace_dump(void);
static struct { uint64_t a, b; int kind; } *rec;
static unsigned n;
#define MAX (1u << 23)
void trace(int kind, uint64_t a, uint64_t b)
{
    if (!rec)
        rec = malloc(sizeof(*rec) * MAX);
    if (rec && n < MAX) {
        rec[n].a = a; rec[n].b = b; rec[n].kind = kind; n++;
    }
}
void trace_dump(void)
{
    FILE *f = fopen(getenv("TRACE_OUT"), "w");
    for (unsigned i = 0; f && i < n; i++)
        fprintf(f, "%d %llu %llu\n", rec[i].kind, (unsigned long long)rec[i].a, (unsigned long long)rec[i].b);
    if (f)
        fclose(f);
}
"""

# (file, text, replacement): each must match exactly once.
PATCHES = [
    ("conn.c", "    n = send(c->fd, lg_buf_data(&c->out), want, MSG_NOSIGNAL | MSG_DONTWAIT);\n",
     "    n = send(c->fd, lg_buf_data(&c->out), want, MSG_NOSIGNAL | MSG_DONTWAIT);\n"
     "    trace(1, now, sv_clock_monotonic_ns());\n"),
    ("loop.c", "    t->st.c.sent++;\n", "    t->st.c.sent++;\n    trace(5, req->sched_ns, req->sent_ns);\n"),
    ("loop.c", "    event_base_loop(t->base, EVLOOP_ONCE);\n    now = t->polled_ns = sv_clock_monotonic_ns();\n",
     "    event_base_loop(t->base, EVLOOP_ONCE);\n    { uint64_t from = now;\n"
     "    now = t->polled_ns = sv_clock_monotonic_ns(); trace(4, from, now); }\n"),
    ("loop.c", "    event_base_loop(t->base, EVLOOP_NONBLOCK | EVLOOP_ONCE);\n    return sv_clock_monotonic_ns();\n",
     "    event_base_loop(t->base, EVLOOP_NONBLOCK | EVLOOP_ONCE);\n"
     "    { uint64_t end = sv_clock_monotonic_ns(); trace(3, now, end); return end; }\n"),
    ("loop.c", "    lg_conn_read(c);\n    done = sv_clock_monotonic_ns();\n",
     "    lg_conn_read(c);\n    done = sv_clock_monotonic_ns();\n    trace(2, now, done);\n"),
    ("loop.c", "    if (t->measuring)\n        t->st.spun_ns += now - from;\n",
     "    if (t->measuring)\n        t->st.spun_ns += now - from;\n    if (now > from)\n        trace(7, from, now);\n"),
    ("loop.c", "        if (generate(t, now) < 0)\n            return -1;\n",
     "        if (generate(t, now) < 0)\n            return -1;\n        trace(6, now, sv_clock_monotonic_ns());\n"),
    ("loop.c", "    __atomic_add_fetch(&t->run->finished, 1, __ATOMIC_RELEASE);\n    return NULL;\n}",
     "    trace_dump();\n    __atomic_add_fetch(&t->run->finished, 1, __ATOMIC_RELEASE);\n    return NULL;\n}"),
]


def build(tmp: Path) -> Path:
    src = tmp / "loadgen"
    shutil.copytree(ROOT / "bench/loadgen", src, ignore=shutil.ignore_patterns("*.o", "*.a", "loadgen",
                                                                                "stub-server"))
    (src / "trace.c").write_text(TRACE_C)
    for name, old, new in PATCHES:
        path = src / name
        text = path.read_text()
        if text.count(old) != 1:
            sys.exit(f"trace: {name} has changed; cannot patch: {old.strip()!r}")
        text = text.replace(old, new)
        decl = "void trace(int kind, uint64_t a, uint64_t b);\nvoid trace_dump(void);\n"
        if decl not in text:    # after the file's own header, which brings stdint.h
            head = text.index("\n", text.index('#include "')) + 1
            text = text[:head] + decl + text[head:]
        path.write_text(text)
    sources = [p.name for p in src.glob("*.c") if p.name != "stub_server.c"]
    out = src / "loadgen"
    subprocess.run(["gcc", "-std=gnu99", "-O2", "-pthread", f"-I{ROOT / 'common'}",
                    '-DLG_VERSION="trace"', "-o", str(out), *sources, str(ROOT / "common/libstagevar.a"),
                    "-levent", "-lm"], cwd=src, check=True)
    return out


def analyse(path: Path, late_ns: float) -> None:
    steps, reqs = [], []
    for line in open(path):
        kind, a, b = map(int, line.split())
        (reqs.append((a, b)) if kind == 5 else steps.append((a, b, kind)))
    steps.sort()
    starts = [s[0] for s in steps]
    sends = sorted((a, b) for a, b, k in steps if k == 1)
    send_starts = [s[0] for s in sends]
    q = lambda v, p: v[min(len(v) - 1, int(len(v) * p))] / 1e3

    def during(t: int) -> str:
        """The innermost step running at t (a send or read before the pass around it)."""
        i, found = bisect.bisect_right(starts, t) - 1, None
        for s, e, k in steps[max(0, i - 8):i + 1]:
            if s <= t < e and (found is None or k in (1, 2)):
                found = k
        return KINDS[found] if found else "between steps"

    err = sorted(b - a for a, b in reqs)
    own, late, late_own = [], collections.Counter(), collections.Counter()
    for a, b in reqs:
        i = bisect.bisect_left(send_starts, b) - 1
        free = max(a, sends[i][1] if i >= 0 else 0)
        own.append(max(0, b - free))
        if b - a > late_ns:
            late[during(a)] += 1
        if b - free > late_ns:
            late_own[during(free)] += 1
    own.sort()
    n = len(err)
    print(f"requests {n}: schedule error p50 {q(err, .5):.2f} p90 {q(err, .9):.2f} p99 {q(err, .99):.2f} "
          f"p99.9 {q(err, .999):.2f} us")
    print(f"the loop's own (after the previous send() returned): p50 {q(own, .5):.2f} p90 {q(own, .9):.2f} "
          f"p99 {q(own, .99):.2f} p99.9 {q(own, .999):.2f} us")
    print(f"later than {late_ns / 1e3:.1f} us: {sum(late.values())} ({100 * sum(late.values()) / n:.2f}%); "
          f"what the loop was doing when they fell due: "
          + ", ".join(f"{k} {v}" for k, v in late.most_common()))
    print(f"the loop's own part later than {late_ns / 1e3:.1f} us: {sum(late_own.values())} "
          f"({100 * sum(late_own.values()) / n:.2f}%); what ran when they could have gone: "
          + ", ".join(f"{k} {v}" for k, v in late_own.most_common()))
    for kind in (1, 2, 3, 4):
        d = sorted(e - s for s, e, k in steps if k == kind)
        if d:
            print(f"{KINDS[kind]} steps: {len(d)}, p50 {q(d, .5):.2f} p99 {q(d, .99):.2f} "
                  f"p99.9 {q(d, .999):.2f} max {d[-1] / 1e3:.1f} us")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rate", type=int, default=5000)
    p.add_argument("--late-us", type=float, default=8.0)
    p.add_argument("extra", nargs="*")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        loadgen = build(Path(tmp))
        port = free_port()
        mc = subprocess.Popen(["taskset", "-c", "1", str(BUILD / "stock/bin/memcached"), "-u", "root",
                               "-l", "127.0.0.1", "-p", str(port), "-t", "1", "-U", "0"])
        try:
            wait_for_port(port, mc, 10)
            trace = Path(tmp) / "trace.txt"
            subprocess.run(["taskset", "-c", "0", str(loadgen), "-p", str(port), "-r", str(args.rate),
                            "-d", "4", "-w", "1", "--cpus", "0", "--quiet", *args.extra],
                           env={**os.environ, "TRACE_OUT": str(trace)}, check=True, timeout=60)
        finally:
            mc.terminate()
            mc.wait()
        print(f"rate {args.rate}, loadgen {' '.join(args.extra) or 'defaults'}:")
        analyse(trace, args.late_us * 1e3)


if __name__ == "__main__":
    main()

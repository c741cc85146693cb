#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The amortized LRU's auto budget against the true idle gap, and the p99
# of full-cache slices (2026-11-27-lru-auto-gap.md). The demo's workload:
# memcached -t 1 -m M -o hashpower=18 on CPU 1, loadgen on CPU 0, 200,000
# keys of 500 B preloaded, 90% sets, Poisson arrivals; with and without a
# busy loop on CPU 1 (taskset -c 1 timeout 20 sh -c 'while :; do :; done').
# Run from the build tree, under the bench lock:
#   flock /work/bench.lock sh bench/results/2026-11-27-lru-auto-gap.sh gap
#   flock /work/bench.lock sh bench/results/2026-11-27-lru-auto-gap.sh formula
#   flock /work/bench.lock sh bench/results/2026-11-27-lru-auto-gap.sh p99 ROUNDS
# gap: auto, at 5k/20k/80k req/s, -m 1024 (no evictions) and -m 8, quiet
#   and hog; one 3-s run each. Per run: the worker's true mean sleep from
#   the scheduler's events (perf sched timehist, 1 s of CPU 1), the
#   nominal gap (1/rate minus the worker's CPU per request, from its
#   schedstat), auto's idle_gap_us and budget_now_us, runqueue_permille,
#   and the share of loadgen's sends that were late (> 50 us).
# formula: the same runs without perf, at 5k/20k: the worker's mean sleep
#   over 2 s computed from outside (its /proc schedstat and status) with
#   the old formula (time off the CPU per voluntary switch) and the new
#   one (run-queue wait excluded), beside the server's idle_gap_us and
#   runqueue_permille read at the end of those 2 s.
# p99: 20k req/s, -m 8, stock against the fork with auto, interleaved,
#   ROUNDS runs a side, quiet and hog; per run p99 and mean (us), errors
#   (sets that failed), and the worker's run-queue share, CPU per request
#   and times run per second (its schedstat); then medians and ratios.
set -eu
MODE=${1:?gap, formula or p99}; ROUNDS=${2:-6}
FORK=${FORK:-build/fork/bin/memcached}; STOCK=${STOCK:-build/stock/bin/memcached}
LOADGEN=${LOADGEN:-bench/loadgen/loadgen}; PORT=${PORT:-11331}
exec python3 - "$MODE" "$ROUNDS" "$FORK" "$STOCK" "$LOADGEN" "$PORT" <<'PY'
import glob, json, os, socket, statistics, subprocess, sys, tempfile, time

mode, rounds, fork, stock, loadgen, port = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
port = int(port)
USER = ["-u", "root"] if os.geteuid() == 0 else []


def ask(cmd):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(cmd.encode() + b"\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return {l.split()[1]: l.split()[2] for l in buf.decode().splitlines() if l.startswith("STAT ")}


def worker_schedstat(pid):
    for comm in glob.glob(f"/proc/{pid}/task/*/comm"):
        if open(comm).read().strip() == "mc-worker":
            on, wait, slices = open(comm[:-4] + "schedstat").read().split()
            vol = [l for l in open(comm[:-4] + "status") if l.startswith("voluntary_ctxt")]
            return int(on), int(wait), int(slices), int(vol[0].split()[1])
    raise SystemExit("no mc-worker thread")


def perf_sleeps():
    """The worker's true mean sleep over 1 s of CPU 1, from the scheduler's
    own events: perf sched timehist's "wait time" (asleep until woken,
    excluding the run-queue wait after the wake-up) per sleep."""
    data = tempfile.mktemp(suffix=".perf")
    subprocess.run(["perf", "sched", "record", "-q", "-C", "1", "-o", data, "--", "sleep", "1"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    out = subprocess.run(["perf", "sched", "timehist", "-i", data], capture_output=True,
                         text=True).stdout
    os.unlink(data)
    waits = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 6 and f[2].startswith("mc-worker["):
            waits.append(float(f[3]) * 1000)  # ms -> us
    slept = [w for w in waits if w > 0]
    return (statistics.mean(slept) if slept else 0.0, len(slept))


def run(exe, mem, rate, hog, knob):
    opts = "hashpower=18" + (",lru_amortized_budget_us=auto" if knob else "")
    srv = subprocess.Popen(["taskset", "-c", "1", exe, "-t", "1", "-m", str(mem), "-U", "0",
                            "-l", "127.0.0.1", "-p", str(port), "-o", opts] + USER)
    time.sleep(0.5)
    out = tempfile.mktemp(suffix=".json")
    lg = ["taskset", "-c", "0", loadgen, "-p", str(port), "-r", str(rate), "-w", "1s",
          "-d", "3s", "--keys", "200000", "--value-size", "500", "--get-ratio", "0.1",
          "--preload", "-q", "--json", out]
    hogp = None
    try:
        if hog:
            hogp = subprocess.Popen(["taskset", "-c", "1", "timeout", "20", "sh", "-c",
                                     "while :; do :; done"])
        # The worker's CPU per request over the measured part: sampled by
        # a helper while loadgen runs (preload + warm-up are excluded by
        # starting after 2 s of them and stopping before the end).
        lgp = subprocess.Popen(lg)
        while True:
            time.sleep(0.1)
            st = ask("stats")
            if int(st.get("cmd_set", 0)) >= 200000:
                break
        time.sleep(1.2)
        st0, ss0, t0 = ask("stats"), worker_schedstat(srv.pid), time.monotonic()
        sleeps = perf_sleeps() if mode == "gap" else (0.0, 0)
        time.sleep(max(0.0, 2.0 - (time.monotonic() - t0)))
        st1, ss1, t1 = ask("stats"), worker_schedstat(srv.pid), time.monotonic()
        la = ask("stats lru_amortized") if knob else {}
        lgp.wait()
        rep = json.load(open(out))
    finally:
        if hogp:
            # SIGTERM, which timeout passes on to the loop; a SIGKILL would
            # leave the loop running without its timeout.
            hogp.terminate()
            hogp.wait()
        srv.kill()
        srv.wait()
        if os.path.exists(out):
            os.unlink(out)
    reqs = sum(int(st1[k]) - int(st0[k]) for k in ("cmd_get", "cmd_set"))
    cpu_per_req = (ss1[0] - ss0[0]) / max(reqs, 1) / 1000
    return {
        "rate": rate, "mem": mem, "hog": hog,
        "served": reqs / (t1 - t0),
        "svc_us": cpu_per_req,
        "runq_ext": (ss1[1] - ss0[1]) / ((t1 - t0) * 1e9) * 1000,
        "runs_per_s": (ss1[2] - ss0[2]) / (t1 - t0),
        "sleeps_per_s": (ss1[3] - ss0[3]) / (t1 - t0),
        # The worker's mean sleep over the same 2 s, from outside: the old
        # formula (time off the CPU per voluntary switch) and the new one
        # (run-queue wait excluded).
        "old_gap_us": ((t1 - t0) * 1e9 - (ss1[0] - ss0[0])) / max(ss1[3] - ss0[3], 1) / 1000,
        "new_gap_us": ((t1 - t0) * 1e9 - (ss1[0] - ss0[0]) - (ss1[1] - ss0[1]))
                      / max(ss1[3] - ss0[3], 1) / 1000,
        "nominal_gap_us": max(1e6 / rate - cpu_per_req, 0.0),
        "true_gap_us": sleeps[0], "sleeps": sleeps[1],
        "late": rep["counts"]["late"] / max(rep["counts"]["sent"], 1),
        "idle_period_us": 1e6 / rate,
        "est_gap_us": int(la.get("idle_gap_us", 0)),
        "budget_us": int(la.get("budget_now_us", 0)),
        "runq_permille": int(la.get("runqueue_permille", 0)),
        "p99_us": rep["latency_scheduled"]["p99"] / 1000,
        "mean_us": rep["latency_scheduled"]["mean"] / 1000,
        "errors": rep["counts"]["errors"],
        "evictions": int(st1.get("evictions", 0)),
    }


if mode == "gap":
    print("| rate | -m | hog | served/s | loadgen late | CPU/req us | 1/rate - CPU/req us "
          "| true mean sleep us (sleeps/s) | idle_gap_us | budget us | budget/(true/4) "
          "| runqueue_permille (schedstat) | evictions |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mem in (1024, 8):
        for rate in (5000, 20000, 80000):
            for hog in (False, True):
                r = run(fork, mem, rate, hog, True)
                ratio = r["budget_us"] / (r["true_gap_us"] / 4) if r["true_gap_us"] else float("inf")
                print(f"| {rate} | {mem} | {'yes' if hog else 'no'} | {r['served']:.0f} "
                      f"| {r['late']:.0%} | {r['svc_us']:.1f} | {r['nominal_gap_us']:.1f} "
                      f"| {r['true_gap_us']:.1f} ({r['sleeps']}) | {r['est_gap_us']} "
                      f"| {r['budget_us']} | {ratio:.2f} | {r['runq_permille']} ({r['runq_ext']:.0f}) "
                      f"| {r['evictions']} |", flush=True)
elif mode == "formula":
    print("| rate | -m | hog | served/s | loadgen late | worker runq permille | sleeps/s "
          "| old formula us | new formula us | idle_gap_us (server) | budget us | runqueue_permille (server) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for mem in (1024, 8):
        for rate in (5000, 20000):
            for hog in (False, True):
                r = run(fork, mem, rate, hog, True)
                print(f"| {rate} | {mem} | {'yes' if hog else 'no'} | {r['served']:.0f} | {r['late']:.0%} "
                      f"| {r['runq_ext']:.0f} | {r['sleeps_per_s']:.0f} | {r['old_gap_us']:.0f} "
                      f"| {r['new_gap_us']:.0f} | {r['est_gap_us']} | {r['budget_us']} "
                      f"| {r['runq_permille']} |", flush=True)
elif mode == "p99":
    for hog in (False, True):
        res = {"stock": [], "auto": []}
        for i in range(rounds):
            for side in ("stock", "auto"):
                r = run(stock if side == "stock" else fork, 8, 20000, hog, side == "auto")
                res[side].append(r)
                print(f"hog={hog} round={i} {side}: p99 {r['p99_us']:.0f} mean {r['mean_us']:.0f} "
                      f"errors {r['errors']} budget {r['budget_us']} gap {r['est_gap_us']} "
                      f"worker: runq {r['runq_ext']:.0f} permille, CPU/req {r['svc_us']:.1f} us, "
                      f"{r['runs_per_s']:.0f} runs/s", flush=True)
        med = {s: (statistics.median(x["p99_us"] for x in v), statistics.median(x["mean_us"] for x in v))
               for s, v in res.items()}
        print(f"hog={hog}: {rounds} runs a side; median p99 stock {med['stock'][0]:.0f} auto "
              f"{med['auto'][0]:.0f} (x{med['auto'][0] / med['stock'][0]:.2f}); median mean stock "
              f"{med['stock'][1]:.0f} auto {med['auto'][1]:.0f} (x{med['auto'][1] / med['stock'][1]:.2f})",
              flush=True)
else:
    raise SystemExit(f"mode {mode}: expected gap, formula or p99")
PY

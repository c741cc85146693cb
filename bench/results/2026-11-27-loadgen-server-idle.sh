#!/bin/sh
# loadgen's schedule error and send() time against stock memcached -t 1
# with the server vCPU's idle halt-polling off (this VM's setting) and on,
# each with --coalesce off (the default) and on, runs interleaved
# (2026-11-27-loadgen-server-idle.md). Needs root and the haltpoll cpuidle
# driver; restores the parameter on exit. Run from the build tree, under
# the bench lock:
#   flock /work/bench.lock sh bench/results/2026-11-27-loadgen-server-idle.sh RATE ROUNDS
# Prints one line per run (in us: schedule error p50/p90/p99, the loop's own
# p99, the perfect sender's p99, latency from the schedule p50/p99; held
# requests; the running median send()) and the medians per configuration.
set -eu
RATE=${1:?rate}; ROUNDS=${2:?rounds}; PORT=${PORT:-11297}; POLL_NS=${POLL_NS:-200000}
LOADGEN=${LOADGEN:-bench/loadgen/loadgen}; MEMCACHED=${MEMCACHED:-build/stock/bin/memcached}
PARAM=/sys/module/haltpoll/parameters/guest_halt_poll_ns
[ -w "$PARAM" ] || { echo "$PARAM: not writable (needs root and the haltpoll driver)" >&2; exit 1; }
SAVED=$(cat "$PARAM")
OUT=$(mktemp -d)
taskset -c 1 "$MEMCACHED" -t 1 -U 0 -p "$PORT" -u root & MC=$!
trap 'kill $MC; echo "$SAVED" > "$PARAM"; rm -rf "$OUT"' EXIT
sleep 1
for i in $(seq 1 "$ROUNDS"); do
    for poll in 0 "$POLL_NS"; do
        for c in off on; do
            echo "$poll" > "$PARAM"
            taskset -c 0 "$LOADGEN" -r "$RATE" -d 3 -w 0.5 -p "$PORT" --coalesce $c --json "$OUT/r.json" -q
            python3 - "$OUT/r.json" "poll=$poll,coalesce=$c" >> "$OUT/runs" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s, l, p, lat = j["schedule_error"], j["loop_lateness"], j["perfect_sender"], j["latency_scheduled"]
us = [x / 1e3 for x in (s["p50"], s["p90"], s["p99"], l["p99"], p["p99"], lat["p50"], lat["p99"])]
print(sys.argv[2], *(f"{x:.1f}" for x in us), j["counts"]["held"], j["cpu"]["threads"][0]["send_p50_us"])
PY
        done
    done
done
cat "$OUT/runs"
python3 - "$OUT/runs" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
names = ["err50", "err90", "err99", "own99", "perfect99", "lat50", "lat99", "held", "send50"]
print("medians".ljust(28) + "".join(n.rjust(10) for n in names))
for key in dict.fromkeys(r[0] for r in rows):
    cols = zip(*[map(float, r[1:]) for r in rows if r[0] == key])
    print(key.ljust(28) + "".join(f"{st.median(c):10.1f}" for c in cols))
PY

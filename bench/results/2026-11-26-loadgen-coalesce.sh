#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# loadgen --coalesce on against off, paired runs against stock memcached -t 1
# (2026-11-26-loadgen-coalesce.md). Run from the build tree, under the
# bench lock: flock /work/bench.lock sh bench/results/2026-11-26-loadgen-coalesce.sh RATE PAIRS
# Prints one line per run (schedule error p50/p90/p99, the loop's own p99,
# the perfect sender's p99, latency from the schedule p50/p99, all in ns;
# held requests; the running median send() in us) and the paired summary.
set -eu
RATE=${1:?rate}; PAIRS=${2:?pairs}; PORT=${PORT:-11298}
LOADGEN=${LOADGEN:-bench/loadgen/loadgen}; MEMCACHED=${MEMCACHED:-build/stock/bin/memcached}
OUT=$(mktemp -d)
taskset -c 1 "$MEMCACHED" -t 1 -U 0 -p "$PORT" -u root & MC=$!
trap 'kill $MC; rm -rf "$OUT"' EXIT
sleep 1
for i in $(seq 1 "$PAIRS"); do
    for c in on off; do
        taskset -c 0 "$LOADGEN" -r "$RATE" -d 3 -w 0.5 -p "$PORT" --coalesce $c --json "$OUT/$c.json" -q
        python3 - "$OUT/$c.json" $c $i >> "$OUT/runs" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s, l, p, lat = j["schedule_error"], j["loop_lateness"], j["perfect_sender"], j["latency_scheduled"]
print(sys.argv[2], sys.argv[3], s["p50"], s["p90"], s["p99"], l["p99"], p["p99"], lat["p50"], lat["p99"],
      j["counts"]["held"], j["cpu"]["threads"][0]["send_p50_us"])
PY
    done
done
cat "$OUT/runs"
python3 - "$OUT/runs" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
side = {k: [list(map(float, r[2:])) for r in rows if r[0] == k] for k in ("on", "off")}
names = ["err50", "err90", "err99", "own99", "perfect99", "lat50", "lat99", "held", "send50"]
for k, n in enumerate(names):
    a, b = [x[k] for x in side["on"]], [x[k] for x in side["off"]]
    ratios = [x / y for x, y in zip(a, b) if y > 0]
    ratio = f"{st.median(ratios):.2f}" if ratios else "-"
    print(f"{n:10s} on {st.median(a):10.1f} off {st.median(b):10.1f}  paired ratio median {ratio}"
          f"  on<off in {sum(x < y for x, y in zip(a, b))}/{len(a)}")
PY

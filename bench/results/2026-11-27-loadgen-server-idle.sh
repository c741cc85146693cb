#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# loadgen against memcached -t 1 with the server vCPU's idle halt-polling
# off (this VM's setting) and on, runs interleaved
# (2026-11-27-loadgen-server-idle.md). Root only: it writes haltpoll's
# guest_halt_poll_ns and puts the old value back on exit. Run from the
# build tree, under the bench lock:
#   flock /work/bench.lock sh bench/results/2026-11-27-loadgen-server-idle.sh schedule RATE ROUNDS
#   flock /work/bench.lock sh bench/results/2026-11-27-loadgen-server-idle.sh stages RATE ROUNDS
# schedule: stock memcached, each setting with --coalesce off (the default)
#   and on; per run, in us: schedule error p50/p90/p99, the loop's own p99,
#   the perfect sender's p99, latency from the schedule p50/p99; then held
#   requests and the running median send().
# stages: the fork, every request traced; per run, in us: kernel_to_read,
#   read_to_parse, parse_to_response and server_total p50/p99, and
#   loadgen's latency from the send p50.
# Then the medians per configuration.
set -eu
MODE=${1:?schedule or stages}; RATE=${2:?rate}; ROUNDS=${3:?rounds}
PORT=${PORT:-11297}; POLL_NS=${POLL_NS:-200000}; LOADGEN=${LOADGEN:-bench/loadgen/loadgen}
case $MODE in
schedule) MEMCACHED=${MEMCACHED:-build/stock/bin/memcached}; TRACE=; SIDES="off on"; WARMUP=0.5 ;;
stages) MEMCACHED=${MEMCACHED:-build/fork/bin/memcached}; TRACE="-o stage_trace,stage_trace_sample=1"; SIDES=off; WARMUP=0 ;;
*) echo "mode $MODE: expected schedule or stages" >&2; exit 2 ;;
esac
PARAM=/sys/module/haltpoll/parameters/guest_halt_poll_ns
[ -w "$PARAM" ] || { echo "$PARAM: not writable (needs root and the haltpoll driver)" >&2; exit 1; }
SAVED=$(cat "$PARAM")
OUT=$(mktemp -d)
# shellcheck disable=SC2086
taskset -c 1 "$MEMCACHED" -t 1 -U 0 -p "$PORT" -u root $TRACE & MC=$!
trap 'kill $MC; echo "$SAVED" > "$PARAM"; rm -rf "$OUT"' EXIT
sleep 1

ask() {
    python3 - "$PORT" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(sys.argv[2].encode() + b"\r\n")
buf = b""
while not (buf.endswith(b"END\r\n") or buf.endswith(b"RESET\r\n")):
    buf += s.recv(65536)
print(buf.decode(), end="")
PY
}

schedule_row() {
    python3 - "$OUT/r.json" "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
s, l, p, lat = j["schedule_error"], j["loop_lateness"], j["perfect_sender"], j["latency_scheduled"]
us = [x / 1e3 for x in (s["p50"], s["p90"], s["p99"], l["p99"], p["p99"], lat["p50"], lat["p99"])]
print(sys.argv[2], *(f"{x:.1f}" for x in us), j["counts"]["held"], j["cpu"]["threads"][0]["send_p50_us"])
PY
}

stages_row() {
    ask "stats stages" > "$OUT/stages"
    python3 - "$OUT/r.json" "$OUT/stages" "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
st = dict(l.split()[1:3] for l in open(sys.argv[2]) if l.startswith("STAT "))
cols = [float(st[f"{s}:{q}_ns"]) / 1e3 for s in ("kernel_to_read", "read_to_parse", "parse_to_response", "server_total")
        for q in ("p50", "p99")]
print(sys.argv[3], *(f"{c:.1f}" for c in cols), f"{j['latency_sent']['p50'] / 1e3:.1f}")
PY
}

for i in $(seq 1 "$ROUNDS"); do
    for poll in 0 "$POLL_NS"; do
        for c in $SIDES; do
            echo "$poll" > "$PARAM"
            [ "$MODE" = stages ] && ask "stats reset" > /dev/null
            taskset -c 0 "$LOADGEN" -r "$RATE" -d 3 -w "$WARMUP" -p "$PORT" --coalesce $c --json "$OUT/r.json" -q
            ${MODE}_row "poll=$poll,coalesce=$c" >> "$OUT/runs"
        done
    done
done
cat "$OUT/runs"
python3 - "$OUT/runs" "$MODE" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
names = {"schedule": ["err50", "err90", "err99", "own99", "perfect99", "lat50", "lat99", "held", "send50"],
         "stages": ["k2r50", "k2r99", "r2p50", "r2p99", "p2r50", "p2r99", "total50", "total99", "sent50"]}
print("medians".ljust(28) + "".join(n.rjust(10) for n in names[sys.argv[2]]))
for key in dict.fromkeys(r[0] for r in rows):
    cols = zip(*[map(float, r[1:]) for r in rows if r[0] == key])
    print(key.ljust(28) + "".join(f"{st.median(c):10.1f}" for c in cols))
PY

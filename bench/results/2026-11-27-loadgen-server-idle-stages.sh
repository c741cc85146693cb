#!/bin/sh
# Where the halted vCPU's wake-up shows in the memcached fork's stages:
# every request traced (-o stage_trace,stage_trace_sample=1), loadgen at
# RATE with the server vCPU's halt-polling off and on, interleaved
# (2026-11-27-loadgen-server-idle.md). Root only; restores the parameter.
#   flock /work/bench.lock sh bench/results/2026-11-27-loadgen-server-idle-stages.sh RATE ROUNDS
# Prints per run, in us: the stages' p50 and p99 (kernel_to_read,
# read_to_parse, parse_to_response, server_total) and loadgen's latency
# from the send p50; then the medians per setting.
set -eu
RATE=${1:?rate}; ROUNDS=${2:?rounds}; PORT=${PORT:-11296}; POLL_NS=${POLL_NS:-200000}
LOADGEN=${LOADGEN:-bench/loadgen/loadgen}; MEMCACHED=${MEMCACHED:-build/fork/bin/memcached}
PARAM=/sys/module/haltpoll/parameters/guest_halt_poll_ns
[ -w "$PARAM" ] || { echo "$PARAM: not writable (needs root and the haltpoll driver)" >&2; exit 1; }
SAVED=$(cat "$PARAM")
OUT=$(mktemp -d)
taskset -c 1 "$MEMCACHED" -t 1 -U 0 -p "$PORT" -u root -o stage_trace,stage_trace_sample=1 & MC=$!
trap 'kill $MC; echo "$SAVED" > "$PARAM"; rm -rf "$OUT"' EXIT
sleep 1
stats() {
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
for i in $(seq 1 "$ROUNDS"); do
    for poll in 0 "$POLL_NS"; do
        echo "$poll" > "$PARAM"
        stats "stats reset" > /dev/null
        taskset -c 0 "$LOADGEN" -r "$RATE" -d 3 -w 0 -p "$PORT" --json "$OUT/r.json" -q
        stats "stats stages" > "$OUT/stages"
        python3 - "$OUT/r.json" "$OUT/stages" "poll=$poll" >> "$OUT/runs" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
st = dict(l.split()[1:3] for l in open(sys.argv[2]) if l.startswith("STAT "))
cols = [float(st[f"{s}:{q}_ns"]) / 1e3 for s in ("kernel_to_read", "read_to_parse", "parse_to_response", "server_total")
        for q in ("p50", "p99")]
print(sys.argv[3], *(f"{c:.1f}" for c in cols), f"{j['latency_sent']['p50'] / 1e3:.1f}")
PY
    done
done
cat "$OUT/runs"
python3 - "$OUT/runs" <<'PY'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
names = ["k2r50", "k2r99", "r2p50", "r2p99", "p2r50", "p2r99", "total50", "total99", "sent50"]
print("medians".ljust(14) + "".join(n.rjust(9) for n in names))
for key in dict.fromkeys(r[0] for r in rows):
    cols = zip(*[map(float, r[1:]) for r in rows if r[0] == key])
    print(key.ljust(14) + "".join(f"{st.median(c):9.1f}" for c in cols))
PY

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The syscalls a memcached server makes over a 2-s drive at RATE req/s
# (the --cpu-cost workload without evictions: -t 1 -m 1024, 200,000
# keys of 500 B preloaded, 90% sets), counted by bpftrace, then the
# server's `stats lru_amortized` before and after the drive if it has it.
# Usage, from the repository after make, as root:
#   sh bench/results/2026-11-27-lru-cpu-cost-syscalls.sh build/stock/bin/memcached 80000
#   sh bench/results/2026-11-27-lru-cpu-cost-syscalls.sh build/fork/bin/memcached 80000 -o lru_amortized_budget_us=auto
set -eu
bin=$1; rate=$2; shift 2
port=22199
lg=bench/loadgen/loadgen
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
stats() {
    python3 -c 'import socket,sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"stats lru_amortized\r\n")
b = b""
while not (b.endswith(b"END\r\n") or b.endswith(b"ERROR\r\n")):
    b += s.recv(65536)
sys.stdout.write(b.decode())' "$port"
}
taskset -c 1 "$bin" -u root -U 0 -l 127.0.0.1 -p "$port" -t 1 -m 1024 -o hashpower=18 "$@" &
pid=$!
sleep 0.5
taskset -c 0 "$lg" -p "$port" --cpus 0 -c 1 --keys 200000 --key-size 20 --value-size 500 \
    --get-ratio 0.1 --preload -r 1000 -d 0.01s --quiet
stats > "$work/before"
timeout 30 bpftrace -e "tracepoint:raw_syscalls:sys_enter /pid == $pid/ { @[args->id] = count(); }
    interval:s:4 { exit(); }" > "$work/syscalls" 2>&1 &
bt=$!
sleep 1
taskset -c 0 "$lg" -p "$port" --cpus 0 -c 1 --keys 200000 --key-size 20 --value-size 500 \
    --get-ratio 0.1 -r "$rate" -a exp -d 2s --quiet
wait "$bt"
stats > "$work/after"
kill "$pid"
wait "$pid" 2>/dev/null || true
echo "syscalls over 4 s around the drive (x86-64 numbers): count"
grep '^@' "$work/syscalls" | tr -d '@[]' | sort -t: -k2 -n -r
echo "stats lru_amortized: before, after"
paste "$work/before" "$work/after" | awk 'NF >= 6 { print $2, $3, $6 }'

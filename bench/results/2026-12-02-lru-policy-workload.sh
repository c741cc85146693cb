#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Issue 45, workload W3 (LRU policy), shown once: stock memcached with its
# segmented LRU against stock -o no_lru_maintainer (flat LRU), under a hot
# set read beneath a stream of keys set once. Prints each side's hit ratio
# (get_hits / cmd_get) every 10 s and over the whole run.
# Usage: bench/results/2026-12-02-lru-policy-workload.sh OUTDIR
# (STAGEVAR_BUILD: the build with stock/bin/memcached; LOADGEN: loadgen.)
set -euo pipefail

out=${1:?usage: $0 OUTDIR}
build=${STAGEVAR_BUILD:-$PWD/build}
loadgen=${LOADGEN:-$PWD/bench/loadgen/loadgen}
memcached=$build/stock/bin/memcached
seconds=${W3_SECONDS:-120}
mkdir -p "$out"

# W3's parameters (2026-12-02-lru-policy-workload.md states why).
server_args=(-t 1 -m 8 -U 0 -c 1024)
[ "$(id -u)" = 0 ] && server_args+=(-u nobody)   # memcached will not run as root without -u
load_args=(-r 20000 -w 1s -d "${seconds}s" --keys 10000 --key-size 30 --value-size 100
           --preload --get-ratio 0.99 --stream 0.1 --popularity uniform --seed 45)

# "stats" from the server on $1, as name value lines.
stats() {
    (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'stats%s\r\nquit\r\n' "${2:+ $2}" >&3 &&
        timeout 10 tr -d '\r' <&3 | awk '$1 == "STAT" { print $2, $3 }')
}

stat_of() { awk -v k="$1" '$1 == k { print $2 }'; }

sample() {  # $1 port, $2 seconds since start: one line of the time course
    local s; s=$(stats "$1")
    printf '%s %s %s %s %s\n' "$2" "$(stat_of cmd_get <<<"$s")" "$(stat_of get_hits <<<"$s")" \
        "$(stat_of evictions <<<"$s")" "$(stat_of curr_items <<<"$s")"
}

run_side() {  # $1 name, $2 port, the rest: extra server options
    local name=$1 port=$2; shift 2
    taskset -c 1 "$memcached" -p "$port" "${server_args[@]}" "$@" &
    local mc=$!
    for _ in $(seq 50); do stats "$port" >/dev/null 2>&1 && break; sleep 0.1; done
    stats "$port" | grep -E '^(version|pid) ' >"$out/$name.server"
    stats "$port" settings | grep -E '^(lru_segmented|lru_maintainer_thread) ' >>"$out/$name.server"
    taskset -c 0 "$loadgen" -p "$port" "${load_args[@]}" -q --json "$out/$name.json" &
    local lg=$! t=0
    echo "t_s cmd_get get_hits evictions curr_items" >"$out/$name.tsv"
    while kill -0 "$lg" 2>/dev/null; do
        sample "$port" "$t" >>"$out/$name.tsv"
        sleep 10; t=$((t + 10))
    done
    wait "$lg"
    sample "$port" end >>"$out/$name.tsv"
    kill "$mc"; wait "$mc" || true
    awk -v side="$name" 'NR > 1 { g[NR] = $2; h[NR] = $3; t[NR] = $1; n = NR }
        END { for (i = 3; i <= n; i++) if (g[i] > g[i-1])
                  printf "%s %s..%s s: hit ratio %.4f\n", side, t[i-1], t[i], (h[i]-h[i-1])/(g[i]-g[i-1]);
              printf "%s whole run: hit ratio %.4f (%d gets)\n", side, h[n]/g[n], g[n] }' "$out/$name.tsv"
}

run_side segmented 21945
run_side flat 21946 -o no_lru_maintainer

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The shared-CPU condition with the busy loop in its own scheduling group:
# a session of its own (setsid), so autogroup puts it in a task group
# apart from the server's, as systemd's cgroups put a neighbour service.
# `stagevar compare --hog` starts its loop in the server's session (one
# group: the loop competes with each memcached thread as a peer).
# Usage: sh bench/results/2026-11-27-lru-hog-groups.sh OUTDIR [RUNS]   (from the repository, after make)
set -eu
out=$1; runs=${2:-8}
mkdir -p "$out"
stagevar=${STAGEVAR:-.venv/bin/stagevar}
# setsid runs in the background job itself (it is no group leader there),
# so $! is the loop's timeout, which passes a kill on to the loop.
setsid timeout 900 taskset -c 1 python3 -c 'while 1: pass' 2>/dev/null &
hog=$!
stop_hog() { kill "$hog" 2>/dev/null || true; }
trap stop_hog EXIT INT TERM
sleep 0.5
"$stagevar" compare --name demo-workload-own-group --level stock=stock --level auto=fork \
  --server-args '*=-t 1 -m 8' --server-args 'auto=-o lru_amortized_budget_us=auto' \
  --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
  --loads 20000 --runs "$runs" --duration 3s --warmup 2s --server-cpus 1 --client-cpus 0 \
  --out "$out/own-group.json.gz"
"$stagevar" analyze "$out/own-group.json.gz" --no-qr
stop_hog
# The same loop in the server's session, for comparison in the same hour.
"$stagevar" compare --name demo-workload-same-group --level stock=stock --level auto=fork \
  --server-args '*=-t 1 -m 8' --server-args 'auto=-o lru_amortized_budget_us=auto' \
  --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
  --loads 20000 --runs "$runs" --duration 3s --warmup 2s --server-cpus 1 --client-cpus 0 \
  --hog 100 --out "$out/same-group.json.gz"
"$stagevar" analyze "$out/same-group.json.gz" --no-qr

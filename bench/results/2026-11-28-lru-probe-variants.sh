#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Builds the variants of the fork that 2026-11-28-lru-cpu-cost.md
# compares, each a copy of the built fork tree with one edit, into DIR:
#   DIR/before/memcached   the slice probes as before this change: also in
#                          the last probe interval of a slice
#   DIR/noprobe/memcached  slices never probe (run to their budget)
#   DIR/p10/memcached      probes every 10 us instead of 5 (as before otherwise)
# then compares the server's CPU per request at 80k req/s with no
# evictions (16 repetitions), and the latency of the demo's workload
# (20k req/s, an 8 MB cache that evicts) before and after (20).
# Usage, from the repository after make: sh bench/results/2026-11-28-lru-probe-variants.sh DIR
set -eu
mkdir -p "$1"
dir=$(cd "$1" && pwd)
src=build/src/memcached-fork
variant() {
    rm -rf "$dir/$1"
    cp -a "$src" "$dir/$1"
    (cd "$dir/$1" && sh -c "$2" && make -j2 memcached >/dev/null)
}
unskip='sed -i "/s->deadline - s->now > LRU_SLICE_PROBE_NS) {/d; s/s->now - s->start >= s->min_progress \&\&$/s->now - s->start >= s->min_progress) {/" lru_amortized_slice.c'
variant before "$unskip"
variant noprobe 'sed -i "s/s.input_ready = input_ready;/s.input_ready = NULL;/" lru_amortized.c'
variant p10 "$unskip"' && sed -i "s/#define LRU_SLICE_PROBE_NS 5000ULL/#define LRU_SLICE_PROBE_NS 10000ULL/" lru_amortized_slice.h'
grep -q "min_progress) {" "$dir/before/lru_amortized_slice.c"
auto=lru_amortized_budget_us=auto
cd bench
export STAGEVAR_BUILD=../build STAGEVAR_LOADGEN=loadgen/loadgen
run() { ../.venv/bin/python ../bench/results/2026-11-28-lru-probe-variants.py "$@"; }
run 80000 16 stock:../build/stock/bin/memcached auto:../build/fork/bin/memcached:$auto \
    before:"$dir/before/memcached":$auto noprobe:"$dir/noprobe/memcached":$auto p10:"$dir/p10/memcached":$auto
run --latency --memory 8 20000 20 stock:../build/stock/bin/memcached \
    auto:../build/fork/bin/memcached:$auto before:"$dir/before/memcached":$auto

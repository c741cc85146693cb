#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runs of bench/results/2026-12-07-busy-loop-stages.md: `stagevar
# profile` (every request traced) of the fork with its knobs off, with
# -o no_lru_maintainer and with -o hot_lru_pct=0, beside a busy loop on
# the server's CPU, the demo's workload at 20k req/s; ROUNDS rounds in
# rotated order. Usage, from the repository after make (as root):
#   sh bench/results/2026-12-07-busy-loop-stages.sh ROUNDS OUT_DIR
set -eu
rounds=${1:?usage: $0 ROUNDS OUT_DIR}
out=${2:?usage: $0 ROUNDS OUT_DIR}
sv=${STAGEVAR:-.venv/bin/stagevar}
mkdir -p "$out"
profile() {  # NAME OPTIONS ROUND
    "$sv" profile --hog 100 --server-cpus 1 --client-cpus 0 --rate 20000 \
        --duration 3s --warmup 2s --seed "$((47 + $3))" --server-args "-t 1 -m 8 $2" \
        --client-args '-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
        --json "$out/$1-$3.json" > "$out/$1-$3.txt"
}
r=0
while [ "$r" -lt "$rounds" ]; do
    case $((r % 3)) in
        0) order="off no_lru hot0" ;;
        1) order="no_lru hot0 off" ;;
        2) order="hot0 off no_lru" ;;
    esac
    for side in $order; do
        case $side in
            off) profile off "" "$r" ;;
            no_lru) profile no_lru_maintainer "-o no_lru_maintainer" "$r" ;;
            hot0) profile hot0 "-o hot_lru_pct=0" "$r" ;;
        esac
    done
    r=$((r + 1))
done

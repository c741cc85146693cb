#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runs of bench/results/2026-12-04-lru-hot0.md: the fork's
# -o hot_lru_pct=0 (topic lru-cold-insert) beside the options a user
# has, on the grid's three workloads. Usage, from the repository after
# make (as root, for the server's -u):
#   sh bench/results/2026-12-04-lru-hot0.sh W1|W2|W3 OUT_DIR
set -eu
usage="usage: $0 W1|W2|W3 OUT_DIR"
w=${1:?$usage}
out=${2:?$usage}
sv=${STAGEVAR:-.venv/bin/stagevar}
mkdir -p "$out"

compare() {   # server args, client args, load, runs, duration, warm-up
    # no_lru_maintainer first: the baseline, what a user already runs
    "$sv" compare --name "$w" \
      --level no_lru_maintainer=stock --level stock=stock --level fork=fork \
      --level hot0=fork --level hot0-budget10=fork \
      --server-args 'no_lru_maintainer=-o no_lru_maintainer' \
      --server-args 'hot0=-o hot_lru_pct=0' \
      --server-args 'hot0-budget10=-o hot_lru_pct=0,lru_amortized_budget_us=10' \
      --server-args "*=$1" --client-args "*=$2" --loads "$3" --runs "$4" \
      --duration "$5" --warmup "$6" --seed 46 --server-cpus 1 --client-cpus 0 \
      --out "$out/$w.json.gz"
    "$sv" analyze "$out/$w.json.gz" --no-qr > "$out/$w-analyze.txt"
    "$sv" advise "$out/$w.json.gz" --metric p90 > "$out/$w-advise.txt"
}

case $w in
W1) compare '-t 1 -m 8' '-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
        200000 16 3s 2s ;;
W2) compare '-t 1 -m 32' \
        '-c 8 --keys 300000 --key-size etc --value-size etc --get-ratio 0.97 --popularity zipf:0.99 --preload' \
        96000 16 3s 2s ;;
W3) compare '-t 1 -m 8 -U 0 -c 1024' \
        '-c 1 --keys 10000 --key-size 30 --value-size 100 --preload --get-ratio 0.99 --stream 0.1 --popularity uniform' \
        225000 2 90s 10s ;;
*) echo "$usage" >&2; exit 2 ;;
esac

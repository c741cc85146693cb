#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The LRU options grid as declared in 2026-12-02-lru-options-grid.md. W1
# (the demo's workload) and W2 (ETC-like): stock's capacity from a pilot,
# every option's capacity from a ladder up to 1.2x it, a pilot at 80% of
# stock's capacity that sizes the equal-rate cells, then those cells at
# 60% and 80%, their analysis and the advisor's answer. W3 (a hot set
# under a stream): stock's capacity, then every option at 50% of it for
# 120 s, 4 runs a level, with analyze and advise. Run alone on the
# machine, from the repository root:
#
#   flock /work/bench.lock sh bench/results/2026-12-02-lru-options-grid.sh OUTDIR [W1|W2|W3]...
set -eu
[ $# -ge 1 ] || { echo "usage: $0 OUTDIR [W1|W2|W3]..." >&2; exit 2; }
out=$1
shift
[ $# -ge 1 ] || set -- W1 W2 W3
mkdir -p "$out"
sv=${STAGEVAR:-.venv/bin/stagevar}
table="${PYTHON:-.venv/bin/python} bench/results/2026-12-02-lru-options-grid-table.py"
run="--server-cpus 1 --client-cpus 0 --duration 1.5 --warmup 0.5 --seed 45"

ladder() {   # ladder FROM STEP TO: the rates FROM, FROM+STEP, ... TO, comma-separated
    seq "$1" "$2" "$3" | paste -sd, -
}

share() {    # share RATE PERCENT: PERCENT of RATE, to the thousand
    echo "$1 $2" | awk '{ printf "%d\n", int($1 * $2 / 100 / 1000 + 0.5) * 1000 }'
}

workload() { # workload NAME SERVER_ARGS CLIENT_ARGS PILOT_LADDER
    w=$1 server=$2 client=$3 pilot=$4
    echo "== $w: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    $sv compare --name "$w-pilot" --level stock=stock $run --server-args "*=$server" \
        --client-args "*=$client" --loads "$pilot" --runs 3 --out "$out/$w-pilot.json.gz"
    stock=$($table stock-capacity "$out/$w-pilot.json.gz" p50-median)
    ceiling=$(share "$stock" 120)
    rates=$(for p in 10 20 30 40 50 60 70 80 90 100; do share "$ceiling" $p; done | paste -sd, -)
    echo "== $w: stock's pilot capacity $stock req/s; the ladder $rates"
    $sv compare --name "$w-ladder" --lru-options --lru-budget 10 $run --server-args "*=$server" \
        --client-args "*=$client" --loads "$rates" --runs 3 --out "$out/$w-ladder.json.gz"
    $table capacity "$out/$w-ladder.json.gz" p50-median > "$out/$w-capacity.md"
    stock=$($table stock-capacity "$out/$w-ladder.json.gz" p50-median)
    r60=$(share "$stock" 60) r80=$(share "$stock" 80)
    $sv compare --name "$w-sizing" --lru-options --lru-budget 10 $run --server-args "*=$server" \
        --client-args "*=$client" --loads "$r80" --runs 6 --out "$out/$w-sizing.json.gz"
    n=$($table runs "$out/$w-sizing.json.gz")
    echo "== $w: stock's capacity $stock req/s; cells at $r60 and $r80, $n runs a side"
    $sv compare --name "$w-cells" --lru-options --lru-budget 10 $run --server-args "*=$server" \
        --client-args "*=$client" --loads "$r60,$r80" --runs "$n" --out "$out/$w-cells.json.gz"
    $sv analyze "$out/$w-cells.json.gz" --no-qr > "$out/$w-cells.txt"
    $sv advise "$out/$w-cells.json.gz" --metric p90 > "$out/$w-advise.txt"
}

policy() {   # policy SERVER_ARGS CLIENT_ARGS: W3, one rate, long runs
    server=$1 client=$2
    echo "== W3: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    $sv compare --name W3-pilot --level stock=stock $run --server-args "*=$server" \
        --client-args "*=$client" --loads "$(ladder 50000 50000 800000)" --runs 3 --out "$out/W3-pilot.json.gz"
    r50=$(share "$($table stock-capacity "$out/W3-pilot.json.gz" p50-median)" 50)
    echo "== W3: every option at $r50 req/s, 4 runs a level of 120 s"
    $sv compare --name W3-cells --lru-options --lru-budget 10 --server-cpus 1 --client-cpus 0 \
        --duration 120 --warmup 10 --seed 45 --server-args "*=$server" --client-args "*=$client" \
        --loads "$r50" --runs 4 --out "$out/W3-cells.json.gz"
    $sv analyze "$out/W3-cells.json.gz" --no-qr > "$out/W3-cells.txt"
    $sv advise "$out/W3-cells.json.gz" --metric p90 > "$out/W3-advise.txt"
}

for w in "$@"; do
    case $w in
        W1) workload W1 "-t 1 -m 8" \
                "-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload" \
                "$(ladder 100000 100000 1400000)" ;;
        W2) workload W2 "-t 1 -m 32" \
                "-c 8 --keys 300000 --key-size etc --value-size etc --get-ratio 0.97 --popularity zipf:0.99 --preload" \
                "$(ladder 50000 50000 800000)" ;;
        W3) policy "-t 1 -m 8 -U 0 -c 1024" \
                "-c 1 --keys 10000 --key-size 30 --value-size 100 --preload --get-ratio 0.99 --stream 0.1 --popularity uniform" ;;
        *) echo "$0: no workload $w (W1, W2 or W3)" >&2; exit 2 ;;
    esac
done

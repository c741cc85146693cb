#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runs of 2026-12-07-lru-grid-w3.md: the LRU grid's W3 (a hot set
# under a stream of items read once) by the rules of
# 2026-12-02-lru-options-grid.md, with the fork's -o hot_lru_pct=0 beside
# stock and stock's -o no_lru_maintainer. Run alone, from the repository
# root after make (as root, for the server's -u):
#
#   flock /work/bench.lock sh bench/results/2026-12-07-lru-grid-w3.sh OUTDIR
set -eu
out=${1:?usage: $0 OUTDIR}
mkdir -p "$out"
sv=${STAGEVAR:-.venv/bin/stagevar}
table="${PYTHON:-.venv/bin/python} bench/results/2026-12-02-lru-options-grid-table.py"
server="-t 1 -m 8 -U 0 -c 1024"
client="-c 1 --keys 10000 --key-size 30 --value-size 100 --preload --get-ratio 0.99 --stream 0.1 --popularity uniform"
place="--server-cpus 1 --client-cpus 0 --seed 45"

echo "== W3: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
$sv compare --name W3-pilot --level stock=stock $place --duration 1.5 --warmup 0.5 \
    --server-args "*=$server" --client-args "*=$client" \
    --loads "$(seq 50000 50000 800000 | paste -sd, -)" --runs 3 --out "$out/W3-pilot.json.gz"
stock=$($table stock-capacity "$out/W3-pilot.json.gz" p50-median)
r50=$(echo "$stock" | awk '{ printf "%d\n", int($1 / 2 / 1000 + 0.5) * 1000 }')
echo "== W3: stock's pilot capacity $stock req/s; three levels at $r50 req/s, 4 runs of 120 s"
$sv compare --name W3-cells --level stock=stock --level stock-no_lru_maintainer=stock \
    --level fork-hot0=fork --server-args 'stock-no_lru_maintainer=-o no_lru_maintainer' \
    --server-args 'fork-hot0=-o hot_lru_pct=0' --server-args "*=$server" \
    --client-args "*=$client" $place --duration 120 --warmup 10 --loads "$r50" --runs 4 \
    --out "$out/W3-cells.json.gz"
$sv analyze "$out/W3-cells.json.gz" --no-qr > "$out/W3-cells.txt"
$sv advise "$out/W3-cells.json.gz" --metric p90 > "$out/W3-advise.txt"

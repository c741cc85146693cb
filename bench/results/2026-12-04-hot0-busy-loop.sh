#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runs of bench/results/2026-12-04-hot0-busy-loop.md: the demo's
# workload at 20k req/s beside a busy loop on the server's CPU; stock,
# stock -o no_lru_maintainer and the fork's -o hot_lru_pct=0, 30 runs a
# level. Usage, from the repository after make (as root):
#   sh bench/results/2026-12-04-hot0-busy-loop.sh OUT_DIR
set -eu
out=${1:?usage: $0 OUT_DIR}
sv=${STAGEVAR:-.venv/bin/stagevar}
mkdir -p "$out"
"$sv" compare --name busy-loop --hog 100 \
  --level stock=stock --level no_lru_maintainer=stock --level hot0=fork \
  --server-args 'no_lru_maintainer=-o no_lru_maintainer' \
  --server-args 'hot0=-o hot_lru_pct=0' --server-args '*=-t 1 -m 8' \
  --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
  --loads 20000 --runs 30 --duration 3s --warmup 2s --seed 47 \
  --server-cpus 1 --client-cpus 0 --out "$out/busy-loop.json.gz"
"$sv" analyze "$out/busy-loop.json.gz" --no-qr > "$out/busy-loop-analyze.txt"

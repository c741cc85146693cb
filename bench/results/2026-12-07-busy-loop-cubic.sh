#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The runs of bench/results/2026-12-07-busy-loop-cubic.md: the busy-loop
# bar's comparison (2026-12-04-hot0-busy-loop.sh's design, with the fork's
# budget 10 as a fourth level) once with TCP congestion control cubic,
# Debian 12's default, and once with bbr, this machine's; the machine's
# setting is restored on exit. Usage, from the repository after make (as root):
#   sh bench/results/2026-12-07-busy-loop-cubic.sh OUT_DIR
set -eu
out=${1:?usage: $0 OUT_DIR}
sv=${STAGEVAR:-.venv/bin/stagevar}
knob=net.ipv4.tcp_congestion_control
was=$(sysctl -n "$knob")
trap 'sysctl -q -w "$knob=$was"' EXIT INT TERM
mkdir -p "$out"
for cc in cubic bbr; do
  sysctl -q -w "$knob=$cc"
  "$sv" compare --name "busy-loop-$cc" --hog 100 \
    --level stock=stock --level no_lru_maintainer=stock --level hot0=fork --level budget10=fork \
    --server-args 'no_lru_maintainer=-o no_lru_maintainer' \
    --server-args 'hot0=-o hot_lru_pct=0' --server-args 'budget10=-o lru_amortized_budget_us=10' \
    --server-args '*=-t 1 -m 8' \
    --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
    --loads 20000 --runs 30 --duration 3s --warmup 2s --seed 47 \
    --server-cpus 1 --client-cpus 0 --out "$out/busy-loop-$cc.json.gz"
  "$sv" analyze "$out/busy-loop-$cc.json.gz" --no-qr > "$out/busy-loop-$cc-analyze.txt"
done

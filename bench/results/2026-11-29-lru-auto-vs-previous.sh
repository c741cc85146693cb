#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# auto now against auto before it had a thread mode (issue 38: "on a quiet
# core, auto is not worse than before this change at the grid's loads").
# The previous fork is the tree at b67835c^, built on its own:
#   git worktree add /work/prevfork b67835c^ && cd /work/prevfork &&
#   ./configure && make -C common && make -C memcached
# Usage, from the repository after make:
#   sh bench/results/2026-11-29-lru-auto-vs-previous.sh PREVIOUS_BUILD OUT.json.gz [RUNS]
# PREVIOUS_BUILD is that tree's build/ (fork/bin/memcached in it). The
# runner knows two variants, so a scratch build tree names the previous
# fork "stock" and this one "fork"; both run with auto, the grid's
# evicting set-up and loads (bench/results/2026-11-29-lru-grid.md).
set -eu
prev=$(cd "${1:?usage: $0 PREVIOUS_BUILD OUT [RUNS]}" && pwd)
out=${2:?usage: $0 PREVIOUS_BUILD OUT [RUNS]}
runs=${3:-8}
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/stock/bin" "$tree/fork/bin"
ln -s "$prev/fork/bin/memcached" "$tree/stock/bin/memcached"
ln -s "$(pwd)/build/fork/bin/memcached" "$tree/fork/bin/memcached"
STAGEVAR_BUILD=$tree .venv/bin/stagevar compare --name auto-vs-previous \
  --server-cpus 1 --client-cpus 0 --duration 1.5 --warmup 0.5 \
  --level previous=stock --level now=fork \
  --server-args '*=-t 1 -m 8 -o lru_amortized_budget_us=auto' \
  --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
  --loads 200000,410000,545000,610000 --arrivals exp --runs "$runs" --seed 39 --out "$out"
.venv/bin/stagevar analyze "$out" --no-qr

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The checks of bench/results/2026-12-04-lru-cold-insert.md. Usage, from
# the repository after make (as root, for the server's -u):
#   sh bench/results/2026-12-04-lru-cold-insert.sh PART OUT_DIR
#   build  a scratch memcached in OUT_DIR/root/fork: the fork's source
#          tree (build/src/memcached-fork) with do_item_alloc() linking a
#          new item into COLD rather than HOT when the LRU is segmented,
#          one line; OUT_DIR/root/stock is build/stock. Never installed,
#          never committed: a diagnostic of what HOT costs.
#   w1     section 1: the demo's workload at 240k req/s, stock -o
#          no_lru_maintainer (the baseline), stock, the scratch build and
#          the scratch build at budget 10, 16 runs a level, interleaved.
#   w3     section 2: a hot set under a stream of items read once (the
#          grid's W3) at 225k req/s, the same four levels, 2 runs of 30 s.
set -eu
usage="usage: $0 build|w1|w3 OUT_DIR"
part=${1:?$usage}
out=${2:?$usage}
stagevar=${STAGEVAR:-.venv/bin/stagevar}
mkdir -p "$out"

build() {
    rm -rf "$out/src" "$out/root"
    cp -a build/src/memcached-fork "$out/src"
    sed -i 's/^        id |= HOT_LRU;$/        id |= COLD_LRU;/' "$out/src/items.c"
    # exactly one line changed: do_item_alloc()'s segmented branch
    [ "$(diff build/src/memcached-fork/items.c "$out/src/items.c" | grep -c '^>')" = 1 ]
    make -C "$out/src" memcached > "$out/build.log" 2>&1
    mkdir -p "$out/root/stock/bin" "$out/root/fork/bin"
    ln -s "$PWD/build/stock/bin/memcached" "$out/root/stock/bin/memcached"
    cp "$out/src/memcached" "$out/root/fork/bin/memcached"
}

compare() {   # name, server args, client args, load, runs, duration, warm-up
    [ -x "$out/root/fork/bin/memcached" ] || { echo "$0: run '$0 build $out' first" >&2; exit 1; }
    # no_lru_maintainer first: the baseline
    STAGEVAR_BUILD="$out/root" "$stagevar" compare --name "$1" \
      --level no_lru_maintainer=stock --level stock=stock \
      --level cold-insert=fork --level cold-insert-budget10=fork \
      --server-args 'no_lru_maintainer=-o no_lru_maintainer' \
      --server-args 'cold-insert-budget10=-o lru_amortized_budget_us=10' \
      --server-args "*=$2" --client-args "*=$3" --loads "$4" --runs "$5" \
      --duration "$6" --warmup "$7" --server-cpus 1 --client-cpus 0 --out "$out/$1.json.gz"
    "$stagevar" analyze "$out/$1.json.gz" --no-qr > "$out/$1-analyze.txt"
    "$stagevar" advise "$out/$1.json.gz" --metric p90 > "$out/$1-advise.txt"
}

case $part in
build) build ;;
w1) compare w1 '-t 1 -m 8' '-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
        240000 16 3s 2s ;;
w3) compare w3 '-t 1 -m 8 -U 0 -c 1024' \
        '-c 1 --keys 10000 --key-size 30 --value-size 100 --preload --get-ratio 0.99 --stream 0.1 --popularity uniform' \
        225000 2 30s 10s ;;
*) echo "$usage" >&2; exit 2 ;;
esac

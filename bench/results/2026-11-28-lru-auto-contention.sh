#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# auto under contention (issue 38 item 1). Usage, from the repository
# after make:  sh bench/results/2026-11-28-lru-auto-contention.sh PART OUTDIR [RUNS]
#   thresholds: the worker's run-queue share with the thread (stock), with
#               slices only (a fixed budget of 20 us, auto's size at 20k
#               req/s) and with auto, quiet / --hog 50 / --hog 100 (in the
#               server's session and in its own): where to put auto's marks.
#   final:      stock against auto, quiet / --hog 50 / --hog 100 / --hog 100 own group,
#               demo workload, 20k req/s, interleaved runs (default 6).
set -eu
part=$1; out=$2
stagevar=${STAGEVAR:-.venv/bin/stagevar}
mkdir -p "$out"
demo() {   # name, runs, extra args...
    name=$1; runs=$2; shift 2
    "$stagevar" compare --name "$name" "$@" \
      --server-args '*=-t 1 -m 8' \
      --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
      --loads 20000 --runs "$runs" --duration 3s --warmup 2s --server-cpus 1 --client-cpus 0 \
      --out "$out/$name.json.gz"
    "$stagevar" analyze "$out/$name.json.gz" --no-qr
}
case $part in
thresholds)
    runs=${3:-2}
    for cond in quiet hog50 hog100 hog100own; do
        case $cond in
        quiet) hog= ;;
        hog50) hog='--hog 50' ;;
        hog100) hog='--hog 100' ;;
        hog100own) hog='--hog 100 --hog-group own' ;;
        esac
        # shellcheck disable=SC2086
        demo "thresholds-$cond" "$runs" $hog --level stock=stock --level slices20=fork --level auto=fork \
          --server-args 'slices20=-o lru_amortized_budget_us=20' \
          --server-args 'auto=-o lru_amortized_budget_us=auto'
    done ;;
final)
    runs=${3:-6}
    for cond in quiet hog50 hog100 hog100own; do
        case $cond in
        quiet) hog= ;;
        hog50) hog='--hog 50' ;;
        hog100) hog='--hog 100' ;;
        hog100own) hog='--hog 100 --hog-group own' ;;
        esac
        # shellcheck disable=SC2086
        demo "final-$cond" "$runs" $hog --level stock=stock --level auto=fork \
          --server-args 'auto=-o lru_amortized_budget_us=auto'
    done ;;
*) echo "usage: $0 thresholds|final OUTDIR [RUNS]" >&2; exit 2 ;;
esac

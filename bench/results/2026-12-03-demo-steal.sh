#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The demo three times in a row under capacity rule 3
# (bench/results/2026-12-03-demo-steal.md), with vmstat every 5 s beside
# it (its `st` column is the host's steal) in OUT_DIR/vmstat.txt.
# usage: sh bench/results/2026-12-03-demo-steal.sh BUILD_DIR OUT_DIR [PYTHON]
set -eu
build=${1:?usage: $0 BUILD_DIR OUT_DIR [PYTHON]}
out=${2:?usage: $0 BUILD_DIR OUT_DIR [PYTHON]}
mkdir -p "$out"
vmstat -t 5 > "$out/vmstat.txt" &
vmstat_pid=$!
trap 'kill "$vmstat_pid" 2>/dev/null || true' EXIT
sh "$(dirname "$0")/2026-12-02-demo.sh" "$build" "$out" ${3:+"$3"}

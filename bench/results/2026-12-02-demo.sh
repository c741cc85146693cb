#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# tools/demo three times in a row (bench/results/2026-12-02-demo.md): the
# load average before each, then the run's whole output, into OUT_DIR.
# usage: sh bench/results/2026-12-02-demo.sh BUILD_DIR OUT_DIR [PYTHON]
set -eu
build=${1:?usage: $0 BUILD_DIR OUT_DIR [PYTHON]}
out=${2:?usage: $0 BUILD_DIR OUT_DIR [PYTHON]}
python=${3:-.venv/bin/python}
[ -d "$build" ] || { echo "$0: no build directory '$build'" >&2; exit 2; }
mkdir -p "$out"
for run in 1 2 3; do
    { echo "run $run, $(date -u +%H:%M:%S) UTC, before: $(cat /proc/loadavg)"
      start=$(date +%s)
      "$python" tools/demo "$build" || echo "demo exited $?"
      echo "took $(( $(date +%s) - start )) s"; } > "$out/run$run.txt" 2>&1
done

#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The demo three times in a row with -o hot_lru_pct=0 as its knob
# (bench/results/2026-12-04-demo-hot0.md), with vmstat every 5 s beside
# it, as 2026-12-03-demo-steal.sh runs them.
# usage: sh bench/results/2026-12-04-demo-hot0.sh BUILD_DIR OUT_DIR [PYTHON]
set -eu
sh "$(dirname "$0")/2026-12-03-demo-steal.sh" "$@"

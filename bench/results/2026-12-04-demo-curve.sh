#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The demo three times in a row under capacity rule 5
# (bench/results/2026-12-04-demo-curve.md), with vmstat every 5 s beside
# it, as 2026-12-03-demo-steal.sh runs them.
# usage: sh bench/results/2026-12-04-demo-curve.sh BUILD_DIR OUT_DIR [PYTHON]
set -eu
sh "$(dirname "$0")/2026-12-03-demo-steal.sh" "$@"

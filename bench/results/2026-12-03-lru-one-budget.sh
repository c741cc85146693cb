#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The checks of bench/results/2026-12-03-lru-one-budget.md that the CLI
# runs. Usage, from the repository after make:
#   sh bench/results/2026-12-03-lru-one-budget.sh busy-loop OUT_DIR [RUNS]
#     section 2: the demo's workload at 20k req/s beside a busy loop on
#     the server's CPU; stock, its maintainer at SCHED_IDLE, stock
#     -o no_lru_maintainer and the fork at budget 10, RUNS a level
#     (default 12); then each option's median p99 and mean over stock's,
#     for the first 6 rounds and for all of them.
set -eu
part=${1:?usage: $0 busy-loop OUT_DIR [RUNS]}
out=${2:?usage: $0 busy-loop OUT_DIR [RUNS]}
runs=${3:-12}
stagevar=${STAGEVAR:-.venv/bin/stagevar}
python=${PYTHON:-.venv/bin/python}
[ "$part" = busy-loop ] || { echo "$0: unknown part '$part' (busy-loop)" >&2; exit 2; }
mkdir -p "$out"
results=$out/busy-loop.json.gz
"$stagevar" compare --name busy-loop --hog 100 \
  --level stock=stock --level lrumaint-idle=stock --level no_lru_maintainer=stock --level budget10=fork \
  --thread-sched lrumaint-idle=mc-lrumaint:idle \
  --server-args '*=-t 1 -m 8' \
  --server-args 'no_lru_maintainer=-o no_lru_maintainer' \
  --server-args 'budget10=-o lru_amortized_budget_us=10' \
  --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
  --loads 20000 --runs "$runs" --duration 3s --warmup 2s --server-cpus 1 --client-cpus 0 \
  --out "$results"
"$stagevar" analyze "$results" --no-qr > "$out/busy-loop-analyze.txt"
# The ratio of medians, read from the results file's runs.
"$python" - "$results" <<'EOF'
import gzip, json, statistics, sys

runs = [r for e in json.load(gzip.open(sys.argv[1]))["experiments"] for r in e["runs"]
        if not r.get("error") and r.get("loadgen", {}).get("latency_scheduled", {}).get("count")]
levels = list(dict.fromkeys(r["cell"]["knob"] for r in runs))
rounds = sorted({r["rep"] for r in runs})


def median(level: str, key: str, reps: list[int]) -> float:
    return statistics.median(r["loadgen"]["latency_scheduled"][key] / 1000 for r in runs
                             if r["cell"]["knob"] == level and r["rep"] in reps)


for label, reps in (("first 6 rounds", rounds[:6]), (f"all {len(rounds)} rounds", rounds)):
    print(f"\n{label}: median p99 and mean (us), and over stock")
    for level in levels:
        p99, mean = median(level, "p99", reps), median(level, "mean", reps)
        base_p99, base_mean = median("stock", "p99", reps), median("stock", "mean", reps)
        print(f"  {level:<20} p99 {p99:9.1f} x{p99 / base_p99:.3f}   mean {mean:8.1f} x{mean / base_mean:.3f}")
EOF

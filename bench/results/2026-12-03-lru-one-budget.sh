#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The checks of bench/results/2026-12-03-lru-one-budget.md that the CLI
# runs. Usage, from the repository after make:
#   sh bench/results/2026-12-03-lru-one-budget.sh PART OUT_DIR [RUNS]
#   busy-loop  section 2: the demo's workload at 20k req/s beside a busy
#              loop on the server's CPU; stock, its maintainer at
#              SCHED_IDLE, stock -o no_lru_maintainer and the fork at
#              budget 10, RUNS a level (default 12); then each option's
#              median p99 and mean over stock's, for the first 6 rounds
#              and for all of them.
#   demo-200k  section 4: the same workload at 200k req/s, no busy loop;
#              stock, stock -o no_lru_maintainer, the fork with its
#              maintainer at SCHED_IDLE and the fork at budget 10, RUNS a
#              level (default 8); then each median p90 over stock's and
#              over no_lru_maintainer's.
set -eu
usage="usage: $0 busy-loop|demo-200k OUT_DIR [RUNS]"
part=${1:?$usage}
out=${2:?$usage}
stagevar=${STAGEVAR:-.venv/bin/stagevar}
python=${PYTHON:-.venv/bin/python}
mkdir -p "$out"

demo() {   # name, load, runs, extra args...
    name=$1; load=$2; runs=$3; shift 3
    "$stagevar" compare --name "$name" "$@" \
      --server-args '*=-t 1 -m 8' \
      --client-args '*=-c 1 --keys 200000 --key-size 20 --value-size 500 --get-ratio 0.1 --preload' \
      --loads "$load" --runs "$runs" --duration 3s --warmup 2s --server-cpus 1 --client-cpus 0 \
      --out "$out/$name.json.gz"
    "$stagevar" analyze "$out/$name.json.gz" --no-qr > "$out/$name-analyze.txt"
}

# Each level's median of the runs' METRICS over BASELINES' medians, for
# the first 6 rounds and for all, read from the results file's runs.
medians() {   # results, baselines (comma-separated), metrics (comma-separated)
    "$python" - "$@" <<'PY'
import gzip, json, statistics, sys

path, baselines, metrics = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
runs = [r for e in json.load(gzip.open(path))["experiments"] for r in e["runs"]
        if not r.get("error") and r.get("loadgen", {}).get("latency_scheduled", {}).get("count")]
levels = list(dict.fromkeys(r["cell"]["knob"] for r in runs))
rounds = sorted({r["rep"] for r in runs})


def median(level: str, key: str, reps: list[int]) -> float:
    return statistics.median(r["loadgen"]["latency_scheduled"][key] / 1000 for r in runs
                             if r["cell"]["knob"] == level and r["rep"] in reps)


for label, reps in (("first 6 rounds", rounds[:6]), (f"all {len(rounds)} rounds", rounds)):
    print(f"\n{label}: each level's median (us), and over {' and '.join(baselines)}")
    for level in levels:
        cells = [f"{m} {median(level, m, reps):9.1f} "
                 + " ".join(f"x{median(level, m, reps) / median(b, m, reps):.3f}" for b in baselines)
                 for m in metrics]
        print(f"  {level:<20} " + "   ".join(cells))
PY
}

case $part in
busy-loop)
    demo busy-loop 20000 "${3:-12}" --hog 100 \
      --level stock=stock --level lrumaint-idle=stock --level no_lru_maintainer=stock --level budget10=fork \
      --thread-sched lrumaint-idle=mc-lrumaint:idle \
      --server-args 'no_lru_maintainer=-o no_lru_maintainer' \
      --server-args 'budget10=-o lru_amortized_budget_us=10'
    medians "$out/busy-loop.json.gz" stock p99,mean ;;
demo-200k)
    demo demo-200k 200000 "${3:-8}" \
      --level stock=stock --level no_lru_maintainer=stock --level fork-lrumaint-idle=fork --level budget10=fork \
      --thread-sched fork-lrumaint-idle=mc-lrumaint:idle \
      --server-args 'no_lru_maintainer=-o no_lru_maintainer' \
      --server-args 'budget10=-o lru_amortized_budget_us=10'
    medians "$out/demo-200k.json.gz" stock,no_lru_maintainer p90 ;;
*) echo "$usage" >&2; exit 2 ;;
esac

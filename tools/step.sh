# SPDX-License-Identifier: BSD-3-Clause
# step.sh: sourced by tools/bootstrap. `step LABEL LOG CMD [ARG...]` runs
# CMD with its output in LOG and prints one line, "bootstrap: LABEL ... ok
# (Ns)". If CMD fails it prints the failing step, the last lines of LOG and
# LOG's path, and returns CMD's status. With STEP_VERBOSE=1 it prints a
# heading and streams CMD's output instead (bootstrap -v).
STEP_TAIL=${STEP_TAIL:-25}

step() {
    label=$1 log=$2
    shift 2
    if [ "${STEP_VERBOSE:-0}" = 1 ]; then
        echo "bootstrap: $label"
        "$@"
        return
    fi
    mkdir -p "$(dirname "$log")"
    printf 'bootstrap: %s ... ' "$label"
    started=$(date +%s)
    if "$@" > "$log" 2>&1; then
        echo "ok ($(( $(date +%s) - started ))s)"
        return 0
    else
        rc=$?
    fi
    echo "FAILED (exit $rc)"
    {
        echo "bootstrap: step '$label' failed; the last $STEP_TAIL lines of its log:"
        tail -n "$STEP_TAIL" "$log" | sed 's/^/    /'
        echo "bootstrap: full log: $log"
    } >&2
    return "$rc"
}

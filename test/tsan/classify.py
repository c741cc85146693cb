#!/usr/bin/env python3
"""Sort ThreadSanitizer reports (files named on the command line) into
the stage recorders' documented racy snapshot and everything else.

libstagevar's recorders have one writer (a worker) and readers that copy
them while it writes (stats stages: sv_recorder_snapshot). stagevar.h
documents the consequence: a snapshot may hold a sample half-recorded,
every field being one aligned 64-bit word that is never torn on the
platforms we build for. TSAN rightly calls that a data race. A report is
counted as that design when one access is the snapshot's copy and the
other is libstagevar writing a recorder; every other report is printed
and makes the exit status 1.
"""
import re
import sys

WRITERS = ("sv_moments_add", "sv_hist_add", "sv_record", "sv_recorder_reset",
           "sv_moments_reset", "sv_hist_reset", "sv_record_missing")


def accesses(report: str) -> list[str]:
    """The stack text of each access (current and previous)."""
    parts = re.split(r"\n  (?=(?:Write|Read|Previous write|Previous read|Atomic))", report)
    return [p for p in parts[1:] if not p.startswith("Location")]


def is_snapshot(report: str) -> bool:
    stacks = [a.split("\n\n")[0] for a in accesses(report)]
    return len(stacks) == 2 and any("sv_recorder_snapshot" in s for s in stacks) and \
        any(any(w in s for w in WRITERS) and "sv_recorder_snapshot" not in s for s in stacks)


def main() -> int:
    reports = []
    for path in sys.argv[1:]:
        reports += [r for r in open(path, errors="replace").read().split("==================")
                    if "WARNING: ThreadSanitizer" in r]
    snapshot = [r for r in reports if is_snapshot(r)]
    other = [r for r in reports if not is_snapshot(r)]
    print(f"classify: {len(snapshot)} report(s) of the recorders' documented racy snapshot, "
          f"{len(other)} other")
    for r in other:
        print(r.strip()[:4000], file=sys.stderr)
    return 1 if other else 0


if __name__ == "__main__":
    sys.exit(main())

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
    """The race is on a recorder (a block from sv_recorder_new), one access
    is a read and one a write, and every stack TSAN could restore is the
    snapshot's copy or libstagevar writing. (TSAN may fail to restore the
    older stack; a read from another thread can then only be a snapshot,
    since no other code reads a worker's recorder. Two writes from two
    threads would break the single-writer rule: never counted here.)"""
    if not re.search(r"Location is heap block[^\n]*\n\s+#0 malloc[^\n]*\n\s+#1 sv_recorder_new", report):
        return False
    stacks = [a.split("\n\n")[0] for a in accesses(report)]
    kinds = {"read" if re.match(r"(Previous )?[Rr]ead", s) else "write" for s in stacks}
    known = [s for s in stacks if "failed to restore the stack" not in s]
    return len(stacks) == 2 and kinds == {"read", "write"} and bool(known) and \
        all("sv_recorder_snapshot" in s or any(w in s for w in WRITERS) for s in known)


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

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""nobody_reach: run a command as the user nobody, from root, where it can
reach the paths it needs wherever the checkout lives.

A checkout under a directory that only root may enter (a `mktemp -d`
directory is 0700, so is /root on Debian) is out of nobody's reach, and
so are the Python, the build tree and the tests inside it. Loosening the
user's own directories is not ours to do. Instead the command runs in a
mount namespace of its own in which the topmost directory nobody cannot
enter is covered by a world-searchable tmpfs that holds only the path down
to the directory the command needs, bind-mounted there. Every path keeps
its name, so the absolute paths a build baked in stay valid, and nothing
outside the namespace changes.

  nobody_reach.py PATH... -- COMMAND [ARG...]
      run COMMAND as nobody with every PATH reachable; its exit status, or
      77 with one line naming the directory when that cannot be done.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

USER = "nobody"
CANNOT = 77  # automake's "skipped" exit status

# In the new namespace: a tmpfs at a scratch directory, the path down to
# KEEP inside it, KEEP bound there, then the tmpfs moved over COVER.
COVER_SCRIPT = """set -e
cover=$1 keep=$2 below=$3; shift 3
t=$(mktemp -d -p /tmp stagevar-reach.XXXXXX)
mount -t tmpfs -o mode=0755,size=1m stagevar-reach "$t"
mkdir -p "$t/$below"
mount --bind "$keep" "$t/$below"
mount --move "$t" "$cover"
rmdir "$t"
exec runuser -u "$USER" -- "$@"
"""


class Unreachable(Exception):
    """nobody cannot be given these paths; the message says why."""


def can_enter(path: Path) -> bool:
    """Can nobody resolve path and search it (or read it, if a file)?"""
    test = "-x" if path.is_dir() else "-r"
    return subprocess.run(["runuser", "-u", USER, "--", "test", test, str(path)],
                          stdin=subprocess.DEVNULL).returncode == 0


def first_closed(path: Path) -> Path | None:
    """The topmost directory on the way to path that nobody cannot enter."""
    for step in [*reversed(path.parents), path]:
        if not can_enter(step):
            return step
    return None


# (cover, keep): the directory to cover and the one to show through; None
# when nobody reaches every path as things are.
Plan = tuple[Path, Path] | None


def closed(directory: Path) -> Unreachable:
    return Unreachable(f"nobody cannot enter {directory}, which holds what the suite needs; "
                       f"allow it (chmod o+x '{directory}') or run the tests as a user other than root")


def cover_plan(paths: list[Path]) -> Plan:
    """What to cover so that nobody reaches every path (see Plan)."""
    blocked = [p for p in paths if not can_enter(p)]
    if not blocked:
        return None
    keep = Path(os.path.commonpath(blocked))
    cover = first_closed(keep)
    if cover is None or cover == keep:
        raise closed(next(c for c in map(first_closed, blocked) if c is not None))
    return cover, keep


def command(plan: Plan, cmd: list[str]) -> list[str]:
    """The command line that runs cmd as nobody, through plan's cover."""
    if plan is None:
        return ["runuser", "-u", USER, "--", *cmd]
    cover, keep = plan
    return ["unshare", "--mount", "--propagation", "private",
            "env", f"USER={USER}", "sh", "-c", COVER_SCRIPT, "nobody_reach",
            str(cover), str(keep), str(keep.relative_to(cover)), *cmd]


def closed_to_others(path: Path) -> bool:
    """Is path a directory that nobody, as neither owner nor group, cannot
    search? (Judged from its mode: inside the namespace nobody may only look.)"""
    st = path.stat()
    return path.is_dir() and not st.st_mode & 0o001


PROBE = 'for p; do if [ -d "$p" ]; then test -x "$p"; else test -r "$p"; fi || { echo "$p"; exit 1; }; done'


def reachable_plan(paths: list[Path]) -> Plan:
    """cover_plan(), checked: nobody really reaches every path through it."""
    plan = cover_plan(paths)
    proc = subprocess.run(command(plan, ["sh", "-c", PROBE, "probe", *map(str, paths)]),
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
    if proc.returncode == 0:
        return plan
    missed = next((p for p in paths if str(p) == proc.stdout.strip()), None)
    if missed is None:
        raise Unreachable(f"no mount namespace for nobody ({proc.stdout.strip() or proc.returncode}); "
                          "run the tests as a user other than root")
    below = [d for d in [*reversed(missed.parents), missed] if plan is None or d.is_relative_to(plan[1])]
    raise closed(next((d for d in below if closed_to_others(d)), missed))


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") in (0, len(argv) - 1):
        print("usage: nobody_reach.py PATH... -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    paths = [Path(p).resolve() for p in argv[:split]]
    try:
        plan = reachable_plan(paths)
    except Unreachable as e:
        print(f"nobody_reach: {e}", file=sys.stderr)
        return CANNOT
    return subprocess.run(command(plan, argv[split + 1:])).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

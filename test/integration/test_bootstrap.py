# SPDX-License-Identifier: BSD-3-Clause
"""tools/bootstrap's quiet mode: its step function (tools/step.sh) on real
commands, one that succeeds and one that fails, quiet and with -v."""
from __future__ import annotations

import subprocess
from pathlib import Path

TOOLS = Path(__file__).resolve().parents[2] / "tools"


def step(log: Path, command: str, verbose: bool = False) -> subprocess.CompletedProcess[str]:
    """`step LABEL LOG sh -c COMMAND`, sourced as tools/bootstrap sources it."""
    return subprocess.run(
        ["sh", "-c", f'set -eu; . "$0"; step "build 3/6: memcached" "$1" sh -c "$2"',
         str(TOOLS / "step.sh"), str(log), command],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "STEP_VERBOSE": "1" if verbose else "0"})


LOUD = "i=0; while [ $i -lt 100 ]; do echo compiler line $i; i=$((i+1)); done"


def test_a_step_prints_one_line_and_logs_everything(tmp_path: Path) -> None:
    log = tmp_path / "logs/build-memcached.log"
    proc = step(log, LOUD)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [proc.stdout.strip()]
    assert proc.stdout.startswith("bootstrap: build 3/6: memcached ... ok (")
    assert proc.stderr == ""
    assert log.read_text().splitlines() == [f"compiler line {i}" for i in range(100)]


def test_a_failed_step_names_itself_its_log_and_its_last_lines(tmp_path: Path) -> None:
    log = tmp_path / "logs/build-memcached.log"
    proc = step(log, LOUD + "; echo 'error: boom' >&2; exit 3")
    assert proc.returncode == 3
    assert proc.stdout == "bootstrap: build 3/6: memcached ... FAILED (exit 3)\n"
    err = proc.stderr.splitlines()
    assert err[0] == "bootstrap: step 'build 3/6: memcached' failed; the last 25 lines of its log:"
    assert err[-1] == f"bootstrap: full log: {log}"
    assert err[-2] == "    error: boom"
    assert err[1] == "    compiler line 76"   # the log's last 25 lines, no more
    assert len(err) == 27
    assert log.read_text().endswith("compiler line 99\nerror: boom\n")


def test_verbose_streams_the_output_and_keeps_the_status(tmp_path: Path) -> None:
    log = tmp_path / "logs/build-memcached.log"
    proc = step(log, LOUD + "; exit 4", verbose=True)
    assert proc.returncode == 4
    lines = proc.stdout.splitlines()
    assert lines[0] == "bootstrap: build 3/6: memcached"
    assert lines[1:] == [f"compiler line {i}" for i in range(100)]
    assert not log.exists()


def test_bootstrap_refuses_an_unknown_verb() -> None:
    proc = subprocess.run([str(TOOLS / "bootstrap"), "-v", "deploy"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == ("tools/bootstrap: unknown verb 'deploy'\n"
                           "usage: tools/bootstrap [-v] demo|test|build [configure args]\n")

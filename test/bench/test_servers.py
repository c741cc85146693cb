# SPDX-License-Identifier: BSD-3-Clause
"""servers.py's stop mechanism: stop() and stop_all() against real child
processes that take a second to exit after SIGTERM, as memcached does."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from stagevar_bench.servers import MemcachedServer, stop_all

EXIT_DELAY_S = 1.0
# Exits EXIT_DELAY_S after SIGTERM, with status 0 (a SIGKILL would give -9).
SLOW_EXIT = f"""
import signal, sys, time
def bye(*_):
    time.sleep({EXIT_DELAY_S})
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
print("ready", flush=True)
time.sleep(60)
"""


def slow_exiting_server() -> MemcachedServer:
    """A MemcachedServer whose process is SLOW_EXIT, its handler installed."""
    server = MemcachedServer(Path(sys.executable))
    server.proc = subprocess.Popen([sys.executable, "-c", SLOW_EXIT], stdout=subprocess.PIPE)
    assert server.proc.stdout is not None
    assert server.proc.stdout.readline() == b"ready\n"
    server.proc.stdout.close()
    return server


def test_stop_waits_for_the_exit_sigterm_asked_for() -> None:
    server = slow_exiting_server()
    start = time.monotonic()
    server.stop()
    assert server.proc is not None and server.proc.returncode == 0
    assert time.monotonic() - start >= EXIT_DELAY_S * 0.9


def test_stop_all_overlaps_the_exits() -> None:
    servers = [slow_exiting_server() for _ in range(4)]
    start = time.monotonic()
    stop_all(servers)
    elapsed = time.monotonic() - start
    assert [s.proc.returncode for s in servers if s.proc is not None] == [0, 0, 0, 0]
    # One stop() after another would take at least 4 x EXIT_DELAY_S.
    assert elapsed < 3 * EXIT_DELAY_S, elapsed


def test_stop_all_skips_servers_never_started_or_already_stopped() -> None:
    stopped = slow_exiting_server()
    stopped.stop()
    stop_all([MemcachedServer(Path(sys.executable)), stopped])
    assert stopped.proc is not None and stopped.proc.returncode == 0

# SPDX-License-Identifier: BSD-3-Clause
"""local_server.py: the /proc/net/tcp addresses, the proof that a process
serves a connection, and the other-tasks counter's arithmetic."""
from __future__ import annotations

import ipaddress
import os
import socket
import sys

import pytest

from stagevar_bench import local_server as ls
from stagevar_bench.sched import SchedStat


@pytest.mark.skipif(sys.byteorder != "little", reason="the kernel prints words in host order")
def test_proc_addresses() -> None:
    assert ls.proc_address("0100007F:2BCB") == (ipaddress.ip_address("127.0.0.1"), 11211)
    assert ls.proc_address("0000000000000000FFFF00000100007F:2BCB") == \
        (ipaddress.ip_address("127.0.0.1"), 11211)         # IPv4-mapped: as IPv4
    assert ls.proc_address("00000000000000000000000001000000:0050") == (ipaddress.ip_address("::1"), 80)


def test_the_process_that_owns_a_connection_is_found_and_no_other() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener, \
            socket.create_connection(listener.getsockname()) as client:
        served, _ = listener.accept()
        with served:
            server, me = ls.sock_address(client.getpeername()), ls.sock_address(client.getsockname())
            inode = ls.connection_inode(os.getpid(), server, me)
            assert inode is not None and ls.owns_socket(os.getpid(), inode)
            assert ls.connection_inode(os.getpid(), server, (me[0], me[1] ^ 1)) is None
            assert not ls.owns_socket(os.getppid(), inode)
            # this process is not a memcached: its pid is believed for no one
            assert ls.serving_pid(client, str(os.getpid())) is None
            assert ls.serving_pid(client, "not-a-pid") is None


def reading(pid: int, busy: dict[int, float], own: float, cpus: list[int], started: int = 7) -> ls.ProcReading:
    return ls.ProcReading(pid, started, {"mc-worker": (1, SchedStat())}, cpus, busy, own)


def test_other_tasks_counter_never_goes_back() -> None:
    out = ls.OutsideCpu()
    assert out.update("a", reading(1, {0: 10.0, 1: 50.0}, own=2.0, cpus=[0])) == 0.0
    # CPU 0 busy 3 s more, 1 s of it the server's: 2 s of others (CPU 1 is not its)
    assert out.update("a", reading(1, {0: 13.0, 1: 90.0}, own=3.0, cpus=[0])) == pytest.approx(2.0)
    # a tick of disagreement: the server's time came out above its CPUs' busy time
    assert out.update("a", reading(1, {0: 13.5, 1: 90.0}, own=3.51, cpus=[0])) == pytest.approx(2.0)
    assert out.update("a", reading(1, {0: 14.5, 1: 90.0}, own=4.01, cpus=[0])) == pytest.approx(2.49)
    # another process behind the target: from 0 again
    assert out.update("a", reading(2, {0: 20.0, 1: 90.0}, own=0.0, cpus=[0])) == 0.0

# SPDX-License-Identifier: BSD-3-Clause
"""ProcessCorePinning / ProcessCoreList in the forked httpd (event MPM).

The real fork runs on loopback; what the kernel reports for every thread of
every child (/proc/PID/task/TID/status) is the proof, not httpd's own logs.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from conftest import binary_or_skip, httpd_config_test, wait_until
from stagevar_bench.servers import LOOPBACK, HttpdServer, wait_for_port

ALLOWED = sorted(os.sched_getaffinity(0))
NCPU = len(ALLOWED)
THREADS = 5


def pool(server_limit: int) -> str:
    """NCPU children of THREADS workers, with enough spare-thread room that
    idle maintenance neither adds nor reaps a child on its own."""
    return f"""\
StartServers {NCPU}
ServerLimit {server_limit}
ThreadsPerChild {THREADS}
ThreadLimit {THREADS}
MinSpareThreads {THREADS * NCPU}
MaxSpareThreads {THREADS * server_limit}
MaxRequestWorkers {THREADS * server_limit}
LogLevel info
"""


POOL = pool(NCPU * 3)


def parse_cpulist(text: str) -> set[int]:
    cpus: set[int] = set()
    for item in text.strip().split(","):
        lo, _, hi = item.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def children(parent: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # Field 4 is the ppid; the command name (field 2) may hold spaces.
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            kids.append(int(entry))
    return sorted(kids)


def thread_cpus(pid: int) -> dict[int, set[int]]:
    """Cpus_allowed_list of every thread of `pid`."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except OSError:
            continue        # the thread exited meanwhile
        line = next(l for l in status.splitlines() if l.startswith("Cpus_allowed_list:"))
        out[int(tid)] = parse_cpulist(line.split(":", 1)[1])
    return out


def ready_children(parent: int, expect: int) -> list[int]:
    """The children once there are `expect` of them, each with all its threads."""
    def ready() -> list[int] | None:
        kids = children(parent)
        if len(kids) != expect:
            return None
        try:
            # workers + listener + main thread
            if all(len(os.listdir(f"/proc/{k}/task")) >= THREADS + 2 for k in kids):
                return kids
        except FileNotFoundError:
            pass
        return None
    return wait_until(f"{expect} children with their threads", ready)  # type: ignore[return-value]


def child_cpu(pid: int) -> int:
    """The one CPU every thread of `pid` is bound to; fails if they differ."""
    per_thread = thread_cpus(pid)
    assert per_thread, f"child {pid} has no threads"
    for tid, cpus in per_thread.items():
        assert len(cpus) == 1, f"thread {tid} of child {pid} may run on {sorted(cpus)}"
    distinct = {min(c) for c in per_thread.values()}
    assert len(distinct) == 1, f"threads of child {pid} are on different CPUs {distinct}"
    return distinct.pop()


@pytest.fixture
def fork_httpd() -> Path:
    return binary_or_skip("fork", "httpd")


@pytest.fixture
def pinned(fork_httpd: Path) -> Iterator[HttpdServer]:
    server = HttpdServer(fork_httpd, extra_conf="ProcessCorePinning on\n" + POOL)
    server.write_conf()
    (server.docroot / "index.html").write_text("pinned\n")
    with server:
        yield server


def test_each_child_on_its_own_cpu(pinned: HttpdServer) -> None:
    assert pinned.proc is not None
    kids = ready_children(pinned.proc.pid, NCPU)
    cpus = [child_cpu(k) for k in kids]
    assert sorted(cpus) == ALLOWED, f"children {kids} on CPUs {cpus}"
    log = (pinned.root / "error_log").read_text()
    for kid, cpu in zip(kids, cpus):
        assert re.search(rf"child \d+ \(pid {kid}\) bound to CPU {cpu}\b", log), log


def server_side_owner(conn: socket.socket, server_port: int, parent: int) -> int | None:
    """The child process holding the server end of `conn`, found through
    the socket's inode in /proc/net/tcp and the children's descriptors."""
    client_port = conn.getsockname()[1]
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote = fields[1].split(":"), fields[2].split(":")
        if int(local[1], 16) == server_port and int(remote[1], 16) == client_port:
            inode = fields[9]
    if inode is None:
        return None
    for kid in children(parent):
        try:
            fds = os.listdir(f"/proc/{kid}/fd")
        except FileNotFoundError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{kid}/fd/{fd}") == f"socket:[{inode}]":
                    return kid
            except OSError:
                continue
    return None


def hold_request_on_child(server: HttpdServer, avoid: int) -> tuple[socket.socket, int]:
    """An unfinished request (it keeps its worker, and so its child, busy)
    on any child but `avoid`. Which child accepts is up to the kernel, so
    open connections until one lands elsewhere and drop the rest."""
    assert server.proc is not None
    tried = []
    try:
        for _ in range(40):
            conn = socket.create_connection((LOOPBACK, server.port), timeout=10)
            conn.sendall(b"GET /index.html HTTP/1.1\r\nHost: localhost\r\n")
            tried.append(conn)
            owner = wait_until("the connection's owner",
                               lambda: server_side_owner(conn, server.port, server.proc.pid), 5)
            if owner != avoid:
                tried.remove(conn)
                return conn, int(owner)  # type: ignore[arg-type]
    finally:
        for other in tried:
            other.close()
    pytest.fail(f"40 connections in a row went to child {avoid}")


def test_graceful_restart_with_a_busy_old_child(fork_httpd: Path) -> None:
    """ServerLimit = CPUs + 1 and a request held on the child of slot 1:
    the new generation gets the one free slot (CPUs) at once, then slot 0
    once its old child exits. "slot mod CPUs" would put both on CPU 0;
    the parent's least-used choice puts them on different CPUs."""
    server = HttpdServer(fork_httpd, extra_conf="ProcessCorePinning on\n" + pool(NCPU + 1))
    server.write_conf()
    (server.docroot / "index.html").write_text("pinned\n")
    with server:
        assert server.proc is not None
        parent = server.proc.pid
        old = ready_children(parent, NCPU)
        on_first_cpu = next(k for k in old if child_cpu(k) == ALLOWED[0])
        held, busy = hold_request_on_child(server, avoid=on_first_cpu)
        restart = subprocess.run([str(fork_httpd), "-f", str(server.conf), "-k", "graceful"],
                                 capture_output=True, text=True, timeout=20)
        assert restart.returncode == 0, restart.stderr

        def settled() -> list[int] | None:
            kids = children(parent)
            new = [k for k in kids if k not in old]
            try:
                ok = (len(new) == NCPU and set(kids) - set(new) == {busy}
                      and all(len(os.listdir(f"/proc/{k}/task")) >= THREADS + 2 for k in new))
            except FileNotFoundError:
                return None
            return new if ok else None

        new = wait_until("the new generation beside the busy old child", settled)
        new_cpus = [child_cpu(k) for k in new]  # type: ignore[union-attr]
        assert sorted(new_cpus) == ALLOWED, f"new children {new} share CPUs: {new_cpus}"
        assert child_cpu(busy) != ALLOWED[0]

        held.sendall(b"\r\n")
        assert held.recv(4096).startswith(b"HTTP/1.1 200 OK")
        held.close()
        wait_until("the busy old child to exit", lambda: busy not in children(parent))
        assert sorted(child_cpu(k) for k in children(parent)) == ALLOWED


def test_off_by_default_leaves_affinity_alone(fork_httpd: Path) -> None:
    with HttpdServer(fork_httpd, extra_conf=POOL) as server:
        assert server.proc is not None
        for kid in ready_children(server.proc.pid, NCPU):
            for tid, cpus in thread_cpus(kid).items():
                assert sorted(cpus) == ALLOWED, f"thread {tid} was pinned to {cpus}"


def test_core_list_restricts_the_cpus(fork_httpd: Path) -> None:
    only = ALLOWED[-1]
    with HttpdServer(fork_httpd, extra_conf=f"ProcessCorePinning on\nProcessCoreList {only}\n"
                     + POOL) as server:
        assert server.proc is not None
        assert [child_cpu(k) for k in ready_children(server.proc.pid, NCPU)] == [only] * NCPU


def test_one_process_mode_warns_once_and_does_not_pin(fork_httpd: Path) -> None:
    server = HttpdServer(fork_httpd, extra_conf="ProcessCorePinning on\n" + POOL)
    conf = server.write_conf()
    err = server.root / "stderr"
    try:
        with open(err, "wb") as out:
            proc = subprocess.Popen([str(fork_httpd), "-X", "-f", str(conf)],
                                    stdout=subprocess.DEVNULL, stderr=out)
        server.proc = proc
        wait_for_port(server.port, proc, 15)
        for tid, cpus in thread_cpus(proc.pid).items():
            assert sorted(cpus) == ALLOWED, f"thread {tid} was pinned to {cpus}"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
        text = err.read_text() + (server.root / "error_log").read_text()
        assert text.count("ProcessCorePinning: ignored in one-process mode") == 1, text
    finally:
        server.stop()


@pytest.mark.parametrize("directives", ["ProcessCorePinning off", "ProcessCorePinning on",
                                        f"ProcessCorePinning on\nProcessCoreList {ALLOWED[0]}"])
def test_good_directives_pass_the_syntax_check(fork_httpd: Path, directives: str) -> None:
    proc, _ = httpd_config_test(fork_httpd, directives, "ProcessCorePinning")
    assert proc.returncode == 0, proc.stderr


def test_stock_httpd_does_not_know_the_directive() -> None:
    """The same base config serves on stock; the new directive is the fork's only."""
    proc, _ = httpd_config_test(binary_or_skip("stock", "httpd"), "ProcessCorePinning on",
                                "ProcessCorePinning")
    assert proc.returncode != 0
    assert "Invalid command 'ProcessCorePinning'" in proc.stderr

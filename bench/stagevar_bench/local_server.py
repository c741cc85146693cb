# SPDX-License-Identifier: BSD-3-Clause
"""The scheduling evidence of a memcached on the exporter's own host: its
threads' schedstat and the other tasks' CPU on its allowed CPUs, read
from /proc (docs/monitoring.md, "Scheduling evidence").

`stats` gives the server's pid, but a pid names a process only on the
host (and in the pid namespace) it came from. So the pid is believed only
if that process owns the very connection the exporter asked on: its
network namespace's /proc/PID/net/tcp{,6} has an established socket from
the server's address to ours, and one of /proc/PID/fd is that socket's
inode. Anything else (another host, a pid namespace, NAT between us, no
permission to read /proc/PID/fd) verifies nothing, and nothing is read.
"""
from __future__ import annotations

import ipaddress
import os
import socket
import struct
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stagevar_bench import machine
from stagevar_bench.sched import SchedStat, schedstat_by_name

ESTABLISHED = "01"
Address = tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]


def proc_address(text: str) -> Address:
    """'0100007F:2BCB' (or 32 hex digits for IPv6) of /proc/net/tcp -> (ip, port).
    The kernel prints the address as 32-bit words in host byte order; an
    IPv4-mapped IPv6 address comes out as its IPv4 address."""
    addr, _, port = text.partition(":")
    raw = b"".join(struct.pack("=I", int(addr[i:i + 8], 16)) for i in range(0, len(addr), 8))
    ip = ipaddress.ip_address(raw)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        return ip.ipv4_mapped, int(port, 16)
    return ip, int(port, 16)


def sock_address(addr: tuple[Any, ...]) -> Address:
    """getsockname()/getpeername() -> (ip, port), IPv4-mapped as IPv4."""
    ip = ipaddress.ip_address(addr[0].split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip, int(addr[1])


def connection_inode(pid: int, server: Address, client: Address) -> int | None:
    """The inode of the established socket server -> client in the network
    namespace of `pid`, or None."""
    for table in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == ESTABLISHED and proc_address(f[1]) == server \
                    and proc_address(f[2]) == client:
                return int(f[9])
    return None


def owns_socket(pid: int, inode: int) -> bool:
    want = f"socket:[{inode}]"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == want:
                return True
        except OSError:
            continue
    return False


def start_time(pid: int) -> int:
    """The process's start time (clock ticks after boot): with the pid, its identity."""
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def serving_pid(sock: socket.socket, pid_text: str | None) -> int | None:
    """The pid `stats` gave, if that process is a memcached on this host
    that serves `sock` (connected to it), else None."""
    if not pid_text or not pid_text.isdigit():
        return None
    pid = int(pid_text)
    try:
        if Path(f"/proc/{pid}/comm").read_text().strip() != "memcached":
            return None
        server, client = sock_address(sock.getpeername()), sock_address(sock.getsockname())
    except (OSError, ValueError):
        return None
    inode = connection_inode(pid, server, client)
    return pid if inode is not None and owns_socket(pid, inode) else None


@dataclass(frozen=True)
class ProcReading:
    pid: int
    started: int                        # start_time(pid)
    threads: dict[str, tuple[int, SchedStat]]
    cpus: list[int]                     # allowed CPUs
    busy_s: dict[int, float]            # each CPU's busy seconds (machine.cpu_busy_by_cpu)
    own_s: float                        # the process's CPU seconds, exited threads included


def read_proc(pid: int) -> ProcReading | None:
    """The process's evidence now, or None if it has gone."""
    try:
        started = start_time(pid)
        threads = schedstat_by_name(pid)
        cpus = machine.allowed_cpus(pid)
        own = sum(machine.proc_user_sys_s(pid))
        busy = machine.cpu_busy_by_cpu()
        if start_time(pid) != started:
            return None
    except (OSError, ValueError, IndexError):
        return None
    return ProcReading(pid, started, threads, cpus, busy, own)


class OutsideCpu:
    """Other tasks' CPU seconds on each server's allowed CPUs, as a counter.

    Between two readings of the same process, the growth is its allowed
    CPUs' busy time (/proc/stat: user, nice, system) less its own CPU time
    (/proc/PID/stat: every thread's, exited ones too), the definition the
    local profile uses (experiment.py's outside_cores). Both are counted
    in clock ticks, so one reading can come out a tick negative: the
    counter is the running sum's highest value so far, which never goes
    back, and a negative step is paid back by the next positive ones.
    It starts at 0 at the exporter's first reading of a process, and
    again for a new process (another pid or start time) behind the target."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.state: dict[str, tuple[ProcReading, float, float]] = {}   # instance -> (last, sum, max)

    def update(self, instance: str, now: ProcReading) -> float:
        with self.lock:
            last = self.state.get(instance)
            if last is None or (last[0].pid, last[0].started) != (now.pid, now.started):
                self.state[instance] = (now, 0.0, 0.0)
                return 0.0
            prev, total, top = last
            busy = sum(now.busy_s[c] - prev.busy_s[c] for c in now.cpus
                       if c in now.busy_s and c in prev.busy_s)
            total += busy - (now.own_s - prev.own_s)
            top = max(top, total)
            self.state[instance] = (now, total, top)
            return top

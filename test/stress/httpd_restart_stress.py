# SPDX-License-Identifier: BSD-3-Clause
"""Restart and stop an (ASAN-built) httpd over and over while clients keep
its workers busy, to reproduce a crash at child shutdown.

    httpd_restart_stress.py HTTPD REPORTS_DIR [--cycles N] [--conf LINE]...

Each cycle starts the server, puts load on it, sends it a restart (SIGHUP:
children stop ungracefully, event.c's signal_threads -> close_worker_sockets
shuts down every socket a worker holds), a graceful restart (SIGUSR1), two
more restarts and finally SIGTERM, all under load. Fast clients send GETs,
every other one closing its connection; slow clients send half a request
header or a POST body a byte at a time, so that workers sit in a read
holding their socket when the signal arrives.

The caller sets ASAN_OPTIONS with log_path under REPORTS_DIR (the children
run as nobody, so the directory must be writable by it). The run fails if
any report appears there, or if the server did not come up. Bounded: at
most --cycles cycles of about three seconds each, 16 client threads.
"""
from __future__ import annotations

import argparse
import http.client
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path

from stagevar_bench.servers import (LOOPBACK, HttpdServer, stop_process,
                                    wait_for_port)

POOL = """StartServers 2
ServerLimit 4
ThreadsPerChild 8
MaxRequestWorkers 32
MinSpareThreads 8
MaxSpareThreads 32
GracefulShutdownTimeout 1
"""
# An ASAN parent on a loaded machine can take long to reap its children; a
# parent killed meanwhile leaves them behind, blocked forever on the pipe of
# death (an event MPM child blocks every signal but SIGKILL).
STOP_TIMEOUT_S = 60
FAST_CLIENTS = 8
SLOW_CLIENTS = 8


def fast_client(port: int, stop: threading.Event, served: list[int]) -> None:
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection(LOOPBACK, port, timeout=2)
            # Every other request closes its connection (http.client opens
            # the next), so connection pools keep being cleared.
            for n in range(20):
                close = {"Connection": "close"} if n % 2 else {}
                conn.request("GET", "/index.html", headers=close)
                if conn.getresponse().read():
                    served.append(1)
            conn.close()
        except (OSError, http.client.HTTPException):
            time.sleep(0.01)


def slow_client(port: int, stop: threading.Event, post: bool) -> None:
    head = (b"POST /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n" if post
            else b"GET /index.html HTTP/1.1\r\nHost: x\r\n")
    while not stop.is_set():
        try:
            with socket.create_connection((LOOPBACK, port), timeout=2) as sock:
                sock.sendall(head)
                for _ in range(20):
                    if stop.is_set():
                        break
                    time.sleep(0.05)
                    sock.sendall(b"a" if post else b"X-Slow: 1\r\n")
        except OSError:
            time.sleep(0.01)


def processes_of(server: HttpdServer) -> list[int]:
    """Live processes running this server's binary with its configuration
    file (unique per server): the parent and every child, orphaned or not."""
    binary, conf = server.binary.resolve(), str(server.conf).encode()
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if (proc / "exe").resolve() == binary and conf in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


def stop_and_reap(server: HttpdServer) -> int:
    """SIGTERM the parent under load; SIGKILL any child still running once
    it has exited: how many there were."""
    assert server.proc is not None
    stop_process(server.proc, STOP_TIMEOUT_S)
    time.sleep(0.5)  # a child the parent told to exit may still be exiting
    orphans = processes_of(server)
    for pid in orphans:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass  # exited meanwhile
    return len(orphans)


def reports(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.is_file())


def one_cycle(binary: Path, conf: str) -> tuple[int, int]:
    """One start, restarts and stop: requests served, children left behind."""
    server = HttpdServer(binary, extra_conf=POOL + conf)
    server.start()
    server.docroot.joinpath("index.html").write_text("x" * 280)
    stop = threading.Event()
    served: list[int] = []
    orphans = 0
    clients = [threading.Thread(target=fast_client, args=(server.port, stop, served))
               for _ in range(FAST_CLIENTS)]
    clients += [threading.Thread(target=slow_client, args=(server.port, stop, n % 2 == 0))
                for n in range(SLOW_CLIENTS)]
    try:
        for c in clients:
            c.start()
        assert server.proc is not None
        for sig in (signal.SIGHUP, signal.SIGUSR1, signal.SIGHUP, signal.SIGHUP):
            time.sleep(0.5)
            server.proc.send_signal(sig)
            time.sleep(0.2)
            wait_for_port(server.port, server.proc, 15)
        time.sleep(0.5)
        orphans = stop_and_reap(server)
    finally:
        stop.set()
        for c in clients:
            c.join(timeout=5)
        server.stop()
    return len(served), orphans


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("httpd", type=Path)
    parser.add_argument("reports", type=Path)
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--conf", action="append", default=[],
                        help="a configuration line added for every server")
    args = parser.parse_args(argv)
    if not 1 <= args.cycles <= 1000:
        parser.error(f"--cycles must be 1..1000, not {args.cycles}")
    if not args.httpd.is_file():
        parser.error(f"no httpd binary at '{args.httpd}'")
    if not args.reports.is_dir():
        parser.error(f"no reports directory '{args.reports}'")
    before = set(reports(args.reports))
    conf = "\n".join(args.conf) + "\n"
    served = orphans = 0
    for n in range(1, args.cycles + 1):
        cycle_served, cycle_orphans = one_cycle(args.httpd, conf)
        served, orphans = served + cycle_served, orphans + cycle_orphans
        new = [p for p in reports(args.reports) if p not in before]
        if new:
            print(f"cycle {n}: sanitizer report(s): {', '.join(map(str, new))}")
            for p in new:
                print(p.read_text(errors="replace")[:4000])
            return 1
    if served == 0:
        print("no request was served: the load never reached the server")
        return 1
    print(f"{args.cycles} cycles of restart, graceful restart and stop under load "
          f"({served} requests served, {orphans} children outlived the parent): no report")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# SPDX-License-Identifier: BSD-3-Clause
"""stagevar exporter against the real memcached fork: its /metrics passes
promtool, a server that stops is reported down at the next scrape (never
as zeros) and comes back when the server does; a memcached on its host
gets its threads' and its CPUs' counters, a server that only claims a
local memcached's pid gets none; bad flags exit 2."""
from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import Iterator

import pytest

from conftest import binary_or_skip
from stagevar_bench.memcache_client import Client
from stagevar_bench.servers import MemcachedServer, free_port, stop_process

EXPORTER = [sys.executable, "-m", "stagevar_bench", "exporter"]


def scrape(port: int, path: str = "/metrics") -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=20) as r:
        if path != "/":
            assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        return r.read().decode()


def series(text: str, instance: str) -> list[str]:
    return [l for l in text.splitlines() if f'instance="{instance}"' in l]


@pytest.fixture
def exporter_for() -> Iterator:
    procs: list[subprocess.Popen[bytes]] = []

    def start(*targets: str) -> int:
        port = free_port()
        proc = subprocess.Popen([*EXPORTER, "--port", str(port), "--timeout", "2",
                                 *[a for t in targets for a in ("--target", t)]],
                                stderr=subprocess.PIPE)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                scrape(port, "/")
                return port
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        raise AssertionError("the exporter did not serve within 30 s")
    yield start
    for p in procs:
        stop_process(p)


def test_metrics_pass_promtool_and_a_stopped_server_is_down_then_back(exporter_for) -> None:
    binary = binary_or_skip("fork", "memcached")
    server = MemcachedServer(binary, args=["-t", "1", "-o", "stage_trace,stage_trace_sample=1"]).start()
    inst = f"127.0.0.1:{server.port}"
    try:
        with Client(port=server.port) as c:
            for i in range(20):
                c.command(f"set k{i} 0 0 1\r\nx", b"STORED\r\n")
        port = exporter_for(inst)
        text = scrape(port)
        assert f'stagevar_memcached_up{{instance="{inst}"}} 1.0' in text
        assert f'stagevar_memcached_stage_trace{{instance="{inst}"}} 1.0' in text
        assert f'stagevar_memcached_cmd_set_total{{instance="{inst}"}} 20.0' in text
        assert f'stagevar_stage_missing_total{{instance="{inst}",stage="kernel_to_read"}}' in text
        if shutil.which("promtool"):
            proc = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                                  capture_output=True, timeout=30)
            assert proc.returncode == 0, proc.stdout + proc.stderr

        server.stop()
        down = scrape(port)
        assert series(down, inst) == [f'stagevar_memcached_up{{instance="{inst}"}} 0.0']

        server = MemcachedServer(binary, port=server.port,
                                 args=["-t", "1", "-o", "stage_trace"]).start()
        back = scrape(port)
        assert f'stagevar_memcached_up{{instance="{inst}"}} 1.0' in back
        assert f'stagevar_memcached_cmd_set_total{{instance="{inst}"}} 0.0' in back
    finally:
        server.stop()


def test_one_exporter_keeps_servers_apart_and_probe_answers_for_one(exporter_for) -> None:
    binary = binary_or_skip("fork", "memcached")
    with MemcachedServer(binary) as a, MemcachedServer(binary, args=["-o", "stage_trace"]) as b:
        ia, ib = f"127.0.0.1:{a.port}", f"127.0.0.1:{b.port}"
        port = exporter_for(ia, ib)
        text = scrape(port)
        assert f'stagevar_memcached_stage_trace{{instance="{ia}"}} 0.0' in text
        assert f'stagevar_memcached_stage_trace{{instance="{ib}"}} 1.0' in text
        one = scrape(port, f"/probe?target={ib}")
        assert series(one, ib) and not series(one, ia)
        with pytest.raises(urllib.error.HTTPError) as e:
            scrape(port, "/probe?target=127.0.0.1:1")
        assert e.value.code == 400


def value(text: str, name: str, labels: str) -> float:
    m = re.search(rf"^{re.escape(name)}{{{re.escape(labels)}}} (\S+)$", text, re.M)
    assert m, (name, labels)
    return float(m.group(1))


def test_a_memcached_on_this_host_gets_its_scheduling_counters(exporter_for) -> None:
    binary = binary_or_skip("fork", "memcached")
    with MemcachedServer(binary, args=["-t", "2"]) as server:
        inst = f"127.0.0.1:{server.port}"
        port = exporter_for(inst)
        first = scrape(port)
        assert value(first, "stagevar_memcached_local_process", f'instance="{inst}"') == 1
        workers = f'instance="{inst}",thread="mc-worker"'
        assert value(first, "stagevar_memcached_threads", workers) == 2
        for name in ("stagevar_memcached_thread_cpu_seconds_total",
                     "stagevar_memcached_thread_runqueue_seconds_total",
                     "stagevar_memcached_thread_timeslices_total"):
            assert value(first, name, workers) >= 0
            assert value(first, name, f'instance="{inst}",thread="mc-lrumaint"') >= 0
        assert value(first, "stagevar_memcached_allowed_cpus", f'instance="{inst}"') >= 1
        other = "stagevar_memcached_other_tasks_cpu_seconds_total"
        assert value(first, other, f'instance="{inst}"') == 0       # from the first reading on
        second = scrape(port)
        assert value(second, other, f'instance="{inst}"') >= 0
        if shutil.which("promtool"):
            proc = subprocess.run(["promtool", "check", "metrics"], input=second, text=True,
                                  capture_output=True, timeout=30)
            assert proc.returncode == 0, proc.stdout + proc.stderr


def impostor(pid: int) -> tuple[socket.socket, threading.Thread]:
    """A server on loopback that answers `stats` with a real local memcached's
    pid (a memcached on another host, whose pid happens to match, would look
    the same), and refuses every other command."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                pending = b""
                while chunk := conn.recv(4096):
                    pending += chunk
                    while b"\n" in pending:
                        line, pending = pending.split(b"\n", 1)
                        conn.sendall(f"STAT pid {pid}\r\nSTAT uptime 5\r\nEND\r\n".encode()
                                     if line.strip() == b"stats" else b"ERROR\r\n")
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def test_a_server_that_only_claims_a_local_pid_gets_no_scheduling_counters(exporter_for) -> None:
    binary = binary_or_skip("fork", "memcached")
    with MemcachedServer(binary) as real:
        assert real.proc is not None
        listener, _ = impostor(real.proc.pid)
        try:
            inst = f"127.0.0.1:{listener.getsockname()[1]}"
            text = scrape(exporter_for(inst))
            assert value(text, "stagevar_memcached_up", f'instance="{inst}"') == 1
            assert value(text, "stagevar_memcached_local_process", f'instance="{inst}"') == 0
            assert "stagevar_memcached_thread_cpu_seconds_total{" not in text
            assert "stagevar_memcached_other_tasks_cpu_seconds_total{" not in text
        finally:
            listener.close()


@pytest.mark.parametrize("args, named", [
    (["--target", "nohost"], "'nohost'"),
    (["--target", "127.0.0.1:99999"], "'127.0.0.1:99999'"),
    (["--target", "127.0.0.1:11211", "--port", "http"], "'http'"),
    (["--target", "127.0.0.1:11211", "--timeout", "-1"], "'-1'"),
    ([], "--target"),
    (["--target", "127.0.0.1:11211", "--listen", "999.0.0.1"], "'999.0.0.1'"),
])
def test_bad_flags_exit_2_naming_the_value(args: list[str], named: str) -> None:
    proc = subprocess.run([*EXPORTER, *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert named in proc.stderr


def test_help_names_the_flags() -> None:
    proc = subprocess.run([*EXPORTER, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    for flag in ("--target", "--listen", "--port", "--timeout"):
        assert flag in proc.stdout

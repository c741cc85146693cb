# SPDX-License-Identifier: BSD-3-Clause
"""stagevar exporter against the real memcached fork: its /metrics passes
promtool, a server that stops is reported down at the next scrape (never
as zeros) and comes back when the server does; bad flags exit 2."""
from __future__ import annotations

import shutil
import subprocess
import sys
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

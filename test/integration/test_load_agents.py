# SPDX-License-Identifier: BSD-3-Clause
"""stagevar load --agents against real agents: three network namespaces,
each with its own sshd (a throwaway host key, a throwaway user key),
joined by veth pairs to a hub namespace where a fork memcached listens on
10.231.1.1 and `stagevar load` runs. Agent N is 10.231.N.2, its hub side
10.231.N.1; agents 2 and 3 reach 10.231.1.1 through their hub side.

The addresses exist only inside namespaces this test makes, so several
runs of it (or other work) never meet.
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import binary_or_skip, loadgen_binary, wait_until
from stagevar_bench.servers import REPO, MemcachedServer

AGENTS = 3
SSHD = Path("/usr/sbin/sshd")
RATE = 30000
pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root"),
    pytest.mark.skipif(not SSHD.exists(), reason="needs openssh-server (tools/setup installs it)"),
]


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


class Lab:
    """The hub, the agents' namespaces and their sshds; remove() undoes all."""

    def __init__(self, tmp: Path) -> None:
        tag = f"{os.getpid() % 10000}"
        self.tmp = tmp
        self.hub = f"svlhub{tag}"
        self.agents = [f"svla{tag}n{n}" for n in range(1, AGENTS + 1)]
        self.namespaces: list[str] = []
        self.sshds: list[subprocess.Popen[bytes]] = []
        self.key = tmp / "user_key"

    def addr(self, n: int) -> str:
        return f"10.231.{n}.2"

    def specs(self) -> str:
        return ",".join(f"root@{self.addr(n)}" for n in range(1, AGENTS + 1))

    def wrap(self, ns: str) -> list[str]:
        return ["ip", "netns", "exec", ns]

    def create(self) -> "Lab":
        for ns in [self.hub, *self.agents]:
            ip("netns", "add", ns)
            self.namespaces.append(ns)
            ip("-n", ns, "link", "set", "lo", "up")
        for n, ns in enumerate(self.agents, 1):
            hub_if, agent_if = f"svlh{n}", f"svla{n}"
            ip("-n", self.hub, "link", "add", hub_if, "type", "veth", "peer", "name", agent_if, "netns", ns)
            ip("-n", self.hub, "addr", "add", f"10.231.{n}.1/24", "dev", hub_if)
            ip("-n", self.hub, "link", "set", hub_if, "up")
            ip("-n", ns, "addr", "add", f"{self.addr(n)}/24", "dev", agent_if)
            ip("-n", ns, "link", "set", agent_if, "up")
            ip("-n", ns, "route", "add", "default", "via", f"10.231.{n}.1")
        self.keys()
        for n, ns in enumerate(self.agents, 1):
            self.sshds.append(self.start_sshd(n, ns))
        for n in range(1, AGENTS + 1):
            try:
                wait_until(f"sshd on {self.addr(n)}", lambda n=n: self.ssh_ok(n), timeout=30, poll_s=0.3)
            except AssertionError as e:
                raise AssertionError(f"{e}; its log:\n{(self.tmp / f'sshd_{n}.log').read_text()}") from None
        return self

    def keys(self) -> None:
        for name in ("host_key", "user_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(self.tmp / name)],
                           check=True, capture_output=True, timeout=30)
        (self.tmp / "authorized_keys").write_text((self.tmp / "user_key.pub").read_text())
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)     # sshd's privilege-separation dir

    def start_sshd(self, n: int, ns: str) -> subprocess.Popen[bytes]:
        conf = self.tmp / f"sshd_{n}.conf"
        conf.write_text(f"""ListenAddress {self.addr(n)}
Port 22
HostKey {self.tmp / 'host_key'}
PidFile none
AuthorizedKeysFile {self.tmp / 'authorized_keys'}
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PrintMotd no
AcceptEnv ASAN_OPTIONS UBSAN_OPTIONS
""")
        log = open(self.tmp / f"sshd_{n}.log", "wb")
        return subprocess.Popen([*self.wrap(ns), str(SSHD), "-D", "-e", "-f", str(conf)],
                                stdout=log, stderr=subprocess.STDOUT)

    def ssh_opts(self) -> list[str]:
        # SendEnv: a sanitizer build's loadgen reports where the pass looks.
        return ["--ssh-opt", f"-i {self.key}", "--ssh-opt", "-o StrictHostKeyChecking=no",
                "--ssh-opt", "-o UserKnownHostsFile=/dev/null", "--ssh-opt", "-o LogLevel=ERROR",
                "--ssh-opt", "-o SendEnv=ASAN_OPTIONS", "--ssh-opt", "-o SendEnv=UBSAN_OPTIONS"]

    def ssh_ok(self, n: int) -> bool:
        cmd = [*self.wrap(self.hub), "ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-i", str(self.key),
               "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
               f"root@{self.addr(n)}", "true"]
        return subprocess.run(cmd, capture_output=True, timeout=30).returncode == 0

    def loadgens_in(self, ns: str, loadgen: Path) -> list[int]:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=10).stdout
        pids = []
        for pid in out.split():
            try:
                if os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(loadgen):
                    pids.append(int(pid))
            except OSError:
                pass
        return pids

    def remove(self) -> None:
        for p in self.sshds:
            p.terminate()
        for p in self.sshds:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        for ns in reversed(self.namespaces):
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=20)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    lab = Lab(tmp_path_factory.mktemp("agents"))
    try:
        yield lab.create()
    finally:
        lab.remove()


@pytest.fixture(scope="module")
def server(lab: Lab) -> Iterator[MemcachedServer]:
    binary = binary_or_skip("fork", "memcached")
    with MemcachedServer(binary, wrap=lab.wrap(lab.hub), host="10.231.1.1", netns=lab.hub) as s:
        yield s


def stagevar_load(lab: Lab, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO / "bench"))
    return subprocess.run([*lab.wrap(lab.hub), sys.executable, "-m", "stagevar_bench", "load", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def load_args(server: MemcachedServer, duration: str = "5s") -> list[str]:
    return ["-s", "10.231.1.1", "-p", str(server.port), "-r", str(RATE), "-d", duration, "-w", "1s",
            "--keys", "10000", "--allow-nonloopback"]


def p99_of(hist: list[list[int]]) -> tuple[int, int]:
    """The bucket (low, width) holding the ceil(0.99 n)-th value."""
    rank = math.ceil(0.99 * sum(n for _, _, n in hist))
    seen = 0
    for low, width, n in sorted(hist):
        seen += n
        if seen >= rank:
            return low, width
    raise AssertionError("empty histogram")


def test_three_agents_merge_exactly(lab: Lab, server: MemcachedServer, tmp_path: Path) -> None:
    out, hdr = tmp_path / "load.json", tmp_path / "load.hlog"
    loadgen = loadgen_binary()
    proc = stagevar_load(lab, "--agents", lab.specs(), *lab.ssh_opts(), "--agent-loadgen", str(loadgen),
                         "--json", str(out), "--hdr-log", str(hdr), "--", *load_args(server))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    r = json.loads(out.read_text())
    agents = r["agents"]
    assert [a["agent"] for a in agents] == lab.specs().split(",") and not r["partial"]
    assert r["counts"]["completed"] == sum(a["counts"]["completed"] for a in agents) > 0
    assert r["counts"]["errors"] == 0 and r["counts"]["lost"] == 0
    assert abs(r["rates"]["achieved"] - r["rates"]["offered"]) <= 0.02 * r["rates"]["offered"], r["rates"]
    assert r["rates"]["offered"] == pytest.approx(RATE)
    assert sorted(a["meta"]["seed"] for a in agents) == [1, 2, 3]
    summed: dict[tuple[int, int], int] = {}
    for a in agents:
        for low, width, n in a["latency_scheduled"]["histogram"]:
            summed[(low, width)] = summed.get((low, width), 0) + n
    assert r["latency_scheduled"]["histogram"] == [[lo, w, n] for (lo, w), n in sorted(summed.items())]
    low, width = p99_of([[lo, w, n] for (lo, w), n in summed.items()])
    assert low - width <= r["latency_scheduled"]["p99"] < low + 2 * width
    # One start for all. What holds by construction: every agent's
    # schedule has the requested origin (skew 0), and no agent's threads
    # began before it (they spin to it on CLOCK_REALTIME, which the
    # namespaces share). How soon after it each began is how soon it got
    # a CPU, which three agents and memcached on a busy 2-core machine
    # are not promised: that skew is measured, not asserted
    # (bench/results/2026-12-02-agents-skew.md).
    start = r["meta"]["start"]
    assert all(a["meta"]["start_unix_ns"] == start["requested_unix_ns"] for a in agents)
    assert start["skew_ns"] == 0
    assert len(start["woke_late_ns"]) == AGENTS and all(late >= 0 for late in start["woke_late_ns"])
    assert start["woke_skew_ns"] == max(start["woke_late_ns"]) - min(start["woke_late_ns"])
    assert len(start["first_send_late_ns"]) == AGENTS and all(late >= 0 for late in start["first_send_late_ns"])
    print("start:", start)
    hdr_counts = hdr_log_counts(hdr)
    assert hdr_counts == [s["latency_count"] for s in r["time_series"]]


def hdr_log_counts(path: Path) -> list[int]:
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogReader

    reader = HistogramLogReader(str(path), HdrHistogram(1, 1 << 37, 3))
    counts = []
    while (h := reader.get_next_interval_histogram()) is not None:
        counts.append(h.get_total_count())
    reader.close()
    return counts


def test_killed_agent_is_named_and_the_rest_written(lab: Lab, server: MemcachedServer, tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    loadgen = loadgen_binary()
    env = dict(os.environ, PYTHONPATH=str(REPO / "bench"))
    cmd = [*lab.wrap(lab.hub), sys.executable, "-m", "stagevar_bench", "load", "--agents", lab.specs(),
           *lab.ssh_opts(), "--agent-loadgen", str(loadgen), "--json", str(out), "--",
           *load_args(server, "6s")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        victim = wait_until("agent 2's loadgen", lambda: lab.loadgens_in(lab.agents[1], loadgen), timeout=30)
        time.sleep(4)                       # into its measurement
        for pid in victim:
            os.kill(pid, signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, stdout + stderr
    assert lab.addr(2) in stdout
    r = json.loads(out.read_text())
    assert r["partial"] and [f["agent"] for f in r["failed"]] == [f"root@{lab.addr(2)}"]
    assert [a["agent"] for a in r["agents"]] == [f"root@{lab.addr(n)}" for n in (1, 3)]
    assert r["counts"]["completed"] == sum(a["counts"]["completed"] for a in r["agents"]) > 0


def test_unreachable_agent_and_missing_loadgen_are_named(lab: Lab, server: MemcachedServer,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    nowhere = "root@10.231.1.9"             # on agent 1's link, no host there
    proc = stagevar_load(lab, "--agents", f"root@{lab.addr(1)},{nowhere}", *lab.ssh_opts(),
                         "--ssh-opt", "-o ConnectTimeout=3", "--agent-loadgen", str(loadgen_binary()),
                         "--json", str(out), "--", *load_args(server, "1s"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"agent {nowhere}" in proc.stdout
    r = json.loads(out.read_text())
    assert r["partial"] and [a["agent"] for a in r["agents"]] == [f"root@{lab.addr(1)}"]
    proc = stagevar_load(lab, "--agents", f"root@{lab.addr(3)}", *lab.ssh_opts(),
                         "--agent-loadgen", "/nonexistent/loadgen", "--json", "-", "--", *load_args(server, "1s"))
    assert proc.returncode == 1
    assert f"agent root@{lab.addr(3)} lacks loadgen at /nonexistent/loadgen" in proc.stderr
    r = json.loads(proc.stdout)
    assert r["partial"] and r["agents"] == [] and r["failed"][0]["agent"] == f"root@{lab.addr(3)}"

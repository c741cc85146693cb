# SPDX-License-Identifier: BSD-3-Clause
"""Stage latency in a real Prometheus (docs/monitoring.md): Debian's
prometheus scrapes two memcached forks through `stagevar exporter` and one
httpd fork's /stage-stats?metrics, each server in a network namespace of
its own (a host of its own, reached over a veth), under bounded loadgen
load. Then `stagevar profile --prometheus` must rank each server's stages
as the server's own `stats stages` / `?json` does, with the variances
within 10% of the servers' Welford variances.

The fleet profile needs stage buckets: from memcached, `stats stages
hist` (not in the fork yet: the exporter then gives up and
stagevar_memcached_stage_histograms 0); from httpd, ?metrics. A server
without them is left out of the comparison, and the comparison is skipped
when no server has them; everything else (Prometheus scraping the
exporter, promtool on both expositions, the servers kept apart, bad input)
runs always.

The advisor's evidence: the two memcached are pinned to different CPUs,
and a busy loop (bounded, and killed at the end) shares the first one's.
The exporter runs on their host, so it serves their threads' and their
CPUs' other tasks' counters; the fleet profile must decline the amortized
LRU for the memcached beside the loop, naming the neighbour, and judge
the other on its own evidence, its maintainer's measured CPU.
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import binary_or_skip, loadgen_binary, wait_until
from stagevar_bench import stages as st
from stagevar_bench.memcache_client import stats
from stagevar_bench.servers import HttpdServer, MemcachedServer, free_port, stop_process

STAGEVAR = [sys.executable, "-m", "stagevar_bench"]
CONTENT_TYPE = "text/plain; version=0.0.4"
MC_ARGS = ["-t", "1", "-o", "stage_trace,stage_trace_sample=1"]
LOAD_S = "4s"

SCRAPES_S = 30.0         # a few scrape intervals, on a busy machine
LOOP_S = 300             # the busy loop's own deadline, well past the test's end
BUSY_LOOP = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end:\n    pass\n"
POLL_S = 0.25            # between queries to Prometheus


class Host:
    """A network namespace joined to this one by a veth pair with a /30:
    `outside` on our side, `addr` inside. Removing the namespace removes
    both veth ends."""

    def __init__(self, i: int) -> None:
        tag = f"{os.getpid() % 10000}{i}{random.randrange(10)}"
        self.name = f"svprom{tag}"
        self.outer_if, self.inner_if = f"svpo{tag}", f"svpi{tag}"
        net = random.randrange(1 << 14) * 4          # a random /30 in 10.232.0.0/16
        self.outside = f"10.232.{net >> 8}.{(net & 255) + 1}"
        self.addr = f"10.232.{net >> 8}.{(net & 255) + 2}"

    def ip(self, *args: str, inside: bool = False) -> None:
        cmd = ["ip", *(["netns", "exec", self.name, "ip"] if inside else []), *args]
        subprocess.run(cmd, check=True, capture_output=True, timeout=10)

    def create(self) -> "Host":
        self.ip("netns", "add", self.name)
        self.ip("link", "add", self.outer_if, "type", "veth", "peer", "name", self.inner_if)
        self.ip("link", "set", self.inner_if, "netns", self.name)
        self.ip("addr", "add", f"{self.outside}/30", "dev", self.outer_if)
        self.ip("link", "set", self.outer_if, "up")
        self.ip("addr", "add", f"{self.addr}/30", "dev", self.inner_if, inside=True)
        self.ip("link", "set", self.inner_if, "up", inside=True)
        self.ip("link", "set", "lo", "up", inside=True)
        return self

    def wrap(self) -> list[str]:
        return ["ip", "netns", "exec", self.name]

    def remove(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=10)
        subprocess.run(["ip", "link", "del", self.outer_if], capture_output=True, timeout=10)


def get(url: str, timeout: float = 10) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), ""


def promtool_ok(text: str) -> None:
    proc = subprocess.run(["promtool", "check", "metrics"], input=text, text=True,
                          capture_output=True, timeout=30)
    assert proc.returncode == 0, proc.stdout + proc.stderr


class Prometheus:
    def __init__(self, root: Path, config: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        (root / "prometheus.yml").write_text(config)
        self.log = open(root / "prometheus.log", "wb")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={root / 'prometheus.yml'}",
             f"--storage.tsdb.path={root / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=self.log)
        wait_until("prometheus ready", lambda: self.ready(), 60, POLL_S)

    def ready(self) -> bool:
        assert self.proc.poll() is None, "prometheus exited (see its log)"
        try:
            return get(f"{self.url}/-/ready", 2)[0] == 200
        except (urllib.error.URLError, OSError):
            return False

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        params = {"query": promql} | ({"time": f"{at:.3f}"} if at is not None else {})
        _, _, body = get(f"{self.url}/api/v1/query?{urllib.parse.urlencode(params)}")
        return list(json.loads(body)["data"]["result"])

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.close()


CONFIG = """\
global:
  scrape_interval: 2s
  scrape_timeout: 2s
scrape_configs:
  - job_name: memcached
    honor_labels: true          # the exporter's instance label: the memcached, not the exporter
    static_configs:
      - targets: ['127.0.0.1:{exporter}']
  - job_name: httpd
    metrics_path: /stage-stats
    params:
      metrics: ['']
    static_configs:
      - targets: ['{httpd}']
"""

HANDLER = """\
StageTrace on
StageTraceSample 1
<Location "/stage-stats">
    SetHandler stage-stats
    Require ip {outside}
</Location>
"""


def has_memcached_buckets(host: str, port: int) -> bool:
    return any(":bucket_" in k for k in stats(host, port, "stages hist"))


def httpd_metrics(url: str) -> str | None:
    """?metrics as the handler serves it, or None while the fork has no
    ?metrics: 404/400, or the handler's HTML page for a query it ignores."""
    status, ctype, body = get(url)
    if status in (400, 404) or ctype.startswith("text/html"):
        return None
    assert status == 200 and ctype.startswith(CONTENT_TYPE), (status, ctype)
    return body


def loadgen(host: str, port: int, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(loadgen_binary()), "-s", host, "-p", str(port), "--allow-nonloopback",
                             "-d", LOAD_S, "-w", "0.5s", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("needs root and ip to create network namespaces")
    made: list[Host] = []
    try:
        for i in range(3):
            made.append(Host(i))
            made[-1].create()
        yield made
    finally:
        for h in made:
            h.remove()


def own_ranking(server_stages: dict[str, dict[str, float]]) -> list[st.RankedStage]:
    return st.rank_stages(server_stages)


def welford_at(prom: Prometheus, inst: str, at: float) -> dict[str, dict[str, float]]:
    """A memcached's own stage statistics as the exporter served them
    (stats stages: Welford mean and stddev) in the scrape Prometheus holds
    at time `at`."""
    out: dict[str, dict[str, float]] = {}
    for r in prom.query(f'stagevar_memcached_stage_stat_seconds{{instance="{inst}"}}', at):
        out.setdefault(r["metric"]["stage"], {})[r["metric"]["stat"]] = float(r["value"][1]) * 1e9
    for r in prom.query(f'stagevar_stage_seconds_count{{instance="{inst}"}}', at):
        out.setdefault(r["metric"]["stage"], {})["count"] = float(r["value"][1])
    return out


def test_fleet_profile_from_a_real_prometheus(hosts: list[Host], tmp_path: Path) -> None:
    if not shutil.which("prometheus") or not shutil.which("promtool"):
        pytest.skip("prometheus is not installed (tools/setup installs it)")
    mc_bin, httpd_bin = binary_or_skip("fork", "memcached"), binary_or_skip("fork", "httpd")
    loadgen_binary()
    h_a, h_b, h_web = hosts
    if (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 CPUs: one memcached beside a busy loop, one on a CPU without it")
    # memcached a on CPU 0, beside the busy loop; memcached b on CPU 1.
    mcs = [MemcachedServer(mc_bin, args=MC_ARGS, port=11211, wrap=[*h.wrap(), "taskset", "-c", str(cpu)],
                           host=h.addr) for cpu, h in enumerate((h_a, h_b))]
    web = HttpdServer(httpd_bin, extra_conf=HANDLER.format(outside=h_web.outside), wrap=h_web.wrap(),
                      host=h_web.addr)
    web.write_conf()
    (web.docroot / "index.html").write_text("x" * 280 + "\n")
    procs: list[subprocess.Popen[bytes]] = []
    prom: Prometheus | None = None
    try:
        for s in mcs:
            s.start()
        procs.append(subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", BUSY_LOOP.format(s=LOOP_S)]))
        web.start()
        insts = [f"{h.addr}:11211" for h in (h_a, h_b)]
        exporter_port = free_port()
        procs.append(subprocess.Popen([*STAGEVAR, "exporter", "--port", str(exporter_port),
                                       *[a for i in insts for a in ("--target", i)]],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
        web_inst = f"{h_web.addr}:{web.port}"
        prom = Prometheus(tmp_path, CONFIG.format(exporter=exporter_port, httpd=web_inst))

        # Load: bursts (Pareto gaps, C² 20) at 12,000 req/s on one worker queue many
        # requests, so a stage's variance is spread over hundreds of values whose
        # bucket errors average out; at an even 4,000 req/s it was a few stalls of
        # the same length, all in one bucket, and came out up to 11% off. The
        # ranking is led by kernel_to_read, 73-100% of the variance in twelve runs
        # (twice read_to_parse, 60-67%): no near tie. httpd: bursts at 1,500 req/s,
        # led by kernel_to_read (94-100%).
        load = [loadgen(h.addr, 11211, "-r", "12000", "-a", "pareto:cv2=20") for h in (h_a, h_b)]
        load.append(loadgen(h_web.addr, web.port, "-P", "http", "-r", "1500", "-c", "4", "-a", "pareto:cv2=20"))
        for p in load:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err.decode()

        # The exposition of each producer passes promtool.
        _, ctype, exposition = get(f"http://127.0.0.1:{exporter_port}/metrics")
        assert ctype.startswith(CONTENT_TYPE)
        promtool_ok(exposition)
        web_metrics = httpd_metrics(web.url("/stage-stats?metrics"))
        if web_metrics is not None:
            promtool_ok(web_metrics)
            assert "stagevar_stage_seconds_bucket{" in web_metrics

        # Prometheus keeps the two memcached apart, both up.
        up = wait_until("both memcached up in Prometheus", lambda: {
            r["metric"]["instance"]: r["value"][1] for r in prom.query("stagevar_memcached_up")
            if r["value"][1] == "1"} if len(prom.query("stagevar_memcached_up == 1")) == 2 else None,
            SCRAPES_S, POLL_S)
        assert set(up) == set(insts)

        # A scrape after the load, for each server with buckets.
        seen: dict[str, float] = {}
        for inst, h in zip(insts, (h_a, h_b)):
            if has_memcached_buckets(h.addr, 11211):
                seen[inst] = st.read_memcached_stages(h.addr, 11211)["server_total"]["count"]
        httpd_own = st.read_httpd_stages(h_web.addr, web.port) if web_metrics is not None else None
        if httpd_own is not None:
            seen[web_inst] = httpd_own["server_total"]["count"]
        if not seen:
            pytest.skip("no server gives stage buckets yet: memcached's `stats stages hist` and "
                        "httpd's ?metrics are not in the forks; the fleet comparison needs one")
        if httpd_own is not None:
            wait_until("Prometheus scraping httpd: it asks for /stage-stats?metrics= (params "
                       "cannot send a bare ?metrics), which the handler must take as ?metrics",
                       lambda: prom.query('up{job="httpd"} == 1'), SCRAPES_S, POLL_S)
        for inst, n in seen.items():
            wait_until(f"a scrape of {inst} with {n:.0f} requests", lambda: [
                r for r in prom.query(f'stagevar_stage_seconds_count{{instance="{inst}",'
                                      f'stage="server_total"}} >= {n}')], SCRAPES_S, POLL_S)

        # A scrape that fails on this busy machine marks its series stale until the
        # next one: profile again (a few times) until it holds every server.
        out = tmp_path / "fleet.json"

        def fleet_profile() -> dict[str, Any] | None:
            proc = subprocess.run([*STAGEVAR, "profile", "--prometheus", prom.url, "--window", "10m",
                                   "--json", str(out)], capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            assert "knob:" in proc.stdout
            print(proc.stdout)                  # shown when the test fails, or with -s
            got = json.loads(out.read_text())
            return got if set(seen) <= {i["name"] for i in got["instances"]} else None
        profile = wait_until("a fleet profile with every server", fleet_profile, 20, POLL_S)
        fleet = {i["name"]: i for i in profile["instances"]}
        # The servers' own Welford statistics of the same window: memcached's from the
        # same scrape as the buckets (every request the window holds, the exporter's
        # own stats commands included: one idle wake-up of a few ms moves a variance
        # by several percent); httpd's ?json, read just before that scrape.
        own = {inst: welford_at(prom, inst, profile["end"]) for inst in seen if inst != web_inst}
        if httpd_own is not None:
            own[web_inst] = httpd_own
        for inst, s in own.items():
            mine = own_ranking(s)
            theirs = fleet[inst]["ranked"]
            # The top stage: the server's own, unless its first two are within 10% (a near tie).
            near_tie = len(mine) > 1 and mine[1].variance_ns2 >= 0.9 * mine[0].variance_ns2
            tops = {r.name for r in mine[:2]} if near_tie else {mine[0].name}
            assert theirs[0]["name"] in tops, (inst, theirs[0]["name"], [r.name for r in mine])
            # The variances that rank the stages (a quarter of the total or more: the top
            # stage always is one) within 10% of Welford's. A stage with a smaller share
            # owes its variance to a few rare values, where the bucket midpoints' error
            # does not average out (measured up to +11%; docs/monitoring.md). Beside the
            # busy loop a handful of stalls of hundreds of ms are most of every
            # variance (C² in the thousands), so that instance is left out here.
            if inst == insts[0]:
                continue
            by_name = {r["name"]: r for r in theirs}
            for r in mine:
                if r.share >= 0.25:
                    ratio = by_name[r.name]["variance_ns2"] / r.variance_ns2
                    print(f"{inst} {r.name}: share {r.share:.2f}, variance from buckets / Welford's "
                          f"{ratio:.4f}")
                    assert abs(ratio - 1) <= 0.10, (inst, r.name, ratio, s.get(r.name), by_name[r.name])
        # The advisor judges each memcached on its own evidence, from the exporter on
        # its host: beside the busy loop, the amortized LRU is declined for the
        # neighbour; the other is judged on its maintainer's measured CPU (it may
        # have neighbours of its own on this busy machine, so the knob or not).
        # kernel_to_read led in most runs, read_to_parse in a few: the LRU rule is
        # consulted only in the first case, the knob never given in either.
        inst_a, inst_b = insts
        for inst in insts:
            assert fleet[inst]["evidence"]["outside_cores"] is not None, fleet[inst]
            assert fleet[inst]["evidence"]["maintainer_cores"] is not None, fleet[inst]
            assert fleet[inst]["advice"]["knob"] != "unknown", fleet[inst]
        beside, quiet = fleet[inst_a], fleet[inst_b]
        assert beside["advice"]["knob"] != "amortized LRU", beside
        if beside["ranked"][0]["name"] == "kernel_to_read":
            assert "other tasks took" in beside["advice"]["reason"], beside
        if quiet["ranked"][0]["name"] == "kernel_to_read":
            assert re.search(r"LRU maintainer thread took [0-9.]+ cores", quiet["advice"]["reason"]), quiet
        assert profile["fleets"]["memcached"]["advice"]["knob"] != "amortized LRU"
        # The dashboard's p99 and spread share panels show every instance with buckets.
        for expr in dashboard_queries()[2:5]:
            wait_until(f"every server in {expr}", lambda: set(own) <= {
                r["metric"].get("instance") for r in prom.query(expr.replace("1m", "10m"))}, 20, POLL_S)
    finally:
        for p in procs:
            stop_process(p)
        if prom is not None:
            prom.stop()
        for s in mcs:
            s.stop()
        web.stop()


DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-stagevar.json"


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the Grafana dashboard and its variables,
    with Grafana's variables as it would fill them."""
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    exprs += [v["query"]["query"].removeprefix("label_values(").rsplit(",", 1)[0]
              for v in dash["templating"]["list"] if v["type"] == "query"]
    return [e.replace("$job", ".*").replace("$instance", ".*").replace("$__rate_interval", "1m")
            for e in exprs]


def test_fleet_profile_bad_input_and_the_dashboard_against_a_real_prometheus(tmp_path: Path) -> None:
    if not shutil.which("prometheus"):
        pytest.skip("prometheus is not installed (tools/setup installs it)")
    prom = Prometheus(tmp_path, "global:\n  scrape_interval: 1s\nscrape_configs: []\n")
    try:
        for args, named in ((["--match", '{job="nope"}'], '{job="nope"}'),
                            (["--match", '{job=~"("}'], '{job=~"("}'),
                            (["--window", "five"], "'five'")):
            proc = subprocess.run([*STAGEVAR, "profile", "--prometheus", prom.url, *args],
                                  capture_output=True, text=True, timeout=60)
            assert proc.returncode == 2, proc.stderr
            assert named in proc.stderr, proc.stderr
        down = f"http://127.0.0.1:{free_port()}"
        proc = subprocess.run([*STAGEVAR, "profile", "--prometheus", down], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 2 and f"cannot reach Prometheus at {down}" in proc.stderr
        # Prometheus parses every query of the dashboard.
        for expr in dashboard_queries():
            status, _, body = get(f"{prom.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}")
            assert status == 200 and json.loads(body)["status"] == "success", expr
    finally:
        prom.stop()

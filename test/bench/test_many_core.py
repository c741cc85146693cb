# SPDX-License-Identifier: BSD-3-Clause
"""bench/many-core/run at its smoke size against the built servers: the
files it writes and their shape (every declared cell reported, ratios
with CIs), and its refusals. Never its figures: on 2 CPUs they say
nothing about the knobs."""
from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from stagevar_bench.many_core import FULL, MC_LRU, UsageError, layout, plan
from stagevar_bench.servers import build_binary

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "bench" / "many-core" / "run"


def run(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(RUN), *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def table_rows(md: str, design: str) -> list[list[str]]:
    """The cells of one design's table in many-core.md."""
    section = md.split(f"### {design}\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    rows = [l for l in section.splitlines() if l.startswith("| ") and not l.startswith(("| level", "| design"))]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows]


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for server in ("memcached", "httpd"):
        if not build_binary("fork", server).exists():
            pytest.skip(f"{build_binary('fork', server)} is not built (run make)")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the smoke size needs 2 CPUs")
    out = tmp_path_factory.mktemp("many-core")
    res = run("--smoke", "--no-build", "--out", str(out), timeout=420)
    assert res.returncode == 0, res.stderr[-3000:]
    return out


def test_smoke_writes_plan_log_and_results(smoke: Path) -> None:
    assert {p.name for p in smoke.iterdir()} >= {"plan.json", "many-core.md", "many-core.log", "results.json.gz"}
    log = (smoke / "many-core.log").read_text()
    assert "plan:" in log and "done:" in log
    results = json.loads(gzip.decompress((smoke / "results.json.gz").read_bytes()))
    assert results["format"] == "stagevar-results/1"
    assert all(r["cell"]["knob"] for e in results["experiments"] for r in e["runs"])


def test_plan_is_written_before_the_first_run(smoke: Path) -> None:
    plan = json.loads((smoke / "plan.json").read_text())
    lines = (smoke / "many-core.log").read_text().splitlines()
    first_run = next(i for i, l in enumerate(lines) if "[round 1/" in l)
    assert any("plan:" in l for l in lines[:first_run])
    assert plan["statistic"] and plan["stop_rule"]
    names = [d["name"] for d in plan["designs"]]
    assert sum(n.startswith("httpd-") for n in names) == 4     # 2 connection modes x 2 thread counts
    assert names[-2:] == ["memcached-etc", "memcached-demo"]


def test_every_declared_cell_has_a_row_with_ratios(smoke: Path) -> None:
    plan = json.loads((smoke / "plan.json").read_text())
    md = (smoke / "many-core.md").read_text()
    for design in plan["designs"]:
        rows = table_rows(md, design["name"])
        levels = [l["name"] for l in design["levels"]]
        shares = (plan["loads"]["memcached" if design["server"] == "memcached" else "httpd"]
                  ["shares_of_capacity"])
        assert {(r[0], r[1].split("(")[-1]) for r in rows} == \
            {(l, f"{s:.0%})") for l in levels for s in shares}, design["name"]
        for r in rows:
            ratios = r[-3:]
            if r[0] == levels[0]:
                assert ratios == ["baseline"] * 3
            else:
                for cell in ratios:
                    assert re.fullmatch(r"x\d+\.\d\d \[(0|\d+\.\d\d), (inf|\d+\.\d\d)\]", cell), cell
            if design["server"] == "memcached":
                assert re.fullmatch(r"[01]\.\d{3}", r[8]), r       # the hit ratio
            assert re.fullmatch(r"-|\d+\.\d\d", r[7]), r           # the others' cores


def test_memcached_levels_cross_placement_and_lru(smoke: Path) -> None:
    plan = json.loads((smoke / "plan.json").read_text())
    design = next(d for d in plan["designs"] if d["name"] == "memcached-etc")
    args = {l["name"]: " ".join(l["server_args"]) for l in design["levels"]}
    assert len(args) == 4 * len(MC_LRU)
    assert "worker_cpus=" in args["both+no_lru_maintainer"] and "pin_helpers=" in args["both+no_lru_maintainer"]
    assert "no_lru_maintainer" in args["both+no_lru_maintainer"]
    assert args["float+lru-stock"] == ""
    assert "lru_amortized_budget_us=10" in args["pin_helpers+amortized-10us"]


def test_httpd_levels_turn_pinning_off_and_on(smoke: Path) -> None:
    plan = json.loads((smoke / "plan.json").read_text())
    for design in (d for d in plan["designs"] if d["server"] == "httpd"):
        confs = [l["httpd_conf"] for l in design["levels"]]
        assert "ProcessCorePinning off" in confs[0] and "ProcessCorePinning on" in confs[1]
        rpc = design["client_args"][design["client_args"].index("--requests-per-conn") + 1]
        assert rpc == ("1" if "conn-per-request" in design["name"] else "75")


@pytest.mark.parametrize("args, message", [
    (["--smoke", "--out", "/tmp", "--budget", "0"], "--budget: '0': want a number of seconds > 0"),
    (["--smoke", "--out", "/tmp", "--budget", "soon"], "'soon' is not a number of seconds"),
    (["--smoke", "--out", "/tmp", "--only", "nginx"], "invalid choice: 'nginx'"),
    (["--smoke", "--out", "/tmp", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["--smoke"], "no results folder: give --out DIR or set OUT"),
    (["--smoke", "--out", "/tmp", "--no-build", "--build-only"], "--no-build and --build-only exclude"),
    (["--smoke", "--out", "/tmp", "--upstream-cache", "/nonexistent/x"], "/nonexistent/x: no such directory"),
])
def test_bad_flags_are_refused_by_name(args: list[str], message: str) -> None:
    res = run(*args, env={"OUT": ""})
    assert res.returncode == 2
    assert message in res.stderr


def test_too_few_cpus_is_refused_without_smoke(tmp_path: Path) -> None:
    if len(os.sched_getaffinity(0)) >= 8:
        pytest.skip("this host has 8 or more CPUs")
    res = run("--out", str(tmp_path / "out"), "--no-build")
    assert res.returncode == 2
    assert "needs 8 or more CPUs" in res.stderr and "--smoke" in res.stderr
    assert not (tmp_path / "out").exists()


def test_full_size_on_16_cpus_keeps_server_and_client_apart() -> None:
    lay = layout(range(16), smoke=False)
    assert lay.server == tuple(range(8)) and lay.client == tuple(range(8, 16))
    p = plan(FULL, lay, None, 47, FULL.budget_s)
    httpd = [d for d in p["designs"] if d["server"] == "httpd"]
    assert len(httpd) == 6 and all(len(d["levels"]) == 2 for d in httpd)      # 2 modes x 5/10/25 threads
    assert {d["server_cpus"] for d in httpd} == {"0,1,2,3,4,5"}
    assert all("StartServers 6\n" in d["levels"][0]["httpd_conf"] for d in httpd)
    assert {d["client_cpus"] for d in p["designs"]} == {"8,9,10,11,12,13,14,15"}
    mc = [d for d in p["designs"] if d["server"] == "memcached"]
    assert len(mc) == 2 and all(len(d["levels"]) == 12 for d in mc)
    both = next(l for l in mc[0]["levels"] if l["name"] == "both+lru-stock")["server_args"]
    assert both == ["-o", "worker_cpus=0,1,2,3", "-o", "pin_helpers=4"]
    assert mc[0]["server_args"][:2] == ["-t", "4"]


@pytest.mark.parametrize("cpus", [range(2), range(7)])
def test_full_size_refuses_fewer_than_8_cpus(cpus: range) -> None:
    with pytest.raises(UsageError, match=f"may use {len(cpus)} "):
        layout(cpus, smoke=False)


def test_pinning_summary_has_every_httpd_comparison(smoke: Path) -> None:
    plan = json.loads((smoke / "plan.json").read_text())
    md = (smoke / "many-core.md").read_text()
    rows = table_rows(md, "ProcessCorePinning on / off, every httpd cell")
    httpd = [d["name"] for d in plan["designs"] if d["server"] == "httpd"]
    shares = plan["loads"]["httpd"]["shares_of_capacity"]
    assert sorted((r[0], r[1].split("(")[-1]) for r in rows) == \
        sorted((n, f"{s:.0%})") for n in httpd for s in shares)

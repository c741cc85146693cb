# SPDX-License-Identifier: BSD-3-Clause
"""End to end against the built servers: profile, compare in network
namespaces, and a tiny reproduction with its report and plots."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stagevar_bench import machine
from stagevar_bench.experiment import load_results
from stagevar_bench.servers import build_binary

BENCH = Path(__file__).resolve().parents[2] / "bench"


def need(variant: str, name: str) -> None:
    if not build_binary(variant, name).exists():
        pytest.skip(f"{build_binary(variant, name)} is not built (run make)")


def stagevar(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stagevar_bench", *args], cwd=BENCH,
                          capture_output=True, text=True, timeout=timeout)


def netns_list() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout


def test_profile_memcached_ranks_and_recommends(tmp_path: Path) -> None:
    need("fork", "memcached")
    out = stagevar("profile", "--server-args", "-t 1", "--rate", "5000", "--duration", "1s",
                   "--warmup", "0.3s", "--json", str(tmp_path / "p.json"), timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ranked by variance" in out.stdout and "recommendation:" in out.stdout
    assert "Pollaczek-Khinchine" in out.stdout
    p = json.loads((tmp_path / "p.json").read_text())
    assert {r["name"] for r in p["ranked"]} == {"kernel_to_read", "read_to_parse",
                                                "parse_to_response", "response_to_send"}
    variances = [r["variance_ns2"] for r in p["ranked"]]
    assert variances == sorted(variances, reverse=True)
    assert p["stages"]["server_total"]["count"] > 1000


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_compare_in_network_namespaces_cleans_up(tmp_path: Path) -> None:
    need("stock", "memcached")
    need("fork", "memcached")
    before = netns_list()
    out = stagevar("compare", "--level", "stock=stock", "--level", "fork=fork", "--server-args", "*=-t 1",
                   "--loads", "2000", "--runs", "2", "--duration", "0.5s", "--warmup", "0.2s", "--netns",
                   "--out", str(tmp_path / "r.json"), timeout=90)
    assert out.returncode == 0, out.stderr
    assert netns_list() == before
    res = json.loads((tmp_path / "r.json").read_text())
    runs = res["experiments"][0]["runs"]
    assert len(runs) == 4 and all(r["error"] is None for r in runs), [r["error"] for r in runs]
    assert all("--allow-nonloopback" in r["loadgen_cmd"] for r in runs)
    assert all(r["loadgen"]["meta"]["server"].startswith("10.211.") for r in runs)
    assert sorted(r["order"] for r in runs) == [0, 1, 2, 3]
    assert res["meta"]["kernel"] and res["meta"]["patches"]["memcached"]


def test_tiny_reproduction_writes_report_and_plots(tmp_path: Path) -> None:
    for v in ("stock", "fork"):
        for s in ("memcached", "httpd"):
            need(v, s)
    out = stagevar("reproduce", "--size", "tiny", "--out", str(tmp_path), timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    md = (tmp_path / "report.md").read_text()
    for section in ("Paper's claim vs measured here", "Profiles: stages ranked by variance",
                    "Experiment `batching`", "Experiment `pinning`", "Machine and software"):
        assert section in md
    assert "amortized LRU" in md          # measured, or skipped with a note
    pngs = list((tmp_path / "plots").glob("*.png"))
    names = {p.name for p in pngs}
    assert {"batching-tail.png", "batching-batch-cdf.png", "pinning-tail.png", "stage-variance.png",
            "batching-sweep-sensitivity.png", "pinning-threads-sweep-sensitivity.png"} <= names
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 1500 for p in pngs)
    for p in names:
        assert f"plots/{p}" in md
    assert (tmp_path / "report.html").stat().st_size > 5000
    assert (tmp_path / "results.json.gz").stat().st_size > 1000
    assert "Knob on / off at each threads_per_child" in md and "requests lost at" in md
    results = load_results(tmp_path / "results.json.gz")
    assert f"| CPU idle | {machine.cpu_idle_text(results['meta']['cpu_idle'])} |" in md
    check_pinning_clients(results)
    check_lru_loads(results, md)
    # The report comes again from the results alone.
    again = stagevar("report", str(tmp_path / "results.json.gz"), "--out", str(tmp_path / "again"),
                     timeout=120)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "again" / "report.md").read_text() == md


def check_pinning_clients(results: dict) -> None:
    """No pinning cell offers more connections than the server has workers."""
    runs = [(exp["design"], run) for exp in results["experiments"] if exp["design"]["server"] == "httpd"
            for run in exp["runs"]]
    assert runs
    for design, run in runs:
        level = next(l for l in design["levels"] if l["name"] == run["cell"]["knob"])
        cmd = run["loadgen_cmd"]
        clients = int(cmd[max(i for i, arg in enumerate(cmd) if arg == "--sequential-clients") + 1])
        assert clients <= level["params"]["threads_per_child"] * (os.cpu_count() or 1), (level["name"], clients)


def check_lru_loads(results: dict, md: str) -> None:
    """The LRU case's loads are shares of the saturation rate it measured."""
    claim = next(c for c in results["claims"] if c["use_case"].startswith("amortized LRU"))
    if claim.get("skipped"):
        return
    sat = claim["saturation"]
    assert any(p["rate"] == sat["rate"] and p["sustained"] for p in sat["probes"])
    lru = next(e for e in results["experiments"] if e["design"]["name"] == "lru")
    assert lru["design"]["loads"] == [round(sat["rate"] * 0.5, -1)]
    assert f"saturation measured at {sat['rate']:.0f} req/s" in md

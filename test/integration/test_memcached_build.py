# SPDX-License-Identifier: BSD-3-Clause
"""The memcached fork compiled without tracing: the pristine release plus
patches/memcached, configured with --disable-stage-trace, has none of the
tracing code and refuses -o stage_trace, while it still serves and its
other knobs still work."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from pymemcache.client.base import Client
from pymemcache.exceptions import MemcacheUnknownCommandError

from stagevar_bench.servers import LOOPBACK, REPO, MemcachedServer, build_dir

TOOLS = REPO / "tools"


def run(cmd: list[str], cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(cmd)}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
    return result


@pytest.fixture(scope="module")
def untraced_fork(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """memcached built from the fork's sources with --disable-stage-trace."""
    fetched = build_dir() / "upstream" / "memcached.path"
    if not fetched.exists() or shutil.which("autoreconf") is None:
        pytest.skip("no fetched memcached release or no autoreconf (run make)")
    src = tmp_path_factory.mktemp("fork-untraced") / "src"
    run([str(TOOLS / "unpack-upstream"), fetched.read_text().strip(), str(src)])
    run([str(TOOLS / "apply-series"), str(REPO / "patches" / "memcached" / "topics"), str(src)])
    run(["autoreconf", "-fi"], cwd=src)
    run(["./configure", "--disable-stage-trace"], cwd=src)
    run(["make", f"-j{len(os.sched_getaffinity(0))}", "memcached"], cwd=src)
    return src / "memcached"


def test_no_tracing_code_is_compiled_in(untraced_fork: Path) -> None:
    symbols = run(["nm", str(untraced_fork)]).stdout
    assert "lru_amortized" in symbols            # the fork's other code is there
    assert "stagetrace" not in symbols and "sv_record" not in symbols


def test_stage_trace_is_refused_and_not_offered(untraced_fork: Path) -> None:
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    for option in ("stage_trace", "stage_trace_sample=1"):
        result = subprocess.run([str(untraced_fork), *user, "-p", "0", "-U", "0", "-o", option],
                                capture_output=True, text=True, timeout=10)
        assert result.returncode != 0
        assert result.stderr.strip() == f'Illegal suboption "{option}"'
    usage = run([str(untraced_fork), "-h"]).stdout
    assert "stage_trace" not in usage and "lru_amortized_budget_us" in usage


def test_it_serves_with_its_other_knobs(untraced_fork: Path) -> None:
    with MemcachedServer(untraced_fork, args=["-o", "lru_amortized_budget_us=20"]) as server:
        client = Client((LOOPBACK, server.port), connect_timeout=5, timeout=5)
        client.set("k", b"v")
        assert client.get("k") == b"v"
        with pytest.raises(MemcacheUnknownCommandError):   # as stock answers it: ERROR
            client.stats("stages")

# SPDX-License-Identifier: BSD-3-Clause
"""memcached-t's changed checks: in a pass with -o hot_lru_pct=0, the two
checks of upstream's t/lru-maintainer.t that assert new items enter HOT
must fail, and only they; where they pass, the option did not take."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from stagevar_bench.servers import build_dir

MEMCACHED_T = Path(__file__).resolve().parents[1] / "upstream" / "memcached-t"


def lru_maintainer_verdict(pass_options: str) -> list[str]:
    """The result line of t/lru-maintainer.t in one pass, and its detail."""
    built = build_dir() / "src" / "memcached-fork"
    if not (built / "memcached-debug").exists():
        pytest.skip(f"{built}/memcached-debug is not built (run make)")
    env = dict(os.environ, MEMCACHED_TREE=str(built), MEMCACHED_T_OWN="",
               MEMCACHED_T_FILES="t/lru-maintainer.t", MEMCACHED_T_PASSES=pass_options)
    proc = subprocess.run([str(MEMCACHED_T)], capture_output=True, text=True,
                          timeout=240, env=env)
    lines = proc.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if "t/lru-maintainer.t" in line)
    return lines[start:]


def test_hot0_passes_when_exactly_the_hot_checks_fail() -> None:
    verdict = lru_maintainer_verdict("-o hot_lru_pct=0")
    assert verdict[0] == ("ok 3 - t/lru-maintainer.t [-o hot_lru_pct=0] "
                          "(226 checks, 44,224 changed as documented)")


def test_hot0_fails_when_the_hot_checks_pass() -> None:
    # The later option wins: HOT is back, so checks 44 and 224 pass.
    verdict = lru_maintainer_verdict("-o hot_lru_pct=0 -o hot_lru_pct=20")
    assert verdict[0] == "not ok 3 - t/lru-maintainer.t [-o hot_lru_pct=0 -o hot_lru_pct=20]"
    assert verdict[1] == ("# expected exactly checks 44,224 to fail (what the pass's option "
                          "changes), failed: none; exit status 0; planned 226, ran 226")

# SPDX-License-Identifier: BSD-3-Clause
"""reproduce's LRU runs start memcached with a hash table sized for their
keys, so that it does not grow (and stall the one server core) inside a
measured window."""
from __future__ import annotations

import subprocess
import time

import pytest

from stagevar_bench import memcache_client as mc
from stagevar_bench.machine import loadgen_path
from stagevar_bench.reproduce import hashpower_for
from stagevar_bench.servers import LOOPBACK, MemcachedServer, build_binary

KEYS = 200000
# memcached looks at the table's fill once a second; a doubling it decides
# on takes well under a second more, even on a busy machine.
GROWTH_WINDOW_S = 3.5


def power_after_preload(power: int) -> int:
    """hash_power_level once KEYS keys are set into a server started with
    -o hashpower=POWER and it has had its chance to grow the table."""
    binary = build_binary("fork", "memcached")
    if not binary.exists() or not loadgen_path().exists():
        pytest.skip("memcached fork or loadgen is not built (run make)")
    with MemcachedServer(binary, args=["-t", "1", "-m", "256", "-o", f"hashpower={power}"]) as server:
        subprocess.run([str(loadgen_path()), "-s", LOOPBACK, "-p", str(server.port), "--keys", str(KEYS),
                        "--preload", "-r", "1000", "-d", "0.2s", "-w", "0", "-q"],
                       check=True, capture_output=True, timeout=60)
        assert int(mc.stats(LOOPBACK, server.port)["curr_items"]) == KEYS
        time.sleep(GROWTH_WINDOW_S)
        stats = mc.stats(LOOPBACK, server.port)
        deadline = time.monotonic() + 10
        while stats["hash_is_expanding"] != "0" and time.monotonic() < deadline:
            time.sleep(0.05)
            stats = mc.stats(LOOPBACK, server.port)
        return int(stats["hash_power_level"])


def test_the_sized_table_does_not_grow() -> None:
    power = hashpower_for(KEYS)
    assert power_after_preload(power) == power


def test_one_power_less_grows() -> None:
    power = hashpower_for(KEYS) - 1
    assert power_after_preload(power) > power


def test_small_key_counts_keep_memcached_default() -> None:
    assert hashpower_for(1000) == hashpower_for(98304) == 16
    assert hashpower_for(98305) == 17

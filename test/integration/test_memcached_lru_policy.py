# SPDX-License-Identifier: BSD-3-Clause
"""What stock memcached's -o no_lru_maintainer gives up (docs/memcached.md,
"Segmented LRU or -o no_lru_maintainer"), on the built stock server over
loopback: the LRU turns flat, the maintainer's other duties and commands
go with it, and a read no longer protects an item that is under a minute
old."""
from __future__ import annotations

import os
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
from pymemcache.client.base import Client

from conftest import binary_or_skip
from stagevar_bench import memcache_client as mc
from stagevar_bench.servers import LOOPBACK, MemcachedServer

FLAT = ("-o", "no_lru_maintainer")
# A 2 MB cache of ~1 KB items holds under 2,000 of them: FILL items turn
# it over twice in well under a second, far inside ITEM_UPDATE_INTERVAL.
SMALL = ("-m", "2", "-t", "1")
VALUE = b"v" * 1000
FILL = 4000
BATCH = 50
ITEM_UPDATE_INTERVAL_S = 60   # memcached.h: a flat LRU bumps an item at most this often


@contextmanager
def stock(*options: str) -> Iterator[MemcachedServer]:
    with MemcachedServer(binary_or_skip("stock", "memcached"), args=list(options)) as server:
        yield server


def stats(server: MemcachedServer, kind: str = "") -> dict[str, str]:
    return mc.stats(LOOPBACK, server.port, kind)


def client(server: MemcachedServer) -> Client:
    return Client((LOOPBACK, server.port), connect_timeout=5, timeout=10, default_noreply=False)


def thread_names(server: MemcachedServer) -> list[str]:
    assert server.proc is not None
    return [(task / "comm").read_text().strip()
            for task in Path(f"/proc/{server.proc.pid}/task").iterdir()]


def test_no_lru_maintainer_turns_the_segmented_lru_off() -> None:
    with stock() as default:
        settings = stats(default, "settings")
        assert (settings["lru_segmented"], settings["lru_maintainer_thread"]) == ("yes", "yes")
        assert "mc-lrumaint" in thread_names(default)
        assert mc.command(LOOPBACK, default.port, "lru mode flat", end=b"\r\n").strip() == "OK"
    with stock(*FLAT) as flat:
        settings = stats(flat, "settings")
        assert (settings["lru_segmented"], settings["lru_maintainer_thread"]) == ("no", "no")
        assert "mc-lrumaint" not in thread_names(flat)
        # The runtime switches need the maintainer (proto_text.c,
        # process_lru_command): no way back to segments without a restart.
        for line in ("lru mode segmented", "lru temp_ttl 30"):
            assert mc.command(LOOPBACK, flat.port, line, end=b"\r\n").strip() == "ERROR", line
        client(flat).set("k", b"v")
        items = stats(flat, "items")
        assert "items:1:number" in items and "items:1:number_hot" not in items, \
            "a flat LRU reports no HOT/WARM/COLD split"


def test_temporary_ttl_is_refused_without_the_maintainer() -> None:
    binary = binary_or_skip("stock", "memcached")
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    for options in ("no_lru_maintainer,temporary_ttl=30", "temporary_ttl=30,no_lru_maintainer"):
        run = subprocess.run([str(binary), "-p", "0", "-U", "0", *user, "-o", options],
                             capture_output=True, text=True, timeout=30)
        assert run.returncode != 0, options
        assert "temporary_ttl requires lru_maintainer to be enabled" in run.stderr, run.stderr


def read_while_streaming(server: MemcachedServer) -> tuple[int, bool]:
    """Set a key, read it twice, then set FILL new keys, reading it after
    every BATCH of them. Returns (the server clock's seconds the run took,
    whether the key is still there)."""
    c = client(server)
    started = int(stats(server)["time"])
    c.set("hot", VALUE)
    assert c.get("hot") == VALUE and c.get("hot") == VALUE
    for first in range(0, FILL, BATCH):
        c.set_many({f"stream{i}": VALUE for i in range(first, first + BATCH)})
        c.get("hot")
    took = int(stats(server)["time"]) - started
    return took, c.get("hot") is not None


def test_a_flat_lru_evicts_an_item_read_under_a_minute_ago() -> None:
    with stock(*FLAT, *SMALL) as flat:
        took, kept = read_while_streaming(flat)
        if took >= ITEM_UPDATE_INTERVAL_S:
            pytest.skip(f"the fill took {took} s, past the {ITEM_UPDATE_INTERVAL_S} s a flat LRU's bump waits")
        assert int(stats(flat)["evictions"]) > 0
        # do_item_update relinks only an item not bumped for 60 s: every
        # read above left it where its set put it, at the tail by now.
        assert not kept, "a read moved a flat LRU's item less than a minute old"


def test_a_segmented_lru_moves_an_item_read_twice_to_warm() -> None:
    with stock(*SMALL) as segmented:
        read_while_streaming(segmented)
        assert int(stats(segmented)["evictions"]) > 0
        # Read twice while HOT, the item was ACTIVE when it left HOT, which
        # sends it to WARM (items.c, lru_pull_tail), whichever thread
        # pulled it: the maintainer or a set that needed memory. The
        # stream's items, never read, go to COLD.
        moves = sum(int(v) for k, v in stats(segmented, "items").items() if k.endswith(":moves_to_warm"))
        assert moves >= 1

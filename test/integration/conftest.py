"""Fixtures: the built stock and fork servers, started on loopback."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from stagevar_bench.servers import HttpdServer, MemcachedServer, build_binary  # noqa: E402


def binary_or_skip(variant: str, name: str) -> Path:
    path = build_binary(variant, name)
    if not path.exists():
        pytest.skip(f"{path} is not built (run make)")
    return path


@pytest.fixture(params=["stock", "fork"])
def variant(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def memcached(variant: str) -> Iterator[MemcachedServer]:
    with MemcachedServer(binary_or_skip(variant, "memcached")) as server:
        yield server


@pytest.fixture
def httpd(variant: str) -> Iterator[HttpdServer]:
    server = HttpdServer(binary_or_skip(variant, "httpd"))
    server.write_conf()
    (server.docroot / "index.html").write_text("<h1>stagevar</h1>\n")
    with server:
        yield server

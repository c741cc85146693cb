# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures: the built stock and fork servers, started on loopback."""
from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import pytest

from stagevar_bench.machine import loadgen_path
from stagevar_bench.servers import HttpdServer, MemcachedServer, build_binary


def binary_or_skip(variant: str, name: str) -> Path:
    path = build_binary(variant, name)
    if not path.exists():
        pytest.skip(f"{path} is not built (run make)")
    return path


def loadgen_binary() -> Path:
    path = loadgen_path()
    if not path.exists():
        pytest.skip(f"{path} is not built (run make)")
    return path


T = TypeVar("T")


def wait_until(what: str, pred: Callable[[], T], timeout: float = 15.0, poll_s: float = 0.05) -> T:
    """pred()'s first true value, polled until `timeout` s have passed; an
    AssertionError naming `what` if it never came."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(poll_s)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


def server_status(server: HttpdServer) -> dict[str, str]:
    """The fields of httpd's `/server-status?auto` page, by name."""
    with urllib.request.urlopen(server.url("/server-status?auto"), timeout=10) as r:
        lines = r.read().decode().splitlines()
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def httpd_config_test(binary: Path, extra_conf: str,
                      directive: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """`httpd -t` on the base configuration plus `extra_conf`: its result, and
    where the first line starting with `directive` is ("line N of FILE"),
    as httpd names the place of a configuration error."""
    server = HttpdServer(binary, extra_conf=extra_conf)
    try:
        conf = server.write_conf()
        offending = next(l for l in extra_conf.splitlines() if l.startswith(directive))
        line = conf.read_text().splitlines().index(offending) + 1
        proc = subprocess.run([str(binary), "-t", "-f", str(conf)],
                              capture_output=True, text=True, timeout=20)
    finally:
        server.stop()
    return proc, f"line {line} of {conf}"


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

# SPDX-License-Identifier: BSD-3-Clause
"""pytest plugin for httpd's own suite: add the fork's directives to every
server configuration the suite generates.

httpd-pytest loads it with `-p httpd_pytest_knobs` and names a file of
directives in STAGEVAR_HTTPD_INCLUDE. The suite writes `conf/modules.conf`
(its LoadModule lines) once per test package and includes it at the top of
both configurations it starts servers with (httpd.conf and the stop
configuration); this plugin appends one `Include` of that file to it, so
every server of every test, whatever test.conf a test installs, runs with
the directives at server level. Without STAGEVAR_HTTPD_INCLUDE it adds
nothing: the suite runs as shipped.

With STAGEVAR_HTTPD_PROOF (a file name) and STAGEVAR_HTTPD_PIDFILE (the
suite's httpd.pid), it also records, once per test package, what the
kernel says the CPU affinity of every thread of every child of the running
server is (/proc/PID/task/*/status, read only: no request is sent), and
writes those observations to STAGEVAR_HTTPD_PROOF as JSON at the end, so
the runner can tell that the directives really were in force.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest


def _append_include(include: str) -> None:
    # httpd-pytest puts the suite's own directory first on PYTHONPATH, so
    # this is the very module its fixtures use.
    from pyhttpd.env import HttpdTestSetup  # type: ignore[import-not-found]

    original = HttpdTestSetup._make_modules_conf

    def make_modules_conf(self: Any) -> None:
        original(self)
        path = os.path.join(self.env.server_dir, "conf", "modules.conf")
        with open(path, "a") as conf:
            conf.write(f'# stagevar: the fork\'s directives for this pass\nInclude "{include}"\n')

    HttpdTestSetup._make_modules_conf = make_modules_conf


def _children(parent: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent:
            children.append(int(stat.parent.name))
    return children


def _thread_cpus(pid: int) -> list[str]:
    """Cpus_allowed_list of each thread of pid (those still there)."""
    lists = []
    for status in Path(f"/proc/{pid}/task").glob("*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        lists += [line.split(":", 1)[1].strip() for line in text.splitlines()
                  if line.startswith("Cpus_allowed_list:")]
    return lists


_observations: list[dict[str, Any]] = []
_seen_packages: set[str] = set()


def _observe(package: str) -> None:
    try:
        parent = int(Path(os.environ["STAGEVAR_HTTPD_PIDFILE"]).read_text())
    except (OSError, ValueError):
        return  # no server running for this test
    children = {str(pid): _thread_cpus(pid) for pid in _children(parent)}
    if children:
        _observations.append({"package": package, "parent_cpus": _thread_cpus(parent)[:1],
                              "children": children})
        _seen_packages.add(package)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    # Look once per package (core, http1), while a test's server runs.
    package = item.nodeid.split("/")[1] if "/" in item.nodeid else item.nodeid
    if "STAGEVAR_HTTPD_PROOF" in os.environ and package not in _seen_packages:
        _observe(package)
    yield


def pytest_configure(config: pytest.Config) -> None:
    include = os.environ.get("STAGEVAR_HTTPD_INCLUDE", "")
    if include:
        if not os.path.isfile(include):
            raise pytest.UsageError(f"STAGEVAR_HTTPD_INCLUDE: no such file '{include}'")
        _append_include(include)


def pytest_unconfigure(config: pytest.Config) -> None:
    proof = os.environ.get("STAGEVAR_HTTPD_PROOF", "")
    if proof:
        Path(proof).write_text(json.dumps(_observations, indent=1))

"""pytest plugin for httpd's own suite: add the fork's directives to every
server configuration the suite generates.

httpd-pytest loads it with `-p httpd_pytest_knobs` and names a file of
directives in STAGEVAR_HTTPD_INCLUDE. The suite writes `conf/modules.conf`
(its LoadModule lines) once per test package and includes it at the top of
both configurations it starts servers with (httpd.conf and the stop
configuration); this plugin appends one `Include` of that file to it, so
every server of every test, whatever test.conf a test installs, runs with
the directives at server level. Without STAGEVAR_HTTPD_INCLUDE it does
nothing: the suite runs as shipped.
"""
from __future__ import annotations

import os
import sys
from typing import Any

import pytest


def _append_include(include: str) -> None:
    # The suite's conftest puts its own directory on sys.path the same way,
    # so this is the very module its fixtures use.
    sys.path.insert(0, os.getcwd())
    from pyhttpd.env import HttpdTestSetup  # type: ignore[import-not-found]

    original = HttpdTestSetup._make_modules_conf

    def make_modules_conf(self: Any) -> None:
        original(self)
        path = os.path.join(self.env.server_dir, "conf", "modules.conf")
        with open(path, "a") as conf:
            conf.write(f'# stagevar: the fork\'s directives for this pass\nInclude "{include}"\n')

    HttpdTestSetup._make_modules_conf = make_modules_conf


def pytest_configure(config: pytest.Config) -> None:
    include = os.environ.get("STAGEVAR_HTTPD_INCLUDE", "")
    if include:
        if not os.path.isfile(include):
            raise pytest.UsageError(f"STAGEVAR_HTTPD_INCLUDE: no such file '{include}'")
        _append_include(include)

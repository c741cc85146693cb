# SPDX-License-Identifier: BSD-3-Clause
"""tools/check-httpd-trunk where CI can run it: without a trunk clone it
skips (exit 77, as automake counts a skip), and bad input is an error that
names the bad value. Its real work needs a clone of httpd trunk, which CI
has no network to fetch (docs/contributing.md, "httpd is trunk-first")."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "check-httpd-trunk"


def run(tool: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "HTTPD_TRUNK"}
    return subprocess.run([str(tool), *args], capture_output=True, text=True, timeout=60, env=env)


def test_without_a_trunk_it_skips_and_says_what_it_needs() -> None:
    r = run(TOOL)
    assert r.returncode == 77, r
    assert r.stdout.startswith("1..0 # SKIP no httpd trunk"), r.stdout
    assert "https://github.com/apache/httpd" in r.stdout


def test_a_source_without_the_pinned_commit_is_an_error_naming_it(tmp_path: Path) -> None:
    r = run(TOOL, str(tmp_path))
    assert r.returncode == 1, r
    assert f"'{tmp_path}'" in r.stderr and "0cb680442ecaa6118cc610b5ecc6e824330bf61a" in r.stderr


def test_a_bad_pin_is_an_error_naming_the_value(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    shutil.copy(TOOL, tmp_path / "tools")
    shutil.copytree(REPO / "patches" / "httpd", tmp_path / "patches" / "httpd")
    (tmp_path / "patches" / "httpd" / "trunk.pin").write_text(
        "repo https://github.com/apache/httpd\ncommit 0cb680442e\n")
    r = run(tmp_path / "tools" / "check-httpd-trunk", str(tmp_path))
    assert r.returncode != 0, r
    assert "'0cb680442e'" in r.stderr and "40 hex digits" in r.stderr, r.stderr


def test_the_trunk_forms_apply_together_in_either_order() -> None:
    """With a trunk ($HTTPD_TRUNK: a clone or the mirror), every check
    passes, and each order of the topics is one of them."""
    trunk = os.environ.get("HTTPD_TRUNK", "")
    if not trunk:
        pytest.skip("no $HTTPD_TRUNK: a clone or mirror of https://github.com/apache/httpd")
    r = subprocess.run([str(TOOL), trunk], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    orders = [line for line in r.stdout.splitlines() if " then " in line]
    assert len(orders) == 2, r.stdout
    assert all(line.startswith("ok ") for line in orders), r.stdout

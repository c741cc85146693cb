# SPDX-License-Identifier: BSD-3-Clause
"""`make install prefix=DIR` leaves what a user runs, and each of it runs:
the forks as drop-ins for the stock servers, loadgen and its manual
page, and the stagevar command. loadgen's manual page lists every option
`loadgen --help` does."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import loadgen_binary
from stagevar_bench.servers import REPO, build_dir

MANUAL = REPO / "docs" / "loadgen.1"


def run(*cmd: str | Path, cwd: Path | None = None, timeout: float = 600) -> str:
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, f"{cmd}:\n{result.stdout[-2000:]}{result.stderr[-2000:]}"
    return result.stdout + result.stderr


@pytest.fixture(scope="module")
def prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = build_dir().parent
    if not (top / "Makefile").exists() or not (build_dir() / "fork" / "bin" / "memcached").exists():
        pytest.skip("no configured and built tree (run make)")
    dest = tmp_path_factory.mktemp("install") / "prefix dir"
    run("make", "-s", "install", f"prefix={dest}", cwd=top, timeout=900)
    return dest


def test_the_memcached_fork_is_installed_and_runs(prefix: Path) -> None:
    assert "1.6.45-stagevar" in run(prefix / "bin" / "memcached", "-V")


def test_the_httpd_fork_is_installed_and_runs(prefix: Path) -> None:
    assert "Apache/2.4.68-stagevar" in run(prefix / "bin" / "httpd", "-v")


def test_loadgen_is_installed_and_runs(prefix: Path) -> None:
    assert run(prefix / "bin" / "loadgen", "--version").startswith("loadgen")


def test_the_stagevar_command_is_installed_and_runs(prefix: Path) -> None:
    stagevar = prefix / "bin" / "stagevar"
    assert "reproduce" in run(stagevar, "--help")
    assert "--schedule" in run(stagevar, "bench", "trace", "--help")
    assert "--budget-sweep" in run(stagevar, "bench", "lru", "--help")


def test_the_manual_page_is_installed(prefix: Path) -> None:
    page = prefix / "share" / "man" / "man1" / "loadgen.1"
    assert page.read_bytes() == MANUAL.read_bytes()


def test_uninstall_removes_the_servers(prefix: Path) -> None:
    top = build_dir().parent
    run("make", "-s", "-C", "memcached", "uninstall", f"prefix={prefix}", cwd=top)
    assert not (prefix / "bin" / "memcached").exists()
    run("make", "-s", "-C", "memcached", "install", f"prefix={prefix}", cwd=top)


def help_options() -> set[str]:
    text = run(loadgen_binary(), "--help")
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*|-[A-Za-z])\b", text))


def test_the_manual_page_lists_every_option_of_help() -> None:
    source = MANUAL.read_text().replace("\\-", "-")
    missing = sorted(opt for opt in help_options() if opt not in source)
    assert not missing, f"loadgen --help lists options docs/loadgen.1 lacks: {missing}"


def test_the_manual_page_renders_without_warnings() -> None:
    if shutil.which("groff") is None:
        pytest.skip("no groff")
    result = subprocess.run(["groff", "-man", "-ww", "-z", str(MANUAL)],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0 and result.stderr == "", result.stderr

# SPDX-License-Identifier: BSD-3-Clause
"""`make deb`'s package of the memcached fork: built, lintian-clean of
errors, and on a Debian 12 system (this machine's root through an overlay,
in namespaces of its own: deb_scenario.py) installed over Debian's own
memcached with an operator's /etc/memcached.conf, started as its unit
would, verified with systemd-analyze, and purged without a trace."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
TOOLS = ("dpkg-buildpackage", "dh", "lintian", "fakeroot", "systemd-analyze",
         "unshare", "chroot", "apt-get", "ip")


def builddir() -> Path:
    return Path(os.environ.get("STAGEVAR_BUILD", HERE.parents[1] / "build")).parent


def require_tools() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root: the package is installed in a chroot in namespaces of its own")
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing {', '.join(missing)} (tools/setup installs them)")


@pytest.fixture(scope="module")
def fork_deb() -> Path:
    require_tools()
    args = builddir() / "build/upstream/memcached.args"
    if args.exists() and "-fsanitize" in args.read_text():
        # check-sanitizers' tree: the package is built with Debian's flags,
        # not the sanitizers, so this tree would only test it a second time.
        pytest.skip("a sanitizer build: the plain make check tests the package")
    proc = subprocess.run(["make", "-s", "deb"], cwd=builddir(), capture_output=True,
                          text=True, timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # make's own lines (say, under make check's MAKEFLAGS) come before it.
    return Path(next(l for l in reversed(proc.stdout.splitlines()) if l.endswith(".deb")))


@pytest.fixture(scope="module")
def debian_deb() -> Path:
    """Debian's own memcached package (the archive's candidate, 1.6.18 on
    Debian 12), fetched once into the cache."""
    require_tools()
    cache = Path.home() / ".cache/stagevar/debian"
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("memcached_*.deb"))
    if not found:
        proc = subprocess.run(["apt-get", "download", "-q", "memcached"], cwd=cache,
                              capture_output=True, text=True, timeout=300)
        found = sorted(cache.glob("memcached_*.deb"))
        if not found:
            pytest.skip(f"cannot fetch Debian's memcached: {proc.stderr.strip()}")
    return found[-1]


@pytest.fixture(scope="module")
def facts(fork_deb: Path, debian_deb: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("deb")
    probe = subprocess.run(
        ["unshare", "--mount", "sh", "-c",
         f"mount -t tmpfs tmpfs {work} && mkdir {work}/u {work}/w {work}/r && "
         f"mount -t overlay overlay -o lowerdir=/,upperdir={work}/u,workdir={work}/w {work}/r"],
        capture_output=True, text=True, timeout=60)
    if probe.returncode != 0:
        pytest.skip(f"cannot mount an overlay over / here: {probe.stderr.strip()}")
    proc = subprocess.run(["unshare", "--mount", "--net", "--propagation", "private",
                           os.environ.get("STAGEVAR_PYTHON", "python3"),
                           str(HERE / "deb_scenario.py"), str(work), str(fork_deb),
                           str(debian_deb)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout)


def ok(result: dict[str, Any]) -> bool:
    return bool(result["rc"] == 0)


def deb_field(deb: Path, field: str) -> str:
    return subprocess.run(["dpkg-deb", "-f", str(deb), field], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_package_replaces_debians_memcached(fork_deb: Path) -> None:
    for field in ("Provides", "Conflicts", "Replaces"):
        assert deb_field(fork_deb, field) == "memcached", field
    files = subprocess.run(["dpkg-deb", "-c", str(fork_deb)], capture_output=True,
                           text=True, check=True).stdout
    for path in ("./usr/bin/memcached", "./lib/systemd/system/memcached.service",
                 "./usr/share/man/man1/memcached-stagevar.1.gz", "./etc/memcached.conf"):
        assert f" {path}\n" in files, path
    control = subprocess.run(["dpkg-deb", "-I", str(fork_deb), "conffiles"],
                             capture_output=True, text=True, check=True).stdout
    assert control.split() == ["/etc/memcached.conf"]


def test_lintian_reports_no_errors(fork_deb: Path) -> None:
    proc = subprocess.run(["lintian", "--fail-on", "error", str(fork_deb)],
                          capture_output=True, text=True, timeout=600)
    errors = [l for l in proc.stdout.splitlines() if l.startswith("E:")]
    assert proc.returncode == 0 and not errors, proc.stdout + proc.stderr


def test_upgrade_over_debians_memcached_keeps_the_changed_conf(facts: Any) -> None:
    up = facts["upgrade"]
    assert ok(up["debian_install"]), up["debian_install"]
    assert up["debian_status"].startswith("ii ") and "stagevar" not in up["debian_status"]
    assert ok(up["fork_install"]), up["fork_install"]
    assert up["fork_status"].startswith("ii ")
    assert not up["memcached_status_after"].startswith("ii"), up["memcached_status_after"]
    assert up["conf_before"] and up["conf_after"] == up["conf_before"]
    assert "stagevar" in up["version"]["out"], up["version"]
    # The package warns of the state Debian's memcached is left in.
    install = up["fork_install"]
    assert "purging it deletes /etc/memcached.conf" in install["out"] + install["err"]


def test_a_reinstall_restores_what_purging_debians_memcached_took(facts: Any) -> None:
    up = facts["upgrade"]
    assert ok(up["debian_purge"]), up["debian_purge"]
    assert ok(up["restore"]), up["restore"]
    assert up["restored_user"]["out"].startswith("memcache:"), up["restored_user"]
    # Every file of the package as shipped, /etc/memcached.conf included.
    assert ok(up["restored_verify"]) and up["restored_verify"]["out"] == "", up["restored_verify"]


def test_server_runs_as_its_unit_with_the_options_of_the_conf(facts: Any) -> None:
    serve = facts["upgrade"]["serve"]
    assert serve["exec_start"][-1] == "/etc/memcached.conf"
    assert "error" not in serve, serve
    stored, value, settings, version = serve["replies"]
    assert stored == "STORED\r\n"
    assert value == "VALUE k 0 5\r\nhello\r\nEND\r\n"
    for line in ("STAT lru_amortized_budget_us 20", "STAT stage_trace yes",
                 f"STAT maxbytes {100 * 1024 * 1024}", "STAT tcpport 11211"):
        assert line + "\r\n" in settings, line
    assert "stagevar" in version
    # The unit's ExecStart execs memcached: the pid file's pid is the one started.
    assert serve["pidfile"] == str(serve["server_pid"])


def test_unit_passes_systemd_analyze_verify(facts: Any) -> None:
    verify = facts["upgrade"]["verify"]
    assert ok(verify), verify
    assert "memcached.service" not in verify["out"] + verify["err"], verify


def test_purge_leaves_nothing_behind(facts: Any) -> None:
    purge = facts["purge"]
    assert ok(purge["install"]), purge["install"]
    assert purge["user_after_install"]["out"].startswith("memcache:")
    # What the install left is what the purge must take away.
    assert "new file /usr/bin/memcached" in purge["after_install"]
    assert "changed /etc/passwd" in purge["after_install"]
    assert ok(purge["purge"]), purge["purge"]
    status = purge["status_after"]
    assert status["rc"] != 0 or status["out"].strip() == "", status
    assert purge["user_after_purge"]["rc"] != 0, purge["user_after_purge"]
    assert purge["left"] == purge["before"]

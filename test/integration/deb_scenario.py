# SPDX-License-Identifier: BSD-3-Clause
"""The memcached-stagevar package on a Debian 12 system, run by test_deb.py
inside `unshare --mount --net`: the system is this machine's own root, seen
through an overlay whose writes go to a tmpfs, so nothing it does outlives
the namespace. Two such roots: one gets Debian's memcached, an operator's
change to /etc/memcached.conf, then the package (the upgrade); the other
the package alone, then a purge. This script only gathers facts (command
results, files, replies), as JSON on stdout; test_deb.py asserts on them.

usage: deb_scenario.py WORKDIR FORK_DEB DEBIAN_DEB
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# What the operator adds to Debian's /etc/memcached.conf before the upgrade.
OPERATOR_LINES = "-o lru_amortized_budget_us=20\n-o stage_trace\n"
# Where dpkg, apt and adduser keep their own records and backups: changed
# by any install, not what "purge leaves nothing behind" is about.
BOOKKEEPING = ("var/lib/dpkg/", "var/log/", "var/cache/", "var/lib/apt/",
               "etc/passwd-", "etc/group-", "etc/shadow-", "etc/gshadow-",
               "usr/sbin/policy-rc.d", "etc/ld.so.cache", "tmp/", "root/")


def run(*args: str, timeout: float = 300) -> dict[str, Any]:
    proc = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout)
    return {"cmd": shlex.join(args), "rc": proc.returncode,
            "out": proc.stdout[-4000:], "err": proc.stderr[-4000:]}


class Root:
    """The host's / through an overlay at WORK/NAME/root, writes in WORK/NAME/upper."""

    def __init__(self, work: Path, name: str) -> None:
        base = work / name
        self.upper, self.path = base / "upper", base / "root"
        for d in (self.upper, base / "work", self.path):
            d.mkdir(parents=True)
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                        f"lowerdir=/,upperdir={self.upper},workdir={base / 'work'}",
                        str(self.path)], check=True)
        for fs in ("proc", "dev", "sys"):
            subprocess.run(["mount", "--rbind", f"/{fs}", str(self.path / fs)], check=True)
        # No maintainer script may start a service (policy-rc.d(8)).
        policy = self.path / "usr/sbin/policy-rc.d"
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)

    def chroot(self, *args: str, timeout: float = 300) -> dict[str, Any]:
        env = ["env", "DEBIAN_FRONTEND=noninteractive", "LC_ALL=C"]
        return run("chroot", str(self.path), *env, *args, timeout=timeout)

    def apt_install(self, deb: str) -> dict[str, Any]:
        # A copy in the root's /tmp, which apt's own user (_apt) can read
        # wherever the .deb was.
        copy = self.path / "tmp" / Path(deb).name
        shutil.copyfile(deb, copy)
        copy.chmod(0o644)
        # As an operator answers dpkg's conffile question by default: keep
        # the file they changed.
        return self.chroot("apt-get", "install", "-y", "-q", "--no-install-recommends",
                           "-o", "Dpkg::Options::=--force-confdef",
                           "-o", "Dpkg::Options::=--force-confold", f"/tmp/{copy.name}")

    def status(self, package: str) -> str:
        return self.chroot("dpkg-query", "-W", "-f=${db:Status-Abbrev}${Version}",
                           package)["out"].strip()

    def changed(self) -> list[str]:
        """What the upper layer holds beyond the lower root, bookkeeping
        aside: new files and directories, changed files, deleted ones."""
        found = []
        for dirpath, dirnames, filenames in os.walk(self.upper):
            for name in dirnames + filenames:
                upper = Path(dirpath, name)
                rel = str(upper.relative_to(self.upper))
                if any(rel == b.rstrip("/") or rel.startswith(b) for b in BOOKKEEPING):
                    continue
                lower = Path("/", rel)
                st = upper.lstat()
                if os.path.isdir(upper) and not upper.is_symlink():
                    if not lower.is_dir():
                        found.append(f"new directory /{rel}")
                elif st.st_rdev == 0 and (st.st_mode & 0o170000) == 0o020000:
                    found.append(f"deleted /{rel}")
                elif not lower.exists() and not lower.is_symlink():
                    found.append(f"new file /{rel}")
                elif upper.is_symlink() or lower.is_symlink():
                    if not (upper.is_symlink() and lower.is_symlink()
                            and os.readlink(upper) == os.readlink(lower)):
                        found.append(f"changed /{rel}")
                elif upper.read_bytes() != lower.read_bytes():
                    found.append(f"changed /{rel}")
        return sorted(found)


def unit_start(root: Root) -> tuple[list[str], str]:
    """memcached.service's ExecStart, as argv, and its User=."""
    fields: dict[str, str] = {}
    unit = root.path / "lib/systemd/system/memcached.service"
    for line in unit.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.startswith("#"):
            fields[key.strip()] = value.strip()
    return shlex.split(fields["ExecStart"]), fields["User"]


def talk(port: int, commands: list[bytes], timeout: float = 30) -> list[str]:
    """Each command's reply from memcached on 127.0.0.1:port, retrying the
    connection until the server listens."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    replies = []
    with sock, sock.makefile("rb") as f:
        for cmd in commands:
            sock.sendall(cmd)
            lines = []
            while True:
                line = f.readline().decode()
                lines.append(line)
                if not line or line.rstrip("\r\n") in ("END", "STORED", "ERROR") or \
                        line.startswith(("VERSION", "CLIENT_ERROR", "SERVER_ERROR")):
                    break
            replies.append("".join(lines))
    return replies


def serve_as_unit(root: Root) -> dict[str, Any]:
    """Start the server as memcached.service would (its ExecStart, as its
    User, with the RuntimeDirectory systemd would make), talk to it, stop it."""
    argv, user = unit_start(root)
    facts: dict[str, Any] = {"exec_start": argv, "user": user}
    runtime = root.path / "run/memcached"
    runtime.mkdir(exist_ok=True)
    owner = root.chroot("id", "-u", user)["out"].strip(), root.chroot("id", "-g", user)["out"].strip()
    os.chown(runtime, int(owner[0]), int(owner[1]))
    server = subprocess.Popen(["chroot", f"--userspec={user}:{user}", str(root.path), *argv],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        facts["replies"] = talk(11211, [b"set k 0 0 5\r\nhello\r\n", b"get k\r\n",
                                        b"stats settings\r\n", b"version\r\n"])
        facts["pidfile"] = (runtime / "memcached.pid").read_text().strip()
        facts["server_pid"] = server.pid
    except OSError as e:
        facts["error"] = repr(e)
    finally:
        server.terminate()
        try:
            output, _ = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            output, _ = server.communicate()
        facts["exit"], facts["output"] = server.returncode, output[-4000:]
    return facts


def upgrade(work: Path, fork_deb: str, debian_deb: str) -> dict[str, Any]:
    root = Root(work, "upgrade")
    facts: dict[str, Any] = {"debian_install": root.apt_install(debian_deb),
                             "debian_status": root.status("memcached")}
    conf = root.path / "etc/memcached.conf"
    if conf.exists():
        changed = conf.read_text().replace("-m 64", "-m 100") + OPERATOR_LINES
        conf.write_text(changed)
        facts["conf_before"] = changed
    facts["fork_install"] = root.apt_install(fork_deb)
    facts["fork_status"] = root.status("memcached-stagevar")
    facts["memcached_status_after"] = root.status("memcached")
    facts["conf_after"] = conf.read_text() if conf.exists() else None
    facts["version"] = root.chroot("/usr/bin/memcached", "-V")
    facts["verify"] = root.chroot("systemd-analyze", "verify",
                                  "/lib/systemd/system/memcached.service")
    facts["serve"] = serve_as_unit(root)
    # Debian's memcached, left in "rc", purged: it takes the conf and the
    # user away (its own doing); a reinstall that restores missing
    # conffiles brings both back.
    facts["debian_purge"] = root.chroot("dpkg", "--purge", "memcached")
    facts["restore"] = root.chroot("apt-get", "install", "-y", "-q", "--reinstall",
                                   "-o", "Dpkg::Options::=--force-confmiss",
                                   f"/tmp/{Path(fork_deb).name}")
    facts["restored_user"] = root.chroot("getent", "passwd", "memcache")
    facts["restored_verify"] = root.chroot("dpkg", "--verify", "memcached-stagevar")
    return facts


def purge(work: Path, fork_deb: str) -> dict[str, Any]:
    root = Root(work, "purge")
    facts: dict[str, Any] = {"before": root.changed(), "install": root.apt_install(fork_deb),
                             "user_after_install": root.chroot("getent", "passwd", "memcache")}
    facts["after_install"] = root.changed()
    facts["purge"] = root.chroot("apt-get", "purge", "-y", "-q", "memcached-stagevar")
    facts["status_after"] = root.chroot("dpkg-query", "-W", "memcached-stagevar")
    facts["user_after_purge"] = root.chroot("getent", "passwd", "memcache")
    facts["left"] = root.changed()
    return facts


def main() -> None:
    work, fork_deb, debian_deb = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(work)], check=True)
    json.dump({"upgrade": upgrade(work, fork_deb, debian_deb),
               "purge": purge(work, fork_deb)}, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

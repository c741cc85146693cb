# SPDX-License-Identifier: BSD-3-Clause
"""Start and stop the built memcached and httpd servers on loopback.

Used by the integration tests, the demo and (later) the bench runner.
Every server listens on 127.0.0.1 on a free ephemeral port, is waited for
with a bounded timeout, and is stopped with SIGTERM, then SIGKILL after a
bound: nothing outlives the `with` block.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parents[2]
LOOPBACK = "127.0.0.1"
START_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0
# The fork's -o option to trace every request (its default traces one
# socket read in 256): for short runs and for counts that must be exact.
TRACE_EVERY_REQUEST = "stage_trace,stage_trace_sample=1"


class ServerError(RuntimeError):
    """A server did not start, or did not stop, as asked."""


def build_dir() -> Path:
    """The build directory: $STAGEVAR_BUILD, else <repo>/build."""
    return Path(os.environ.get("STAGEVAR_BUILD", REPO / "build"))


def build_binary(variant: str, name: str) -> Path:
    """Path of a built server: variant 'stock' or 'fork', name 'memcached' or 'httpd'."""
    if variant not in ("stock", "fork"):
        raise ValueError(f"variant must be 'stock' or 'fork', not {variant!r}")
    if name not in ("memcached", "httpd"):
        raise ValueError(f"server must be 'memcached' or 'httpd', not {name!r}")
    return build_dir() / variant / "bin" / name


def free_port() -> int:
    """A TCP port on loopback that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float,
                  host: str = LOOPBACK, netns: str | None = None) -> None:
    """Return once `host:port` accepts connections (seen from network
    namespace `netns` if given); raise if `proc` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ServerError(f"exited with status {proc.returncode} before listening")
        if netns is not None:
            probe = ("import socket,sys\ntry: socket.create_connection((sys.argv[1], int(sys.argv[2])), 0.5)"
                     "\nexcept OSError: sys.exit(1)")
            if subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", probe, host, str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(0.05)
            continue
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise ServerError(f"not listening on port {port} after {timeout:.0f} s")


def signal_stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, unless it has exited already; returns at once."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)


def wait_stopped(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    """Wait for its exit, SIGKILL if that takes longer than `timeout`."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout)


def stop_process(proc: subprocess.Popen[bytes], timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `timeout`."""
    signal_stop(proc)
    wait_stopped(proc, timeout)


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class MemcachedServer:
    """memcached on 127.0.0.1:<free port>; use as a context manager."""

    binary: Path
    args: Sequence[str] = ()
    port: int = 0
    wrap: Sequence[str] = ()    # command prefix, e.g. taskset or valgrind
    start_timeout: float = START_TIMEOUT_S
    host: str = LOOPBACK        # another address only inside a network namespace
    netns: str | None = None    # namespace to probe the port from
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _log: Path | None = field(default=None, repr=False)

    def command(self) -> list[str]:
        cmd = [*self.wrap, str(self.binary), "-l", self.host, "-p", str(self.port), "-U", "0"]
        if os.geteuid() == 0:
            cmd += ["-u", "nobody"]   # memcached refuses to run as root without -u
        return cmd + list(self.args)

    def start(self) -> "MemcachedServer":
        self.port = self.port or free_port()
        fd, log = tempfile.mkstemp(prefix="stagevar-memcached-", suffix=".log")
        self._log = Path(log)
        self.proc = subprocess.Popen(self.command(), stdout=fd, stderr=fd)
        os.close(fd)
        try:
            wait_for_port(self.port, self.proc, self.start_timeout, self.host, self.netns)
        except ServerError as e:
            self.stop()
            raise ServerError(f"memcached {' '.join(self.command())}: {e}\n{tail(self._log)}") from None
        return self

    def signal_stop(self) -> None:
        """Ask it to exit (SIGTERM) without waiting: see stop_all."""
        if self.proc is not None:
            signal_stop(self.proc)

    def wait_stopped(self) -> None:
        """Wait for the exit signal_stop asked for (SIGKILL after a bound),
        then remove the log."""
        if self.proc is not None:
            wait_stopped(self.proc)
        if self._log is not None:
            self._log.unlink(missing_ok=True)

    def stop(self) -> None:
        self.signal_stop()
        self.wait_stopped()

    def __enter__(self) -> "MemcachedServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def stop_all(servers: Sequence[MemcachedServer]) -> None:
    """Stop every server, signalling all before waiting for any, so that
    their exits (~1 s each for memcached) overlap."""
    for server in servers:
        server.signal_stop()
    for server in servers:
        server.wait_stopped()


HTTPD_CONF = """\
ServerRoot "{root}"
ServerName localhost
Listen {host}:{port}
PidFile "{root}/httpd.pid"
DefaultRuntimeDir "{root}"
ErrorLog "{root}/error_log"
LogLevel warn
LogFormat "%h %l %u %t \\"%r\\" %>s %b" common
CustomLog "{root}/access_log" common
{user}
TypesConfig /dev/null
AddType text/html .html
AddType text/plain .txt
DocumentRoot "{docroot}"
DirectoryIndex index.html
<Directory "/">
    AllowOverride None
    Require all denied
</Directory>
<Directory "{docroot}">
    Require all granted
</Directory>
ExtendedStatus On
<Location "/server-status">
    SetHandler server-status
    Require ip 127.0.0.1 ::1
</Location>
{extra}
"""


@dataclass
class HttpdServer:
    """httpd (built with every module static) serving `docroot` on 127.0.0.1."""

    binary: Path
    extra_conf: str = ""
    port: int = 0
    wrap: Sequence[str] = ()    # command prefix, e.g. taskset or ip netns exec
    host: str = LOOPBACK        # another address only inside a network namespace
    netns: str | None = None    # namespace to probe the port from
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="stagevar-httpd-")))
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def docroot(self) -> Path:
        return self.root / "htdocs"

    @property
    def conf(self) -> Path:
        return self.root / "httpd.conf"

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"

    def write_conf(self) -> Path:
        """Write the configuration; the caller may add files to docroot first or after."""
        self.port = self.port or free_port()
        self.docroot.mkdir(parents=True, exist_ok=True)
        # As root, httpd's children switch to an unprivileged user, which
        # must be able to read the document root under our 0700 temp dir.
        user = ""
        if os.geteuid() == 0:
            user = "User nobody\nGroup nogroup"
            self.root.chmod(0o755)
        self.conf.write_text(HTTPD_CONF.format(root=self.root, host=self.host, port=self.port,
                                               docroot=self.docroot, user=user,
                                               extra=self.extra_conf))
        return self.conf

    def start(self) -> "HttpdServer":
        self.write_conf()
        cmd = [*self.wrap, str(self.binary), "-f", str(self.conf), "-DFOREGROUND"]
        with open(self.root / "stderr", "wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        try:
            wait_for_port(self.port, self.proc, START_TIMEOUT_S, self.host, self.netns)
        except ServerError as e:
            self.stop()
            log = tail(self.root / "stderr") + "\n" + tail(self.root / "error_log")
            raise ServerError(f"httpd {' '.join(cmd)}: {e}\n{log}") from None
        return self

    def stop(self) -> None:
        """Stop the parent; it takes its children down before it exits."""
        if self.proc is not None:
            stop_process(self.proc)
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> "HttpdServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

# SPDX-License-Identifier: BSD-3-Clause
"""Security properties of what the forks add.

- httpd's stage-stats handler exists only where a configuration asks for
  it, and the shipped example configuration serves it to loopback clients
  only: checked from a client in a network namespace this test creates
  (and removes), over a veth pair, and by reading the example's Require
  lines.
- No stats output (memcached `stats stages`/`stats settings`/`stats`,
  httpd's handler in every format and mod_status's copy) ever contains
  anything from a request: unique marker keys, values, paths, headers and
  bodies are sent and must not come back.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import socket
import struct
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

from conftest import binary_or_skip
from stagevar_bench import memcache_client as mc
from stagevar_bench.servers import LOOPBACK, TRACE_EVERY_REQUEST, HttpdServer, MemcachedServer, free_port

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "httpd" / "stagevar-example.conf"
HANDLER = """\
<Location "/stage-stats">
    SetHandler stage-stats
    Require ip 127.0.0.1 ::1
</Location>
"""
FORMATS = ("", "?auto", "?json")


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        return r.read().decode()


def start_httpd(conf: str) -> HttpdServer:
    server = HttpdServer(binary_or_skip("fork", "httpd"), extra_conf=conf)
    server.write_conf()
    (server.docroot / "index.html").write_text("<h1>stagevar</h1>\n")
    return server.start()


# ---- the handler is off unless configured ---------------------------------

@pytest.mark.parametrize("conf", ["", "StageTrace on"], ids=["base", "tracing-on"])
def test_stage_handler_is_off_unless_configured(conf: str) -> None:
    server = start_httpd(conf)
    try:
        assert status_of(server.url("/")) == 200
        for fmt in FORMATS:
            assert status_of(server.url("/stage-stats" + fmt)) == 404
    finally:
        server.stop()


def test_handler_serves_get_only() -> None:
    server = start_httpd("StageTrace on\n" + HANDLER)
    try:
        req = urllib.request.Request(server.url("/stage-stats?auto"), data=b"x=1", method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code in (403, 404, 405), e.value.code
    finally:
        server.stop()


def test_example_config_requires_loopback() -> None:
    """Every <Location> of the example that sets the stage-stats handler
    allows exactly the loopback addresses, and nothing else grants access."""
    text = EXAMPLE.read_text()
    blocks = re.findall(r"<Location\b[^>]*>(.*?)</Location>", text, re.S)
    handlers = [b for b in blocks if re.search(r"^\s*SetHandler\s+stage-stats\s*$", b, re.M)]
    assert handlers, "the example configures the handler"
    for block in handlers:
        requires = re.findall(r"^\s*Require\s+(.*?)\s*$", block, re.M)
        assert requires == ["ip 127.0.0.1 ::1"], requires
    assert not re.search(r"^\s*Require\s+all\s+granted", text, re.M | re.I)
    assert not re.search(r"^\s*(Allow|Satisfy)\b", text, re.M | re.I)


class Namespace:
    """A network namespace joined to this one by a veth pair with a /30:
    HOST_ADDR on our side, PEER_ADDR inside. Removing the namespace removes
    both veth ends."""

    def __init__(self) -> None:
        tag = f"{os.getpid() % 100000}{random.randrange(100)}"
        self.name = f"svsec{tag}"
        self.host_if, self.peer_if = f"svh{tag}", f"svp{tag}"
        net = random.randrange(1 << 14) * 4    # a random /30 in 10.231.0.0/16
        self.host_addr = f"10.231.{net >> 8}.{(net & 255) + 1}"
        self.peer_addr = f"10.231.{net >> 8}.{(net & 255) + 2}"

    def ip(self, *args: str, inside: bool = False) -> None:
        cmd = ["ip", *(["netns", "exec", self.name, "ip"] if inside else []), *args]
        subprocess.run(cmd, check=True, capture_output=True, timeout=10)

    def create(self) -> None:
        self.ip("netns", "add", self.name)
        self.ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.peer_if)
        self.ip("link", "set", self.peer_if, "netns", self.name)
        self.ip("addr", "add", f"{self.host_addr}/30", "dev", self.host_if)
        self.ip("link", "set", self.host_if, "up")
        self.ip("addr", "add", f"{self.peer_addr}/30", "dev", self.peer_if, inside=True)
        self.ip("link", "set", self.peer_if, "up", inside=True)
        self.ip("link", "set", "lo", "up", inside=True)

    def remove(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=10)
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True, timeout=10)

    def http_status(self, url: str) -> int:
        """GET from inside the namespace with curl; the HTTP status."""
        proc = subprocess.run(["ip", "netns", "exec", self.name, "curl", "-sS", "--max-time", "10",
                               "-o", "/dev/null", "-w", "%{http_code}", url],
                              capture_output=True, text=True, timeout=20)
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout)


@pytest.fixture
def namespace() -> Iterator[Namespace]:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("curl"):
        pytest.skip("needs root, ip and curl to create a network namespace")
    ns = Namespace()
    try:
        ns.create()
    except subprocess.CalledProcessError as e:
        ns.remove()
        pytest.skip(f"cannot create a network namespace here: {e.stderr!r}")
    try:
        yield ns
    finally:
        ns.remove()


def test_example_config_refuses_a_non_loopback_client(namespace: Namespace) -> None:
    outside_port = free_port()
    server = start_httpd(f"Listen {namespace.host_addr}:{outside_port}\nInclude \"{EXAMPLE}\"\n")
    try:
        remote = f"http://{namespace.host_addr}:{outside_port}"
        # The path works from the namespace: a refusal is the Require, not routing.
        assert namespace.http_status(remote + "/") == 200
        for fmt in FORMATS:
            assert namespace.http_status(remote + "/stage-stats" + fmt) == 403, fmt
            assert status_of(server.url("/stage-stats" + fmt)) == 200, fmt
    finally:
        server.stop()


# ---- no request contents in any stats output ------------------------------

MARKER = "Zq7secretMarker"


def test_httpd_stats_never_show_request_contents() -> None:
    server = start_httpd("StageTrace on\n" + HANDLER)
    try:
        req = urllib.request.Request(
            server.url(f"/{MARKER}.html?{MARKER}=1"),
            headers={"X-Marker": MARKER, "User-Agent": MARKER, "Cookie": f"{MARKER}={MARKER}",
                     "Referer": f"http://{MARKER}.example/"})
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(req, timeout=10)
        post = urllib.request.Request(server.url(f"/?{MARKER}"), data=f"{MARKER}=body".encode())
        try:
            urllib.request.urlopen(post, timeout=10).close()
        except urllib.error.HTTPError:
            pass    # whatever the status: the request was logged
        outputs = [get(server.url("/stage-stats" + fmt)) for fmt in FORMATS]
        outputs.append(get(server.url(f"/stage-stats?auto&{MARKER}")))
        outputs.append(get(server.url(f"/stage-stats?json&{MARKER}")))
        outputs.append(get(server.url(f"/stage-stats?{MARKER}")))
        outputs.append(get(server.url("/server-status?auto")))
        outputs.append(get(server.url("/server-status")))
        # Tracing was on and counted (a request is counted once it is
        # logged, which can be a moment after its client saw the reply).
        assert int(re.search(r"^StageRequests: (\d+)$", outputs[1], re.M).group(1)) >= 1
        for out in outputs[:-1]:
            assert MARKER not in out
        # mod_status's own table lists request lines (upstream behaviour);
        # our part of it, after our heading, must not.
        ours = outputs[-1].split("Request stages (mod_stagevar)", 1)
        assert len(ours) == 2 and MARKER not in ours[1]
    finally:
        server.stop()


def memcached_reply(port: int, command: bytes, end: bytes, size: int = 0) -> bytes:
    """Send `command` on a new connection; the reply up to `end`, or its
    first `size` bytes (binary protocol)."""
    with socket.create_connection((LOOPBACK, port), timeout=5) as s:
        s.sendall(command)
        reply = b""
        while (len(reply) < size) if size else not reply.endswith(end):
            chunk = s.recv(65536)
            assert chunk, f"closed after {reply!r}"
            reply += chunk
        return reply


def binary_set(key: bytes, value: bytes) -> bytes:
    extras = struct.pack(">II", 0, 0)
    body = len(extras) + len(key) + len(value)
    return struct.pack(">BBHBBHIIQ", 0x80, 0x01, len(key), len(extras), 0, 0, body, 7, 0) \
        + extras + key + value


def test_memcached_stats_never_show_keys_or_values() -> None:
    binary = binary_or_skip("fork", "memcached")
    key, value = MARKER.encode() + b"Key", MARKER.encode() + b"Value"
    with MemcachedServer(binary, args=["-o", TRACE_EVERY_REQUEST]) as server:
        port = server.port
        memcached_reply(port, b"set %s 0 0 %d\r\n%s\r\n" % (key, len(value), value), b"STORED\r\n")
        memcached_reply(port, b"get %s %sOther\r\n" % (key, key), b"END\r\n")
        memcached_reply(port, b"ms %sMeta %d\r\n%s\r\n" % (key, len(value), value), b"HD\r\n")
        memcached_reply(port, b"mg %sMeta v\r\n" % key, b"\r\n%s\r\n" % value)
        memcached_reply(port, binary_set(key + b"Bin", value), b"", size=24)
        memcached_reply(port, b"%s\r\n" % key, b"ERROR\r\n")
        memcached_reply(port, b"stats %s\r\n" % key, b"\r\n")
        outputs = [memcached_reply(port, b"stats stages\r\n", b"END\r\n"),
                   memcached_reply(port, b"stats settings\r\n", b"END\r\n"),
                   memcached_reply(port, b"stats\r\n", b"END\r\n")]
    stages = mc.parse_stats(outputs[0].decode())
    assert stages["stage_trace"] == "on"
    assert int(stages["parse_to_response:count"]) >= 6
    for out in outputs:
        assert MARKER.encode() not in out

# SPDX-License-Identifier: BSD-3-Clause
"""The built httpd servers, stock and fork, answering curl and urllib."""
from __future__ import annotations

import subprocess
import time
import urllib.error
import urllib.request

import pytest

from conftest import binary_or_skip, server_status
from stagevar_bench.servers import HttpdServer


def curl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "-sS", "--max-time", "10", *args],
                          capture_output=True, text=True, timeout=20)


def test_static_file_exact_bytes(httpd: HttpdServer) -> None:
    payload = bytes(range(256)) * 1000
    (httpd.docroot / "blob.bin").write_bytes(payload)
    with urllib.request.urlopen(httpd.url("/blob.bin"), timeout=10) as r:
        assert r.status == 200
        assert r.read() == payload
        assert int(r.headers["Content-Length"]) == len(payload)


def test_index_and_server_header(httpd: HttpdServer, variant: str) -> None:
    proc = subprocess.run(["curl", "-sS", "-i", "--max-time", "10", httpd.url("/")],
                          capture_output=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    head, _, body = proc.stdout.decode().partition("\r\n\r\n")
    assert head.startswith("HTTP/1.1 200 OK")
    assert body == "<h1>stagevar</h1>\n"
    server = next(line for line in head.split("\r\n") if line.lower().startswith("server:"))
    expected = "Apache/2.4.68-stagevar" if variant == "fork" else "Apache/2.4.68 "
    assert expected in server + " ", server


def test_keepalive_reuses_one_connection(httpd: HttpdServer) -> None:
    urls = [httpd.url("/")] * 5
    proc = curl("-v", *urls)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("<h1>stagevar</h1>") == 5
    assert proc.stderr.count("Connected to") == 1, "curl opened more than one connection"
    assert proc.stderr.count("Re-using existing connection") >= 4


def test_missing_file_is_404(httpd: HttpdServer) -> None:
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(httpd.url("/nope.html"), timeout=10)
    assert e.value.code == 404


def test_server_status_auto_parses(httpd: HttpdServer) -> None:
    urllib.request.urlopen(httpd.url("/"), timeout=10).read()
    # httpd counts an access after it has sent the response, so the
    # status request can overtake the count (seen under ASAN): look a
    # few times, for at most 5 s.
    deadline = time.monotonic() + 5
    fields = server_status(httpd)
    while int(fields["Total Accesses"]) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
        fields = server_status(httpd)
    assert int(fields["Total Accesses"]) >= 1
    assert int(fields["BusyWorkers"]) >= 1
    assert "ConnsTotal" in fields, "event MPM fields missing"
    assert fields["ServerMPM"] == "event"


def test_bad_directive_names_the_line(variant: str) -> None:
    server = HttpdServer(binary_or_skip(variant, "httpd"), extra_conf="NoSuchDirective on")
    try:
        conf = server.write_conf()
        line = conf.read_text().splitlines().index("NoSuchDirective on") + 1
        proc = subprocess.run([str(server.binary), "-t", "-f", str(conf)],
                              capture_output=True, text=True, timeout=20)
    finally:
        server.stop()
    assert proc.returncode != 0
    assert f"line {line}" in proc.stderr, proc.stderr
    assert "NoSuchDirective" in proc.stderr

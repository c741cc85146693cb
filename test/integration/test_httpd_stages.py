# SPDX-License-Identifier: BSD-3-Clause
"""StageTrace and the stage-stats handler (mod_stagevar) in the forked httpd.

Real clients (urllib, curl) send a known number of requests to the real
fork on loopback; the handler must account for exactly those.
"""
from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterator

import pytest

from conftest import binary_or_skip, httpd_config_test, server_status
from stagevar_bench.servers import HttpdServer

STAGES = ["listener_to_worker", "kernel_to_read", "read_to_parse",
          "parse_to_response", "response_to_send", "server_total"]
FIELDS = ["count", "mean_ns", "stddev_ns", "cv2", "min_ns", "max_ns", "p50_ns",
          "p90_ns", "p99_ns", "p999_ns", "missing", "dropped"]
HANDLER = """\
<Location "/stage-stats">
    SetHandler stage-stats
    Require ip 127.0.0.1 ::1
</Location>
"""
PAGE = "x" * 280 + "\n"


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        return r.read().decode()


def parse_auto(text: str) -> dict[str, str]:
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition(": ")
        assert sep and key and value, f"not a 'Key: value' line: {line!r}"
        assert key not in fields, f"duplicate key {key}"
        fields[key] = value
    return fields


def start(binary: Path, conf: str) -> HttpdServer:
    server = HttpdServer(binary, extra_conf=conf)
    server.write_conf()
    (server.docroot / "index.html").write_text(PAGE)
    return server.start()


@pytest.fixture
def traced() -> Iterator[HttpdServer]:
    # every request traced (the default traces one in 256 per thread)
    server = start(binary_or_skip("fork", "httpd"),
                   "StageTrace on\nStageTraceSample 1\n" + HANDLER)
    try:
        yield server
    finally:
        server.stop()


def send_requests(server: HttpdServer) -> int:
    """7 requests on fresh connections (urllib) and 5 on one keep-alive
    connection (curl): 12."""
    for _ in range(7):
        assert get(server.url("/")) == PAGE
    proc = subprocess.run(["curl", "-sS", "--max-time", "10", *[server.url("/")] * 5],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == PAGE * 5
    return 12


def settled_stats(server: HttpdServer, sent: int, fmt: str = "auto") -> dict[str, str]:
    """The ?auto fields once every request sent so far is accounted for.

    A request is recorded when it is logged, which may be a moment after
    the client has its response; each stats request is itself a request,
    so the k-th look must see sent + k. More than that is a failure at
    once, fewer is retried for a bounded time."""
    deadline = time.monotonic() + 10
    looks = 0
    while True:
        fields = parse_auto(get(server.url("/stage-stats?auto")))
        seen = int(fields["StageRequests"])
        assert seen <= sent + looks, f"{seen} requests recorded, only {sent + looks} sent"
        if seen == sent + looks:
            return fields
        assert time.monotonic() < deadline, f"{seen} requests recorded, {sent + looks} sent"
        looks += 1
        time.sleep(0.05)


def test_counts_equal_the_requests_sent(traced: HttpdServer) -> None:
    sent = send_requests(traced)
    fields = settled_stats(traced, sent)
    total = int(fields["StageRequests"])
    assert fields["StageTrace"] == "On"
    for stage in STAGES:
        accounted = sum(int(fields[f"Stage_{stage}_{k}"]) for k in ("count", "missing", "dropped"))
        assert accounted == total, f"{stage}: {accounted} of {total} requests"
    # The core stamps every write: parse_to_response is never missing.
    assert int(fields["Stage_parse_to_response_count"]) == total
    # Fresh connections pass the listener and start at the socket, so
    # their kernel timestamps exist (loopback, software timestamps).
    for stage in ("listener_to_worker", "kernel_to_read", "response_to_send", "server_total"):
        assert int(fields[f"Stage_{stage}_count"]) >= 7, (stage, fields)
    for stage in STAGES:
        if int(fields[f"Stage_{stage}_count"]):
            assert 0 < float(fields[f"Stage_{stage}_mean_ns"]) < 10e9, (stage, fields)
            assert int(fields[f"Stage_{stage}_min_ns"]) <= int(fields[f"Stage_{stage}_p50_ns"]) \
                <= int(fields[f"Stage_{stage}_max_ns"]) * 1.01


def test_auto_has_every_stage_field(traced: HttpdServer) -> None:
    fields = parse_auto(get(traced.url("/stage-stats?auto")))
    expected = {"StageTrace", "StageTraceSample", "StageRequestsSeen", "StageRequests"} \
        | {f"Stage_{s}_{f}" for s in STAGES for f in FIELDS}
    assert set(fields) == expected
    assert fields["StageTraceSample"] == "1"
    for key in expected - {"StageTrace"}:
        float(fields[key])


def test_json_parses_and_agrees_with_auto(traced: HttpdServer) -> None:
    sent = send_requests(traced)
    auto = settled_stats(traced, sent)
    with urllib.request.urlopen(traced.url("/stage-stats?json"), timeout=10) as r:
        assert r.headers["Content-Type"].startswith("application/json")
        doc = json.loads(r.read())
    assert doc["stage_trace"] is True
    # The ?json request comes after the last ?auto, which it counts.
    assert doc["requests"] in (int(auto["StageRequests"]), int(auto["StageRequests"]) + 1)
    assert list(doc["stages"]) == STAGES
    for stage in STAGES:
        assert set(doc["stages"][stage]) == set(FIELDS)


def test_html_page(traced: HttpdServer) -> None:
    page = get(traced.url("/stage-stats"))
    assert "<table" in page and "</html>" in page
    for stage in STAGES:
        assert f"<td>{stage}</td>" in page


def test_server_status_carries_the_stage_lines(traced: HttpdServer) -> None:
    sent = send_requests(traced)
    settled_stats(traced, sent)
    fields = server_status(traced)
    assert fields["StageTrace"] == "On"
    assert int(fields["StageRequests"]) >= sent
    assert "Total Accesses" in fields, "mod_status' own lines are gone"
    assert "Request stages (mod_stagevar)" in get(traced.url("/server-status"))


def test_counts_survive_a_graceful_restart(traced: HttpdServer) -> None:
    sent = send_requests(traced)
    before = int(settled_stats(traced, sent)["StageRequests"])
    restart = subprocess.run([str(traced.binary), "-f", str(traced.conf), "-k", "graceful"],
                             capture_output=True, text=True, timeout=20)
    assert restart.returncode == 0, restart.stderr
    time.sleep(0.5)
    after = int(parse_auto(get(traced.url("/stage-stats?auto")))["StageRequests"])
    assert after >= before


def test_concurrent_requests_are_all_counted(traced: HttpdServer) -> None:
    # A child's threads share its row: none of their updates may be lost.
    clients, each = 8, 25
    with ThreadPoolExecutor(clients) as pool:
        pages = list(pool.map(lambda _: get(traced.url("/")), range(clients * each)))
    assert pages == [PAGE] * (clients * each)
    fields = settled_stats(traced, clients * each)
    assert int(fields["StageRequestsSeen"]) >= clients * each
    assert int(fields["Stage_parse_to_response_count"]) == int(fields["StageRequests"])


def vm_size_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmSize line in /proc/{pid}/status")


def test_trace_on_maps_little_more_than_off() -> None:
    """At the event MPM's default limits (the base configuration sets
    none: ServerLimit 16, ThreadLimit 64) the parent's address space with
    StageTrace on may exceed Off's by 8 MB at most: the rows are sized
    per child, not per (child, thread), which mapped 96 MB."""
    binary = binary_or_skip("fork", "httpd")
    sizes = []
    for conf in ("StageTrace off\n", "StageTrace on\n"):
        server = start(binary, conf + HANDLER)
        try:
            assert get(server.url("/")) == PAGE
            assert server.proc is not None
            sizes.append(vm_size_kb(server.proc.pid))
        finally:
            server.stop()
    off, on = sizes
    assert on - off <= 8 * 1024, f"StageTrace on maps {on - off} kB more than off ({on} vs {off} kB)"


def test_off_by_default_records_nothing() -> None:
    server = start(binary_or_skip("fork", "httpd"), HANDLER)
    try:
        send_requests(server)
        fields = parse_auto(get(server.url("/stage-stats?auto")))
    finally:
        server.stop()
    assert fields["StageTrace"] == "Off"
    assert fields["StageRequests"] == "0"


def test_stock_serves_the_base_config_but_not_stage_trace() -> None:
    stock = binary_or_skip("stock", "httpd")
    server = start(stock, "")
    try:
        assert get(server.url("/")) == PAGE
    finally:
        server.stop()
    proc, _ = httpd_config_test(stock, "StageTrace on", "StageTrace")
    assert proc.returncode != 0
    assert "Invalid command 'StageTrace'" in proc.stderr


def test_example_config_is_valid() -> None:
    binary = binary_or_skip("fork", "httpd")
    example = Path(__file__).resolve().parents[2] / "httpd" / "stagevar-example.conf"
    proc, _ = httpd_config_test(binary, f'Include "{example}"', "Include")
    assert proc.returncode == 0, proc.stderr

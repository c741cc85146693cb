# SPDX-License-Identifier: BSD-3-Clause
"""The bad-input matrix: every option, directive and flag stagevar adds,
given malformed, out-of-range, conflicting and empty values.

One table per program, one row per case. Every row must give a clear
one-line error that names the offending value, a non-zero exit, and no
running server: memcached and loadgen are run to completion under a
timeout (a server that started would still be running), httpd's
configuration is checked with `httpd -t` and, for a sample of rows, by
starting it for real.
"""
from __future__ import annotations

import os
import socket
import subprocess

import pytest

from conftest import binary_or_skip, httpd_config_test, loadgen_binary
from stagevar_bench.servers import LOOPBACK, HttpdServer, free_port

# CPUs this process (and so a server it starts) may run on, and one it may not.
ALLOWED = sorted(os.sched_getaffinity(0))
OUTSIDE = max(ALLOWED) + 1
SAMPLE_RANGE = "is not a number from 1 to 1000000"


def cpu_list(cpus: list[int]) -> str:
    """The kernel's list form, as the servers print it: 0-1,4."""
    runs: list[list[int]] = []
    for cpu in cpus:
        if runs and cpu == runs[-1][-1] + 1:
            runs[-1].append(cpu)
        else:
            runs.append([cpu])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


# ---- memcached: stage_trace, stage_trace_kernel, stage_trace_sample,
# ---- lru_amortized_budget_us, worker_cpus, pin_helpers -----------------------------------------------

# (kind, -o argument, expected message). stage_trace and
# stage_trace_kernel take exactly "0" or "1" (stage_trace also nothing),
# so each of their rows is one wrong spelling. Those two never conflict
# (stage_trace_kernel without stage_trace just has nothing to stamp), so
# their "conflicting" rows repeat an option with a bad second value: the
# later, bad one must still be refused. lru_amortized_budget_us conflicts
# with a server that has no LRU maintainer to amortize.
MEMCACHED_ROWS = [
    ("malformed", "stage_trace=maybe", "stage_trace: 'maybe' is not 0 or 1"),
    ("malformed", "stage_trace=on", "stage_trace: 'on' is not 0 or 1"),
    ("malformed", "stage_trace=1 ", "stage_trace: '1 ' is not 0 or 1"),
    ("malformed", "stage_trace=1=1", "stage_trace: '1=1' is not 0 or 1"),
    ("malformed", "stage_trace_kernel=maybe", "stage_trace_kernel: 'maybe' is not 0 or 1"),
    ("malformed", "stage_trace_kernel=true", "stage_trace_kernel: 'true' is not 0 or 1"),
    ("malformed", "stage_tracing", 'Illegal suboption "stage_tracing"'),
    ("out-of-range", "stage_trace=2", "stage_trace: '2' is not 0 or 1"),
    ("out-of-range", "stage_trace=-1", "stage_trace: '-1' is not 0 or 1"),
    ("out-of-range", "stage_trace=01", "stage_trace: '01' is not 0 or 1"),
    ("out-of-range", "stage_trace=99999999999999999999",
     "stage_trace: '99999999999999999999' is not 0 or 1"),
    ("out-of-range", "stage_trace_kernel=2", "stage_trace_kernel: '2' is not 0 or 1"),
    ("conflicting", "stage_trace,stage_trace=2", "stage_trace: '2' is not 0 or 1"),
    ("conflicting", "stage_trace,stage_trace_kernel=7", "stage_trace_kernel: '7' is not 0 or 1"),
    ("conflicting", "stage_trace_kernel=0,stage_trace_kernel=x", "stage_trace_kernel: 'x' is not 0 or 1"),
    ("empty", "stage_trace=", "stage_trace: '' is not 0 or 1"),
    ("empty", "stage_trace_kernel=", "stage_trace_kernel: '' is not 0 or 1"),
    ("empty", "stage_trace_kernel", "stage_trace_kernel: '' is not 0 or 1"),
    ("malformed", "lru_amortized_budget_us=abc", "lru_amortized_budget_us=abc: must be a whole number of microseconds from 0 to 100000"),
    ("malformed", "lru_amortized_budget_us=1.5", "lru_amortized_budget_us=1.5: must be a whole number of microseconds from 0 to 100000"),
    ("malformed", "lru_amortized_budget_us=0x10", "lru_amortized_budget_us=0x10: must be a whole number of microseconds from 0 to 100000"),
    ("malformed", "lru_amortized_budget_us=auto", "lru_amortized_budget_us=auto: must be a whole number of microseconds from 0 to 100000"),
    ("malformed", "lru_amortized_budget_us=Auto", "lru_amortized_budget_us=Auto: must be a whole number of microseconds from 0 to 100000"),
    ("malformed", "worker_cpus=a", "worker_cpus=a: expected a CPU number at 'a'"),
    ("malformed", "worker_cpus=0,,1", "worker_cpus=0,,1: expected a CPU number at ',1'"),
    ("malformed", "worker_cpus=0,", "worker_cpus=0,: expected a CPU number after the last ','"),
    ("malformed", "worker_cpus=0x", "worker_cpus=0x: expected ',' or '-' at 'x'"),
    ("malformed", "worker_cpus=1-", "worker_cpus=1-: expected a CPU number at ''"),
    ("malformed", "worker_cpus=-1", "worker_cpus=-1: expected a CPU number at '-1'"),
    ("malformed", "pin_helpers=1x", "pin_helpers=1x: expected one CPU number"),
    ("out-of-range", "lru_amortized_budget_us=-1", "lru_amortized_budget_us=-1: must be a whole number of microseconds from 0 to 100000"),
    ("out-of-range", "lru_amortized_budget_us=100001", "lru_amortized_budget_us=100001: must be a whole number of microseconds from 0 to 100000"),
    ("out-of-range", "lru_amortized_budget_us=99999999999999999999",
     "lru_amortized_budget_us=99999999999999999999: must be a whole number of microseconds from 0 to 100000"),
    ("out-of-range", "worker_cpus=5000", "worker_cpus=5000: CPU '5000' is above 1023"),
    ("out-of-range", f"worker_cpus={OUTSIDE}",
     f"worker_cpus={OUTSIDE}: CPU {OUTSIDE} is not one this server may run on ({cpu_list(ALLOWED)})"),
    ("out-of-range", f"worker_cpus=0-{OUTSIDE}",
     f"worker_cpus=0-{OUTSIDE}: CPU {OUTSIDE} is not one this server may run on ({cpu_list(ALLOWED)})"),
    ("out-of-range", "worker_cpus=1-0", "worker_cpus=1-0: range '1-0' runs backwards"),
    ("out-of-range", "pin_helpers=5000", "pin_helpers=5000: CPU '5000' is above 1023"),
    ("out-of-range", f"pin_helpers={OUTSIDE}",
     f"pin_helpers={OUTSIDE}: CPU {OUTSIDE} is not one this server may run on ({cpu_list(ALLOWED)})"),
    ("conflicting", "lru_amortized_budget_us=20,no_lru_maintainer",
     "lru_amortized_budget_us=20: needs the LRU maintainer, which no_lru_maintainer or no_modern turned off"),
    ("conflicting", "no_lru_maintainer,lru_amortized_budget_us=20",
     "lru_amortized_budget_us=20: needs the LRU maintainer, which no_lru_maintainer or no_modern turned off"),
    ("conflicting", "no_modern,lru_amortized_budget_us=5",
     "lru_amortized_budget_us=5: needs the LRU maintainer, which no_lru_maintainer or no_modern turned off"),
    ("conflicting", "lru_amortized_budget_us=20,lru_amortized_budget_us=x", "lru_amortized_budget_us=x: must be a whole number of microseconds from 0 to 100000"),
    ("conflicting", "worker_cpus=0,worker_cpus=a", "worker_cpus=a: expected a CPU number at 'a'"),
    ("conflicting", "pin_helpers=0,pin_helpers=x", "pin_helpers=x: expected a CPU number at 'x'"),
    ("empty", "lru_amortized_budget_us=", "lru_amortized_budget_us=: must be a whole number of microseconds from 0 to 100000"),
    ("empty", "lru_amortized_budget_us", "lru_amortized_budget_us=: must be a whole number of microseconds from 0 to 100000"),
    ("empty", "worker_cpus=", "worker_cpus: needs a list of CPUs, e.g. worker_cpus=0,2-3"),
    ("empty", "worker_cpus", "worker_cpus: needs a list of CPUs, e.g. worker_cpus=0,2-3"),
    ("empty", "pin_helpers=", "pin_helpers: needs a CPU, e.g. pin_helpers=1"),
    ("empty", "pin_helpers", "pin_helpers: needs a CPU, e.g. pin_helpers=1"),
    # -o stage_trace_sample=N takes 1..1000000 (without stage_trace it has
    # nothing to sample, which, like stage_trace_kernel, is not an error).
    ("malformed", "stage_trace_sample=abc", f"stage_trace_sample: 'abc' {SAMPLE_RANGE}"),
    ("malformed", "stage_trace_sample=1.5", f"stage_trace_sample: '1.5' {SAMPLE_RANGE}"),
    ("malformed", "stage_trace_sample=064", f"stage_trace_sample: '064' {SAMPLE_RANGE}"),
    ("out-of-range", "stage_trace_sample=0", f"stage_trace_sample: '0' {SAMPLE_RANGE}"),
    ("out-of-range", "stage_trace_sample=-64", f"stage_trace_sample: '-64' {SAMPLE_RANGE}"),
    ("out-of-range", "stage_trace_sample=1000001", f"stage_trace_sample: '1000001' {SAMPLE_RANGE}"),
    ("out-of-range", "stage_trace_sample=99999999999999999999",
     f"stage_trace_sample: '99999999999999999999' {SAMPLE_RANGE}"),
    ("conflicting", "stage_trace,stage_trace_sample=64,stage_trace_sample=0",
     f"stage_trace_sample: '0' {SAMPLE_RANGE}"),
    ("empty", "stage_trace_sample=", f"stage_trace_sample: '' {SAMPLE_RANGE}"),
    ("empty", "stage_trace_sample", f"stage_trace_sample: '' {SAMPLE_RANGE}"),
    # -o pin_helpers=CPU takes one CPU; worker_cpus' list keeps its commas.
    ("malformed", "pin_helpers=0,1", "pin_helpers takes one CPU, not '0,1'"),
    ("malformed", "pin_helpers=0-1", "pin_helpers takes one CPU, not '0-1'"),
    ("malformed", "pin_helpers=0,", "pin_helpers takes one CPU, not '0,'"),
    ("malformed", "worker_cpus=0,-1", "worker_cpus=0,-1: expected a CPU number at '-1'"),
    ("malformed", "worker_cpus=,0", "worker_cpus=,0: expected a CPU number at ',0'"),
]


def one_error_line(text: str) -> str:
    lines = [l for l in text.splitlines() if l.strip()]
    assert len(lines) == 1, f"want one error line, got {text!r}"
    return lines[0]


@pytest.mark.parametrize("kind, option, message", MEMCACHED_ROWS,
                         ids=[f"{k}:{o}" for k, o, _ in MEMCACHED_ROWS])
def test_memcached_option(kind: str, option: str, message: str) -> None:
    binary = binary_or_skip("fork", "memcached")
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    result = subprocess.run([str(binary), *user, "-l", LOOPBACK, "-p", str(free_port()), "-U", "0",
                             "-o", option], capture_output=True, text=True, timeout=10)
    assert result.returncode != 0
    assert message in result.stderr + result.stdout
    assert one_error_line(result.stderr + result.stdout) == message


def test_stock_memcached_does_not_know_stage_trace() -> None:
    binary = binary_or_skip("stock", "memcached")
    user = ["-u", "nobody"] if os.geteuid() == 0 else []
    result = subprocess.run([str(binary), *user, "-p", "0", "-U", "0", "-o", "stage_trace"],
                            capture_output=True, text=True, timeout=10)
    assert result.returncode != 0
    assert one_error_line(result.stderr) == 'Illegal suboption "stage_trace"'


# ---- httpd: ProcessCorePinning, ProcessCoreList, StageTrace(Sample) -------

IN_VHOST = "<VirtualHost 127.0.0.1:1>\n{}\n</VirtualHost>"

# (kind, configuration lines, expected message). The message is the
# reason line httpd prints after "Syntax error on line N of FILE:".
# ProcessCorePinning and StageTrace are httpd FLAG directives, and httpd
# reads only the first word of a FLAG ("StageTrace on please" is "on", as
# "ExtendedStatus on off" is in stock httpd), so no row tries extra words.
HTTPD_ROWS = [
    ("malformed", "ProcessCorePinning maybe", "ProcessCorePinning must be On or Off"),
    ("malformed", "ProcessCoreList 0-x", "'0-x'"),
    ("malformed", "ProcessCoreList 1,,2", "'' in '1,,2'"),
    ("malformed", "ProcessCoreList 0,", "'' in '0,'"),
    ("malformed", "ProcessCoreList -1", "'-1'"),
    ("malformed", "ProcessCoreList 0;1", "'0;1' in '0;1' is not a CPU number"),
    ("malformed", "ProcessCoreList 0 1", "takes one argument"),
    ("malformed", "StageTrace maybe", "StageTrace must be On or Off"),
    ("malformed", "StageTraceSample four",
     "StageTraceSample must be a whole number from 1 to 2147483647, not 'four'"),
    ("malformed", "StageTraceSample 4x", "not '4x'"),
    ("malformed", "StageTraceSample 4 8", "StageTraceSample takes one argument"),
    ("out-of-range", "ProcessCoreList 3-1", "'3-1'"),
    ("out-of-range", "StageTraceSample 0", "not '0'"),
    ("out-of-range", "StageTraceSample -1", "not '-1'"),
    ("out-of-range", "StageTraceSample 2147483648", "not '2147483648'"),
    ("out-of-range", "ProcessCoreList 99999", "'99999'"),
    ("out-of-range", "ProcessCoreList 1024", "'1024' in '1024' is not a CPU number (0-1023)"),
    ("out-of-range", f"ProcessCoreList 0-{OUTSIDE}",
     f"CPU {OUTSIDE} in '0-{OUTSIDE}' is not one this server may run on"),
    ("conflicting", IN_VHOST.format("ProcessCorePinning on"), "cannot occur within <VirtualHost> section"),
    ("conflicting", IN_VHOST.format("ProcessCoreList 0"), "cannot occur within <VirtualHost> section"),
    ("conflicting", IN_VHOST.format("StageTrace on"), "cannot occur within <VirtualHost> section"),
    ("conflicting", IN_VHOST.format("StageTraceSample 4"), "cannot occur within <VirtualHost> section"),
    ("empty", 'ProcessCoreList ""', "ProcessCoreList takes one argument"),
    ("empty", "ProcessCoreList", "ProcessCoreList takes one argument"),
    ("empty", "ProcessCorePinning", "ProcessCorePinning must be On or Off"),
    ("empty", "StageTrace", "StageTrace must be On or Off"),
    ("empty", 'StageTraceSample ""', "StageTraceSample takes one argument"),
    ("empty", "StageTraceSample", "StageTraceSample takes one argument"),
]


def directive_of(conf: str) -> str:
    """The line of `conf` that holds the bad directive (not a <VirtualHost>)."""
    return next(l for l in conf.splitlines() if not l.startswith("<"))


def row_id(kind: str, conf: str) -> str:
    return f"{kind}:{directive_of(conf)}" + (" in vhost" if "<VirtualHost" in conf else "")


@pytest.mark.parametrize("kind, conf, message", HTTPD_ROWS,
                         ids=[row_id(k, c) for k, c, _ in HTTPD_ROWS])
def test_httpd_directive(kind: str, conf: str, message: str) -> None:
    proc, where = httpd_config_test(binary_or_skip("fork", "httpd"), conf, directive_of(conf))
    assert proc.returncode != 0, proc.stderr
    assert where in proc.stderr, proc.stderr
    assert message in proc.stderr, proc.stderr
    reason = [l for l in proc.stderr.splitlines() if message in l]
    assert len(reason) == 1, f"the reason is one line: {proc.stderr!r}"


@pytest.mark.parametrize("conf", ["ProcessCorePinning maybe", "ProcessCoreList 1,,2", "StageTrace maybe"])
def test_httpd_does_not_start_with_a_bad_directive(conf: str) -> None:
    """Not only `httpd -t`: the server itself refuses to start."""
    binary = binary_or_skip("fork", "httpd")
    server = HttpdServer(binary, extra_conf=conf)
    try:
        proc = subprocess.run([str(binary), "-f", str(server.write_conf()), "-DFOREGROUND"],
                              capture_output=True, text=True, timeout=20)
        port = server.port
    finally:
        server.stop()
    assert proc.returncode != 0
    assert "Syntax error" in proc.stderr
    with pytest.raises(OSError):
        socket.create_connection((LOOPBACK, port), timeout=1).close()


# ---- loadgen: every flag ---------------------------------------------------

# (kind, arguments, text the one error line must contain).
LOADGEN_ROWS = [
    # malformed
    ("malformed", ["--rate", "lots"], "'lots'"),
    ("malformed", ["--rate", "nan"], "'nan'"),
    ("malformed", ["--duration", "3 parsecs"], "3 parsecs"),
    ("malformed", ["--duration", "5x"], "'5x' has an unknown time unit"),
    ("malformed", ["--warmup", "1parsec"], "'1parsec'"),
    ("malformed", ["--requests", "1e3"], "'1e3'"),
    ("malformed", ["--arrival", "weibull"], "'weibull'"),
    ("malformed", ["--arrival", "pareto"], "pareto needs alpha=A or cv2=C"),
    ("malformed", ["--arrival", "pareto:cv2=2,bogus=1"], "'bogus=1'"),
    ("malformed", ["--arrival", "exp:x"], "'exp:x'"),
    ("malformed", ["--trace", "/nonexistent.csv"], "/nonexistent.csv"),
    ("malformed", ["--trace", "/etc/hostname"], "/etc/hostname"),
    ("malformed", ["--trace", "/dev/zero"], "/dev/zero:1: holds a NUL byte"),
    ("malformed", ["--protocol", "http", "--paths-file", "/dev/zero"], "'/dev/zero': holds a NUL byte"),
    ("malformed", ["--key-size", "a\nb\x1b"], "'a?b?'"),
    ("malformed", ["--shape", "moon"], "'moon'"),
    ("malformed", ["--protocol", "ftp"], "'ftp'"),
    ("malformed", ["--start-at", "soon"], "'soon'"),
    ("out-of-range", ["--start-at", "1700000000"], "in the past"),
    ("out-of-range", ["--start-at", "99999999999999999999"], "'99999999999999999999'"),
    ("malformed", ["--server", "no.such.host.invalid"], "'no.such.host.invalid'"),
    ("malformed", ["--threads", "two"], "'two'"),
    ("malformed", ["--cpus", "a"], "'a'"),
    ("malformed", ["--cpus", "0,,1"], "'0,,1' has an empty item"),
    ("malformed", ["--cpus", "0,"], "'0,' has an empty item"),
    ("malformed", ["--cpus", "1-"], "'1-'"),
    ("malformed", ["--cpus", "-1"], "'-1'"),
    ("malformed", ["--max-outstanding", "-1"], "'-1'"),
    ("malformed", ["--key-size", "uniform:"], "'uniform:'"),
    ("malformed", ["--key-size", "gev:loc=1"], "'loc=1' lacks scale="),
    ("malformed", ["--value-size", "huge"], "'huge'"),
    ("malformed", ["--popularity", "zipf"], "'zipf'"),
    ("malformed", ["--popularity", "zipf:x"], "'x'"),
    ("malformed", ["--path", "nopath", "--protocol", "http"], "'nopath'"),
    ("malformed", ["--protocol", "http", "--path", "/a b"], "'/a b'"),
    ("malformed", ["--protocol", "http", "--paths-file", "/nonexistent"], "'/nonexistent'"),
    ("malformed", ["--late-us", "x"], "'x'"),
    ("malformed", ["--seed", "-1"], "'-1'"),
    ("malformed", ["--stream", "x"], "--stream: 'x' is not a number"),
    ("malformed", ["--ttl", "10s"], "'10s' is not a non-negative integer"),
    ("malformed", ["--ttl", "mix:0.5"], "bad TTL 'mix:0.5'"),
    ("malformed", ["--ttl", "mix:half:10"], "fraction 'half'"),
    ("malformed", ["--ttl", "mux:0.5:10"], "bad TTL 'mux:0.5:10'"),
    ("malformed", ["--no-such-flag"], "'--no-such-flag'"),
    ("malformed", ["stray"], "'stray'"),
    # out of range
    ("out-of-range", ["--rate", "-5"], "'-5'"),
    ("out-of-range", ["--rate", "0"], "'0' is out of range"),
    ("out-of-range", ["--rate", "1e10"], "'1e10' is out of range"),
    ("out-of-range", ["--rate", "6000000"], "'6000000'"),
    ("out-of-range", ["--duration", "-1s"], "'-1s' is a negative time"),
    ("out-of-range", ["--duration", "0.5ms"], "'0.5ms' is too short"),
    ("out-of-range", ["--duration", ".01e308"], "'.01e308' is too long"),
    ("out-of-range", ["--warmup", "2e9"], "'2e9' is too long"),
    ("out-of-range", ["--requests", "0"], "'0' is out of range"),
    ("out-of-range", ["--threads", "0"], "'0'"),
    ("out-of-range", ["--threads", "257"], "'257' is out of range"),
    ("out-of-range", ["--connections", "100001"], "'100001' is out of range"),
    ("out-of-range", ["--arrival", "pareto:cv2=5000"], "5000"),
    ("out-of-range", ["--arrival", "pareto:alpha=0"], "'0' is out of range"),
    ("out-of-range", ["--arrival", "pareto:alpha=1.5,lo=2s,hi=1s"], "'pareto:alpha=1.5,lo=2s,hi=1s'"),
    ("out-of-range", ["--arrival", "pareto:alpha=1.5,lo=11e-300"], "hi/lo is 9.09091e+306, at most 1e+12"),
    ("out-of-range", ["--cpus", "9999"], "9999"),
    ("out-of-range", ["--cpus", "3-1"], "range '3-1' runs backwards"),
    ("out-of-range", ["--cpus", str(OUTSIDE)], f"CPU {OUTSIDE}"),
    ("out-of-range", ["--max-outstanding", "0"], "'0'"),
    ("out-of-range", ["--batch-interval-us", "0"], "'0' is out of range"),
    ("out-of-range", ["--batch-interval-us", "10000001"], "'10000001' is out of range"),
    ("out-of-range", ["--sequential-clients", "0"], "'0' is out of range"),
    ("out-of-range", ["--sequential-clients", "1", "--requests-per-conn", "0"], "'0' is out of range"),
    ("out-of-range", ["--keys", "4294967296"], "'4294967296' is out of range"),
    ("out-of-range", ["--key-size", "251"], "'251'"),
    ("out-of-range", ["--key-size", "uniform:5-2"], "'uniform:5-2'"),
    ("out-of-range", ["--value-size", "2000000"], "'2000000'"),
    ("out-of-range", ["--value-size", "gpareto:loc=0,scale=0,shape=0.3"], "scale 0 must be > 0"),
    ("out-of-range", ["--key-size", "gev:loc=1,scale=-2,shape=0"], "scale -2 must be > 0"),
    ("out-of-range", ["--get-ratio", "1.5"], "'1.5' is out of range"),
    ("out-of-range", ["--popularity", "zipf:-1"], "'-1' is out of range"),
    ("out-of-range", ["--popularity", "gpareto:scale=0,shape=1"], "scale 0 must be > 0"),
    ("out-of-range", ["--multiget", "65"], "'65' is out of range"),
    ("out-of-range", ["--spin-us", "1000001"], "'1000001' is out of range"),
    ("out-of-range", ["--coalesce", "maybe"], "--coalesce: 'maybe' is not on or off"),
    ("out-of-range", ["--timestamps", "hardware"], "'hardware' is not kernel, kernel-tx or loop"),
    ("out-of-range", ["--seed", "18446744073709551616"], "'18446744073709551616'"),
    ("out-of-range", ["--ttl", "-1"], "'-1'"),
    ("out-of-range", ["--ttl", "2592001"], "'2592001' is out of range [0, 2592000]"),
    ("out-of-range", ["--ttl", "mix:1.5:10"], "fraction '1.5' is out of range"),
    ("out-of-range", ["--ttl", "mix:0.5:0"], "TTL '0' is out of range [1, 2592000]"),
    ("out-of-range", ["--stream", "1.5"], "'1.5' is out of range"),
    ("out-of-range", ["--stream", "0.5", "--keys", "3000000000"], "--keys 3000000000 leaves --stream too few"),
    ("out-of-range", ["--port", "0"], "'0' is out of range"),
    ("out-of-range", ["--port", "65536"], "'65536' is out of range"),
    ("out-of-range", ["--server", "192.0.2.1"], "not a loopback address"),
    ("out-of-range", ["--server", "::2"], "'::2' is not a loopback address"),
    # conflicting
    ("conflicting", ["--duration", "1", "--requests", "10"], "exclude each other"),
    ("conflicting", ["--trace", "/etc/hostname", "--shape", "var"], "--trace and --shape exclude each other"),
    ("conflicting", ["--shape", "var", "--requests", "5"], "cannot be used with --requests"),
    ("conflicting", ["--sequential-clients", "2", "--connections", "2"], "replaces --connections"),
    ("conflicting", ["--requests-per-conn", "5"], "needs --sequential-clients"),
    ("conflicting", ["--protocol", "http", "--preload"], "memcache options"),
    ("conflicting", ["--protocol", "http", "--multiget", "2"], "memcache options"),
    ("conflicting", ["--path", "/"], "http options"),
    ("conflicting", ["--protocol", "http", "--ttl", "10"], "memcache options"),
    ("conflicting", ["--protocol", "http", "--stream", "0.5"], "memcache options"),
    # empty
    ("empty", ["--rate", ""], "'' is not a number"),
    ("empty", ["--duration", ""], "'' is not a number"),
    ("empty", ["--timeout", ""], "'' is not a number"),
    ("empty", ["--threads", ""], "'' is not a non-negative integer"),
    ("empty", ["--port", ""], "'' is not a non-negative integer"),
    ("empty", ["--protocol", ""], "'' is not memcache or http"),
    ("empty", ["--server", ""], "cannot resolve ''"),
    ("empty", ["--arrival", ""], "unknown arrival process ''"),
    ("empty", ["--trace", "/dev/null"], "'/dev/null' has no 'seconds,rate' lines"),
    ("empty", ["--cpus", ""], "'' has an empty item"),
    ("empty", ["--key-size", ""], "bad key size ''"),
    ("empty", ["--get-ratio", ""], "'' is not a number"),
    ("empty", ["--stream", ""], "'' is not a number"),
    ("empty", ["--ttl", ""], "'' is not a non-negative integer"),
    ("empty", ["--ttl", "mix::10"], "fraction '' is not a number"),
    ("empty", ["--path", ""], "HTTP path ''"),
    ("empty", ["--protocol", "http", "--paths-file", "/dev/null"], "'/dev/null' lists no path"),
    ("empty", ["--json"], "'--json' needs a value"),
    ("empty", ["--timestamps", ""], "'' is not kernel, kernel-tx or loop"),
    ("empty", ["-r"], "'-r' needs a value"),
]


@pytest.fixture(scope="module")
def listener() -> socket.socket:
    """A loopback port that accepts: a bad command line must never reach it.
    (A row that were accepted would run for the default 10 s measurement
    plus warm-up, past the 10 s timeout: that fails too.)"""
    s = socket.socket()
    s.bind((LOOPBACK, 0))
    s.listen(16)
    s.setblocking(False)
    yield s
    s.close()


@pytest.mark.parametrize("kind, args, needle", LOADGEN_ROWS,
                         ids=[f"{k}:{' '.join(a)}" for k, a, _ in LOADGEN_ROWS])
def test_loadgen_flag(listener: socket.socket, kind: str, args: list[str], needle: str) -> None:
    port = str(listener.getsockname()[1])
    proc = subprocess.run([str(loadgen_binary()), "-p", port, *args],
                          capture_output=True, text=True, timeout=10)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("loadgen: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert needle in proc.stderr, proc.stderr
    with pytest.raises(BlockingIOError):
        listener.accept()[0].close()

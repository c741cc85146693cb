# SPDX-License-Identifier: BSD-3-Clause
"""What the memcached fork's build costs in layout and linking, read from
the built stock and fork binaries and the fork's build tree.

A response object's write buffer holds the binary protocol's response
header, stored with 16-, 32- and 64-bit writes (proto_bin.c): a field
the fork adds before it moves the buffer off stock's alignment, undefined
behaviour and a SIGBUS on strict-alignment CPUs. The stage recorders'
inline sqrt() must not come from a flag on the whole server's build."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import binary_or_skip
from stagevar_bench.servers import build_dir

FIELD = re.compile(r"/\*\s*(\d+)\s*\|\s*\d+\s*\*/\s*(?:struct\s+)?[\w ]+?[\s*](\w+)(?:\[\d+\])?;")
TOTAL = re.compile(r"/\* total size \(bytes\):\s*(\d+) \*/\s*\}\s*$")


def ptype(binary: Path, struct: str) -> str:
    """gdb's `ptype /o` of a struct in a binary's debug information."""
    if shutil.which("gdb") is None:
        pytest.skip("no gdb")
    result = subprocess.run(["gdb", "-batch", "-nx", "-ex", f"ptype /o struct {struct}", str(binary)],
                            capture_output=True, text=True, timeout=120)
    if "No struct type named" in result.stdout + result.stderr:
        pytest.skip(f"{binary} has no debug information for struct {struct}")
    return result.stdout


def top_level_offsets(layout: str) -> dict[str, int]:
    """Offset of each top-level member (nested structs' members left
    out: gdb indents them further)."""
    offsets = {}
    depth = 0
    for line in layout.splitlines()[1:]:
        code = line.split("*/", 1)[-1]
        if depth == 0 and (m := FIELD.match(line)):
            offsets[m[2]] = int(m[1])
        depth += code.count("{") - code.count("}")
    assert offsets, f"no members read from:\n{layout}"
    return offsets


def total_size(layout: str) -> int:
    m = TOTAL.search(layout)
    assert m, f"no total size in:\n{layout}"
    return int(m[1])


def test_the_layout_reader_reads_gdb_s_form() -> None:
    layout = """type = struct _mc_resp {
/*      0      |       8 */    mc_resp_bundle *bundle;
/*      8      |       4 */    int wbytes;
/*     12      |      28 */    struct sockaddr_in6 {
/*     12      |       2 */        sa_family_t sin6_family;

                                   /* total size (bytes):   28 */
                               } request_addr;
/*     40      |    1024 */    char wbuf[1024];
/*   1064      |       1 */    _Bool stagetrace;
/* XXX  7-byte padding   */

                               /* total size (bytes): 1072 */
                             }
"""
    assert top_level_offsets(layout) == {"bundle": 0, "wbytes": 8, "wbuf": 40, "stagetrace": 1064}
    assert total_size(layout) == 1072


def test_the_fork_keeps_stock_s_response_buffer_offset_and_size() -> None:
    stock = ptype(binary_or_skip("stock", "memcached"), "_mc_resp")
    fork = ptype(binary_or_skip("fork", "memcached"), "_mc_resp")
    stock_at, fork_at = top_level_offsets(stock), top_level_offsets(fork)
    assert fork_at["wbuf"] == stock_at["wbuf"], (
        f"wbuf at {fork_at['wbuf']} in the fork, {stock_at['wbuf']} in stock:\n{fork}")
    # the flag the fork adds lives in what was stock's tail padding
    assert total_size(fork) == total_size(stock), fork


def test_the_fork_s_build_flags_carry_no_math_errno_flag() -> None:
    makefile = build_dir() / "src" / "memcached-fork" / "Makefile"
    if not makefile.exists():
        pytest.skip(f"{makefile} is not there (run make)")
    cflags = [line for line in makefile.read_text().splitlines() if line.startswith("CFLAGS =")]
    assert cflags, f"no CFLAGS in {makefile}"
    assert "-fno-math-errno" not in cflags[0], cflags[0]


def test_the_fork_links_no_library_stock_does_not() -> None:
    if shutil.which("readelf") is None:
        pytest.skip("no readelf")

    def needed(binary: Path) -> set[str]:
        out = subprocess.run(["readelf", "-d", str(binary)], capture_output=True,
                             text=True, check=True, timeout=60).stdout
        return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^]]+)\]", out))

    stock = needed(binary_or_skip("stock", "memcached"))
    fork = needed(binary_or_skip("fork", "memcached"))
    assert fork <= stock, f"the fork also needs {sorted(fork - stock)}"

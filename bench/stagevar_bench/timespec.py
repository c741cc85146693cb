# SPDX-License-Identifier: BSD-3-Clause
"""The durations the whole bench suite takes: loadgen's TIME syntax
(100ns, 250us, 500ms, 5s; a plain number is seconds) and minutes (2m)."""
from __future__ import annotations

import re

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, None: 1.0}
TIME = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|ms|s|m)?")


def parse_seconds(text: str) -> float:
    """`text` in seconds; ValueError naming it when it is no TIME (a sign,
    an exponent, inf and nan are none)."""
    m = TIME.fullmatch(text.strip())
    if not m:
        raise ValueError(f"bad time {text!r} (e.g. 5s, 500ms, 2)")
    return float(m.group(1)) * UNITS[m.group(2)]

# SPDX-License-Identifier: BSD-3-Clause
"""loadgen's TIME syntax, the one the whole bench suite takes: 5s, 500ms,
250us, 2m; a plain number is seconds."""
from __future__ import annotations

import re

UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, None: 1.0}
TIME = re.compile(r"([0-9]*\.?[0-9]+)(us|ms|s|m)?")


def parse_seconds(text: str) -> float:
    """`text` in seconds; ValueError naming it when it is no TIME (a sign,
    an exponent, inf and nan are none)."""
    m = TIME.fullmatch(text.strip())
    if not m:
        raise ValueError(f"bad time {text!r} (e.g. 5s, 500ms, 2)")
    return float(m.group(1)) * UNITS[m.group(2)]

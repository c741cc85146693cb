# SPDX-License-Identifier: BSD-3-Clause
"""The one duration parser of the bench suite (timespec.py)."""
from __future__ import annotations

import re

import pytest

from stagevar_bench.timespec import parse_seconds


@pytest.mark.parametrize("text, seconds", [("5s", 5.0), ("500ms", 0.5), ("250us", 250e-6), ("100ns", 100e-9),
                                           ("2m", 120.0), ("2", 2.0), (".5", 0.5), ("1.5s", 1.5)])
def test_each_unit_scales_its_number(text: str, seconds: float) -> None:
    assert parse_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "5x", "-1", "1e3", "inf", "nan", "5 s", "1.2.3"])
def test_anything_else_is_refused_by_name(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"bad time {text!r}")):
        parse_seconds(text)

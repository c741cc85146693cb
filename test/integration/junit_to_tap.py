# SPDX-License-Identifier: BSD-3-Clause
"""Turn pytest's JUnit XML report into TAP on standard output.

pytest-tap's streaming mode disables pytest's assertion messages, so the
integration suite runs pytest normally (its report goes to the test log)
and this converts the result file for automake's TAP driver.
"""
from __future__ import annotations

import sys
import xml.etree.ElementTree as ET


def tap_lines(junit_xml: str) -> list[str]:
    cases = ET.parse(junit_xml).getroot().iter("testcase")
    lines = []
    for n, case in enumerate(cases, start=1):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped")
        if failed:
            lines.append(f"not ok {n} - {name}")
        elif skipped is not None:
            reason = (skipped.get("message") or "skipped").replace("\n", " ")
            lines.append(f"ok {n} - {name} # SKIP {reason}")
        else:
            lines.append(f"ok {n} - {name}")
    return [f"1..{len(lines)}"] + lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: junit_to_tap.py REPORT.xml", file=sys.stderr)
        return 2
    try:
        print("\n".join(tap_lines(argv[1])))
    except (OSError, ET.ParseError) as e:
        print(f"Bail out! cannot read pytest report {argv[1]}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

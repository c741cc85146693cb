# SPDX-License-Identifier: BSD-3-Clause
"""make soak's verdicts, its command line, and a short real run of both
servers side by side."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from stagevar_bench import soak
from stagevar_bench.servers import build_binary


def samples(rss: list[int], step: float = 5) -> list[dict[str, float]]:
    return [{"t": i * step, "rss_kb": r} for i, r in enumerate(rss)]


def test_rss_growth_is_measured_after_warmup_only() -> None:
    # Growth during warm-up (t < 10) does not count; after it, the peak
    # against the first sample of the window does.
    assert soak.rss_growth(samples([100, 500, 1000, 1010, 1005]), 10) == pytest.approx(0.01)
    assert soak.rss_growth(samples([100, 1000, 1000, 1000, 1030]), 10) == pytest.approx(0.03)
    assert soak.rss_growth(samples([100, 1000, 1000]), 10) is None


def test_verdicts_fail_each_goal_on_its_own() -> None:
    hits = {"fork": 60.0, "stock": 60.5}
    busy = {"fork": (10, 5), "stock": (12, 4)}
    assert all(ok for ok, _ in soak.verdicts(0.01, hits, [], busy))
    failed = {
        "rss": soak.verdicts(0.02, hits, [], busy),
        "hits": soak.verdicts(0.0, {"fork": 58.9, "stock": 60.0}, [], busy),
        "errors": soak.verdicts(0.0, hits, ["fork: loadgen timeouts 3"], busy),
        "idle": soak.verdicts(0.0, hits, [], {"fork": (0, 5), "stock": (3, 4)}),
    }
    for goal, lines in failed.items():
        bad = [line for ok, line in lines if not ok]
        assert len(bad) == 1 and "FAIL" in bad[0], (goal, lines)
    assert "loadgen timeouts 3" in [l for ok, l in failed["errors"] if not ok][0]


def test_hit_ratio_counts_keys_asked() -> None:
    assert soak.hit_ratio({"hits": 30, "get_keys": 40}) == 75.0
    assert soak.hit_ratio({"hits": 0, "get_keys": 0}) is None


@pytest.mark.parametrize("args, message", [
    (["--duration", "9s"], "'9s' is out of range [10s, 24h]"),
    (["--duration", "2 min"], "'2 min' is not a time"),
    (["--duration", ""], "'' is not a time"),
    (["--rate", "-1"], "'-1' must be at least 1"),
    (["--memory", "lots"], "'lots' is not an integer"),
    (["--interval", "0"], "'0' must be at least 0.1"),
    (["--seed", ""], "'' is not an integer"),
    (["--interval", "30", "--duration", "60"], "fewer than 8 samples"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
])
def test_bad_command_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert soak.main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("soak: ") and message in err, err


def test_short_soak_side_by_side(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for variant in ("fork", "stock"):
        if not build_binary(variant, "memcached").is_file():
            pytest.skip(f"no built {variant} memcached")
    out = tmp_path / "soak.json"
    status = soak.main(["--duration", "20s", "--interval", "2", "--memory", "8", "--rate", "2000",
                        "--keys", "50000", "--json", str(out)])
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert status == (0 if doc["pass"] else 1)
    assert ("soak: PASS" in text) == doc["pass"]
    lines = {v["line"].split(":")[0]: v for v in doc["verdicts"]}
    assert lines["zero errors"]["ok"], lines
    assert lines["evictions and expirations on both sides"]["ok"], lines
    for side in ("fork", "stock"):
        got = doc["sides"][side]
        assert len(got["samples"]) >= 8 and all(s["rss_kb"] > 0 for s in got["samples"])
        assert got["loadgen_counts"]["sets"] > 0 and got["exited"] is None
    # Both sides were sent the very same requests.
    fork, stock = (doc["sides"][s]["loadgen_counts"] for s in ("fork", "stock"))
    assert fork["sets"] == stock["sets"] and fork["get_keys"] == stock["get_keys"]

# SPDX-License-Identifier: BSD-3-Clause
"""make bench-lru's per-cell summary: medians over runs with bootstrap
CIs, and each side's ratios of the medians over stock and over stock's
no_lru_maintainer; its sides are the LRU option set."""
from __future__ import annotations

import argparse
import os
import re

import pytest

from stagevar_bench import bench_lru, lru_cost, lru_cpu, lru_options
from stagevar_bench.machine import loadgen_path
from stagevar_bench.servers import build_binary

QUANTITIES = (*bench_lru.QUANTILES, "k2r_var")
NUMBER = r"(-?[\d.]+|nan|inf)"
MEDIAN_CI = re.compile(rf"{NUMBER} \[{NUMBER}, {NUMBER}\]")


def runs(values: list[float]) -> list[dict[str, float]]:
    """One row per run, every quantity set to that run's value."""
    return [{q: v for q in QUANTITIES} for v in values]


def test_a_cell_shows_medians_not_means_with_their_ci() -> None:
    # One run of five in overload: the mean (29.2) would hide the other four.
    thread = [10.0, 11.0, 12.0, 13.0, 100.0]
    lines = bench_lru.cell_lines("det arrivals", {"thread": runs(thread)})
    row = lines[3]
    assert row.split()[0] == "thread"
    cells = MEDIAN_CI.findall(row)
    assert len(cells) == len(QUANTITIES)
    for value, low, high in cells:
        assert float(value) == 12.0
        assert 10.0 <= float(low) <= 12.0 <= float(high) <= 100.0


def test_ratios_are_of_the_medians() -> None:
    lines = bench_lru.cell_lines("exp arrivals", {"stock": runs([10.0, 11.0, 12.0, 13.0, 100.0]),
                                                  "fork-budget": runs([6.0, 6.0, 6.0, 6.0, 6.0])})
    ratio = lines[-1]
    assert ratio.startswith("  fork-budget/stock, ratio of medians [95% CI]:")
    found = re.findall(rf"(mean|p99|variance) {MEDIAN_CI.pattern}", ratio)
    assert [name for name, *_ in found] == ["mean", "p99", "variance"]
    for _, value, low, high in found:
        assert float(value) == 0.5
        assert float(low) <= 0.5 <= float(high)


def test_a_single_side_has_no_ratio_line() -> None:
    lines = bench_lru.cell_lines("det", {"stock": runs([1.0, 2.0])})
    assert not any("ratio" in line for line in lines)


def test_every_side_is_compared_with_stock_and_the_others_with_no_lru_maintainer() -> None:
    names = ["stock", "stock-no_lru_maintainer", "stock-lrumaint-idle", "fork-budget"]
    assert bench_lru.ratio_pairs(names) == [
        ("stock-no_lru_maintainer", "stock"), ("stock-lrumaint-idle", "stock"), ("fork-budget", "stock"),
        ("stock-lrumaint-idle", "stock-no_lru_maintainer"), ("fork-budget", "stock-no_lru_maintainer")]


def test_the_sides_are_the_lru_option_set_with_the_budget_given() -> None:
    args = argparse.Namespace(budget=7, server_cpu=1, loadgen_cpu=0)
    sides = bench_lru.sides(args)
    spare = lru_options.spare_core("1", "0")
    expected = [o.name for o in lru_options.LRU_OPTIONS if spare or not o.helpers_on_spare_core]
    assert [s.name for s in sides] == expected
    [budget] = [s for s in sides if s.name == "fork-budget"]
    assert budget.server_args == ["-o", "lru_amortized_budget_us=7"]


def test_the_counters_line_gives_the_knobs_slices_as_the_fork_counts_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {"": {"evictions": "9", "moves_to_cold": "8", "moves_to_warm": "7",
                    "lru_maintainer_juggles": "6", "lru_bumps_dropped": "0"},
               "lru_amortized": {"lru_amortized_budget_us": "10", "slices": "120", "slices_yielded": "4",
                                 "slices_lock_busy": "0", "items_moved": "300", "time_us": "95"}}
    monkeypatch.setattr(bench_lru, "stats", lambda port, kind="": answers[kind])
    [budget] = [l for l in lru_options.lru_option_levels(10) if l.name == "fork-budget"]
    assert bench_lru.counters_line(budget, 1).endswith("; slices 120 yielded 4 time 95 us")
    [stock] = [l for l in lru_options.lru_option_levels(10) if l.name == "stock"]
    assert "slices" not in bench_lru.counters_line(stock, 1)


@pytest.mark.parametrize("args, value", [
    (["--arrivals", "det,poisson"], "'det,poisson'"),
    (["--loads", "0.3,most"], "'0.3,most'"),
    (["--budget-sweep", "1,0"], "'1,0'"),
    (["--budget", "0"], "'0'"),
])
def test_bad_arguments_exit_2_naming_the_value(args: list[str], value: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_lru.main(args)
    assert exit_.value.code == 2
    assert value in capsys.readouterr().err.splitlines()[-1]


def test_cost_lines_give_each_side_its_median_range_and_ratio_to_stock() -> None:
    lines = lru_cost.cost_lines({"stock": [20_000_000, 21_000_000, 22_000_000],
                                 "fork, budget 20": [20_000_000, 21_500_000, 23_100_000]})
    assert len(lines) == 2
    assert re.search(r"stock\s+21\.00 M \[20\.00 \.\. 22\.00\]\s+x1\.000$", lines[0])
    assert re.search(r"fork, budget 20\s+21\.50 M \[20\.00 \.\. 23\.10\]\s+x1\.024$", lines[1])


def test_cost_sides_are_stock_then_one_fork_side_per_budget() -> None:
    sides = lru_cost.sides([20, 50])
    assert [(s.variant, s.options) for s in sides] == [
        ("stock", ()),
        ("fork", ("-o", "lru_amortized_budget_us=20")),
        ("fork", ("-o", "lru_amortized_budget_us=50")),
    ]


def test_runs_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_lru.main(["--callgrind", "--runs", "0"])
    assert exit_.value.code == 2
    assert "'0'" in capsys.readouterr().err.splitlines()[-1]


def test_cpu_cost_sides_are_stock_and_the_budget_with_short_labels() -> None:
    sides = lru_cpu.sides(20)
    assert [(s.name, s.variant, s.options) for s in sides] == [
        ("stock", "stock", ()),
        ("fork 20 us", "fork", ("-o", "lru_amortized_budget_us=20")),
    ]


def test_cpu_cost_drives_every_side_in_both_conditions_and_prints_their_ratios(
        capsys: pytest.CaptureFixture[str]) -> None:
    for variant in ("stock", "fork"):
        if not build_binary(variant, "memcached").exists():
            pytest.skip(f"memcached {variant} is not built (run make)")
    if not loadgen_path().exists():
        pytest.skip("loadgen is not built (run make)")
    cpus = sorted(os.sched_getaffinity(0))
    assert bench_lru.main(["--cpu-cost", "--budget", "20", "--runs", "6", "--duration", "0.2", "--rates", "5000",
                           "--server-cpu", str(cpus[-1]), "--loadgen-cpu", str(cpus[0])]) == 0
    out = capsys.readouterr().out.splitlines()
    drives = [l for l in out if re.search(r"\] (no evictions|evicting) +5000 req/s .* us/request$", l)]
    assert len(drives) == 6 * len(lru_cpu.MEMORY) * len(lru_cpu.sides(20))
    assert all(float(l.split()[-2]) > 0 for l in drives)
    for condition in lru_cpu.MEMORY:
        [row] = [l for l in out if l.strip().startswith(f"{condition} ") and "(6 runs)" in l]
        # Six pairs are the fewest with an exact 95% signed-rank CI.
        ratio, low, high = re.search(rf"fork 20 us [\d.]+ x[\d.]+ \[.*?\], paired x{NUMBER} "
                                     rf"\[{NUMBER}, {NUMBER}\]", row).groups()
        assert 0 < float(low) <= float(ratio) <= float(high)

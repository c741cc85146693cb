# SPDX-License-Identifier: BSD-3-Clause
"""The LRU option set (lru_options.py) as levels, and the parsing of the
thread settings a level carries: what each option asks of the server,
and bad values refused naming the value. No server runs here:
test/integration/test_thread_tuning.py checks the settings take effect."""
from __future__ import annotations

import pytest

from stagevar_bench import lru_options, thread_tuning
from stagevar_bench.experiment import Design, ExperimentError, Level
from stagevar_bench.lru_options import LRU_OPTIONS, lru_option_levels


def by_name(levels: list[Level]) -> dict[str, Level]:
    return {l.name: l for l in levels}


def test_the_set_is_every_option_a_user_has_stock_first() -> None:
    levels = by_name(lru_option_levels(10, spare=[3]))
    assert list(levels) == [o.name for o in LRU_OPTIONS]
    assert list(levels)[0] == "stock"
    assert (levels["stock"].variant, levels["stock"].server_args) == ("stock", [])
    assert levels["stock-no_lru_maintainer"].server_args == ["-o", "no_lru_maintainer"]
    assert levels["stock-lrumaint-idle"].thread_sched == {"mc-lrumaint": "idle"}
    assert levels["stock-lrumaint-nice19"].thread_sched == {"mc-lrumaint": "nice19"}
    assert (levels["fork"].variant, levels["fork"].server_args) == ("fork", [])
    assert levels["fork-budget"].server_args == ["-o", "lru_amortized_budget_us=10"]
    assert (levels["fork-hot0"].variant, levels["fork-hot0"].server_args) == ("fork", ["-o", "hot_lru_pct=0"])
    assert levels["stock-helpers-spare"].helper_cpus == "3"
    stock_options = [l for l in levels.values() if l.variant == "stock" and l.name != "stock"]
    assert all(l.server_args or l.thread_sched or l.helper_cpus for l in stock_options)


def test_the_fork_levels_carry_the_budget_as_the_budget_sweeps_record_it() -> None:
    levels = by_name(lru_option_levels(25))
    assert [levels[n].params["budget_us"] for n in ("fork", "fork-budget", "fork-hot0")] == [0, 25, 0]
    assert levels["fork-budget"].server_args == ["-o", "lru_amortized_budget_us=25"]


def test_without_a_spare_core_the_helpers_option_is_left_out_and_the_note_says_why() -> None:
    assert "stock-helpers-spare" not in by_name(lru_option_levels(10, spare=[]))
    assert lru_options.spare_core(None, "0") == []
    assert "unpinned" in lru_options.spare_core_note(None, "0")
    every = thread_tuning.cpu_text(thread_tuning.usable_cpus())
    assert lru_options.spare_core(every, None) == []
    assert "left out" in lru_options.spare_core_note(every, None)


def test_a_budget_below_one_microsecond_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"not 0$"):
        lru_option_levels(0)


@pytest.mark.parametrize("text,thread,policy", [
    ("mc-lrumaint:idle", "mc-lrumaint", "idle"),
    ("mc-lrumaint:nice19", "mc-lrumaint", "nice19"),
    ("a:b:idle", "a:b", "idle"),
])
def test_thread_sched_parses_thread_and_policy(text: str, thread: str, policy: str) -> None:
    assert thread_tuning.parse_thread_sched(text) == (thread, policy)


@pytest.mark.parametrize("text,named", [
    ("mc-lrumaint:fifo", "'fifo'"),
    ("mc-lrumaint", "'mc-lrumaint'"),
    (":idle", "':idle'"),
])
def test_thread_sched_refuses_bad_values_naming_them(text: str, named: str) -> None:
    with pytest.raises(ValueError, match=named):
        thread_tuning.parse_thread_sched(text)


def test_helper_cpus_inside_the_servers_own_or_unpinned_are_refused() -> None:
    assert "unpinned" in (thread_tuning.helper_cpus_error([1], None) or "")
    assert "overlap" in (thread_tuning.helper_cpus_error([0, 1], [1]) or "")
    assert thread_tuning.helper_cpus_error([9999], [0]) is not None
    cpus = thread_tuning.usable_cpus()
    if len(cpus) > 1:
        assert thread_tuning.helper_cpus_error(cpus[1:], cpus[:1]) is None


def design(level: Level, server: str = "memcached", server_cpus: str | None = "0") -> Design:
    return Design(name="t", server=server, levels=[level], loads=[1000.0], server_cpus=server_cpus)


def test_experiment_names_the_level_and_the_value_of_a_bad_thread_setting() -> None:
    from stagevar_bench.experiment import level_tuning_error
    bad = Level("x", "stock", thread_sched={"mc-lrumaint": "fifo"})
    assert "'fifo'" in (level_tuning_error(design(bad), bad) or "")
    helpers = Level("x", "stock", helper_cpus="0")
    assert "overlap" in (level_tuning_error(design(helpers), helpers) or "")
    assert "unpinned" in (level_tuning_error(design(helpers, server_cpus=None), helpers) or "")
    httpd = Level("x", "stock", thread_sched={"mc-lrumaint": "idle"})
    assert "memcached only" in (level_tuning_error(design(httpd, "httpd"), httpd) or "")
    assert level_tuning_error(design(Level("x", "stock")), Level("x", "stock")) is None


def test_results_written_before_thread_settings_still_load() -> None:
    old = {"name": "t", "server": "memcached", "loads": [1000.0],
           "levels": [{"name": "stock", "variant": "stock", "server_args": [], "client_args": [],
                       "httpd_conf": "", "server_cpus": None, "params": {}}]}
    [level] = Design.from_dict(old).levels
    assert (level.thread_sched, level.helper_cpus) == ({}, None)


def test_validate_refuses_a_bad_level_setting_as_an_experiment_error() -> None:
    bad = Level("x", "stock", helper_cpus="0")
    with pytest.raises(ExperimentError, match="level 'x'"):
        design(bad).validate()

# SPDX-License-Identifier: BSD-3-Clause
"""The LRU option set: every way a user can run memcached's LRU
maintenance, stock's own options beside the fork's knob, as levels of one
comparison. The one definition that `stagevar compare --lru-options`,
`stagevar bench lru` and the demo all use: the fork's knob earns its place
only against the best of these (docs/design.md, "Stock versus fork").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from stagevar_bench.machine import expand_cpu_list
from stagevar_bench.thread_tuning import cpu_text, spare_cpus

if TYPE_CHECKING:    # experiment is heavy, and the CLI needs only the names at start
    from stagevar_bench.experiment import Level

LRU_KNOB = "lru_amortized_budget_us"    # the fork's -o option
LRU_MAINTAINER_THREAD = "mc-lrumaint"
LRU_BUDGET_DEFAULT_US = 10     # the best fixed budget of the 2026-11-29 pilot


@dataclass(frozen=True)
class LruOption:
    """One option a user has. `how` is what an operator does to get it
    ({spare} filled with where the helpers go); `server_option` is
    memcached's -o value ({budget} filled from the fixed budget);
    `maintainer_policy` a policy of thread_tuning for mc-lrumaint;
    `helpers_on_spare_core` moves every thread but the workers to a CPU
    neither the server nor loadgen has."""

    name: str
    variant: str
    how: str
    server_option: str = ""
    maintainer_policy: str = ""
    helpers_on_spare_core: bool = False


LRU_OPTIONS = (
    LruOption("stock", "stock", "stock memcached as it runs: the baseline"),
    LruOption("stock-no_lru_maintainer", "stock", "stock memcached -o no_lru_maintainer: no maintainer "
              "thread, a flat LRU (compare the hit ratio)", server_option="no_lru_maintainer"),
    # Beside a busy process on the workers' core a SCHED_IDLE maintainer
    # hardly runs: sets failed "out of memory" and the p99 neared a second
    # (bench/results/2026-12-03-lru-one-budget.md, section 2).
    LruOption("stock-lrumaint-idle", "stock", "stock memcached, its maintainer at SCHED_IDLE: chrt --idle "
              f"-p 0 on the {LRU_MAINTAINER_THREAD} thread's id; not where another busy process may share "
              "the workers' core: the thread then starves and sets fail", maintainer_policy="idle"),
    LruOption("stock-lrumaint-nice19", "stock", "stock memcached, its maintainer at nice 19: renice -n 19 "
              f"on the {LRU_MAINTAINER_THREAD} thread's id", maintainer_policy="nice19"),
    LruOption("fork", "fork", "the fork with no option: the control for the fork itself"),
    LruOption("fork-budget", "fork", f"the fork, -o {LRU_KNOB}={LRU_BUDGET_DEFAULT_US}: its knob, a fixed "
              "budget of microseconds per slice",
              server_option=f"{LRU_KNOB}={{budget}}"),
    # On a core of its own it matched no_lru_maintainer's p90 and kept
    # the segmented LRU's hit ratio; beside a busy loop it lost to stock
    # as the flag did (bench/results/2026-12-04-lru-hot0.md, -hot0-busy-loop.md).
    LruOption("fork-hot0", "fork", "the fork, -o hot_lru_pct=0: the segmented LRU without HOT; a set "
              "links its item into COLD, one LRU move fewer, and the maintainer thread stays",
              server_option="hot_lru_pct=0"),
    LruOption("stock-helpers-spare", "stock", "stock memcached, then taskset -pc on each of its threads "
              "but the mc-worker ones, to {spare}", helpers_on_spare_core=True),
)
LRU_OPTION_NAMES = tuple(o.name for o in LRU_OPTIONS)


def budget_error(budget_us: int) -> str | None:
    if budget_us < 1:
        return f"the fixed LRU budget must be a positive number of microseconds, not {budget_us}"
    return None


def option_level(option: LruOption, budget_us: int, spare: list[int]) -> "Level":
    """`option` as a Level; the spare CPUs only matter to the helpers' option."""
    from stagevar_bench.experiment import Level
    args = ["-o", option.server_option.format(budget=budget_us)] if option.server_option else []
    params = {"budget_us": fork_budget_param(option, budget_us)} if option.variant == "fork" else {}
    return Level(name=option.name, variant=option.variant, server_args=args, params=params,
                 thread_sched={LRU_MAINTAINER_THREAD: option.maintainer_policy} if option.maintainer_policy else {},
                 helper_cpus=cpu_text(spare[:1]) if option.helpers_on_spare_core else None)


def fork_budget_param(option: LruOption, budget_us: int) -> float:
    """A fork level's budget as reproduce's budget sweeps record it: 0 the
    maintainer thread, else the budget."""
    return float(budget_us) if "{budget}" in option.server_option else 0.0


def lru_option_levels(budget_us: int = LRU_BUDGET_DEFAULT_US, spare: list[int] | None = None) -> list["Level"]:
    """Every option of LRU_OPTIONS as a Level, stock first (the baseline);
    the helpers' option only where `spare` names a CPU outside the
    server's and loadgen's (its helpers go to the first)."""
    error = budget_error(budget_us)
    if error:
        raise ValueError(error)
    return [option_level(o, budget_us, spare or []) for o in LRU_OPTIONS
            if spare or not o.helpers_on_spare_core]


def spare_core(server_cpus: str | None, client_cpus: str | None) -> list[int]:
    """The usable CPUs outside a pinned server's and loadgen's; none for
    an unpinned server, whose own CPUs are all of them."""
    if server_cpus is None:
        return []
    taken = expand_cpu_list(server_cpus) + (expand_cpu_list(client_cpus) if client_cpus else [])
    return spare_cpus(taken)


def spare_core_note(server_cpus: str | None, client_cpus: str | None) -> str:
    """One line on whether the helpers' option is in the set, and why."""
    spare = spare_core(server_cpus, client_cpus)
    if spare:
        return f"stock-helpers-spare: every thread but mc-worker on CPU {spare[0]}"
    if server_cpus is None:
        return "stock-helpers-spare left out: the server is unpinned, so no CPU is outside its own"
    return (f"stock-helpers-spare left out: no CPU outside the server's ({server_cpus}) "
            f"and loadgen's ({client_cpus or 'unpinned'})")

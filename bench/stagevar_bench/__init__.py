# SPDX-License-Identifier: BSD-3-Clause
"""stagevar's Python side: server lifecycle (servers.py) and the experiment
runner, statistics, knob advisor and report (`python -m stagevar_bench`)."""

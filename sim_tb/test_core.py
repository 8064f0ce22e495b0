# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry for the cocotb testbenches of the exported core: synopsis kind {LDA,
RDA, LDS} × data width {8, 64}, each exported and built in its own folder
(``build/sim/<param-id>/``), plus the hazard test at 512 bits, where a minimum-size
frame is a single beat, so consecutive frames update the same counter on consecutive
clocks (the read-modify-write forwarding path through the whole core). A failing cocotb
test fails the pytest test with the names and messages of the failures
(:class:`sim_tb.runner.SimFailure`).

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level, the exported
Verilog under cocotb (:mod:`sim_tb.cocotb_core` holds the tests, :mod:`sim_tb.runner`
builds and runs them)."""

import importlib.util

import pytest

from sim_tb.runner import DEFAULT_PARAMS, KINDS, CoreParams, run_core_tests
from sim_tb.verilator_build import verilator_env

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(importlib.util.find_spec("hw.lda_pipeline") is None,
                       reason="hw/lda_pipeline.py (the core's top) does not exist yet"),
]

SINGLE_BEAT_PARAMS = [CoreParams(kind=k, data_width=512) for k in KINDS]


@pytest.mark.parametrize("params", DEFAULT_PARAMS, ids=lambda p: p.param_id)
def test_core(params):
    results = run_core_tests(params, "sim_tb.cocotb_core")
    assert len(results.tests) >= 10, sorted(results.tests)


@pytest.mark.parametrize("params", SINGLE_BEAT_PARAMS, ids=lambda p: p.param_id)
def test_core_single_beat_hazard(params):
    results = run_core_tests(params, "sim_tb.cocotb_core",
                             testcase=["same_counter_hazard", "passthrough/pauses=0",
                                       "passthrough/pauses=4"])
    assert {"same_counter_hazard", "passthrough/pauses=0",
            "passthrough/pauses=4"} <= set(results.tests), sorted(results.tests)


@pytest.mark.parametrize("simulator", ["icarus", "verilator"])
def test_swap_boundary_same_in_both_simulators(simulator):
    """A frame offered just before a host swap lands in the same interval under Icarus
    and Verilator, at the clock the design implies (``sim_tb.cocotb_core.swap_boundary``),
    and a reset mid-interval leaves no stale counts (``reset_mid_interval``)."""
    if simulator == "verilator" and verilator_env() is None:
        pytest.skip("no verilator installed")
    tests = ["swap_boundary", "reset_mid_interval"]
    results = run_core_tests(CoreParams(kind="lda", data_width=64), "sim_tb.cocotb_core",
                             testcase=tests, simulator=simulator)
    assert set(tests) <= set(results.tests), sorted(results.tests)

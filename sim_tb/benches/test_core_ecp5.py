# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry for the exported core built for ECP5 (``--memory ecp5``): the counter
bank's copies are Lattice DP16KD block RAMs with their output register and its
read-modify-write adders CCU2C carry chains (``hw.arith.carry.MuxAdd``), simulated with the
DP16KD model ``sim_tb/models/dp16kd.v`` and Yosys's CCU2C model (:mod:`sim_tb.lib.ecp5_cells`).

The same cocotb tests as ``sim_tb/benches/test_core.py`` (``sim_tb.benches.test_core``): on the
default LDA core at 64 bits (with ``LDA_SLOW=1``), the counters word for word against the
golden model after a swap, read over the UARTBone bridge, under no pauses and random pauses
(with ``LDA_SIM_LONG=1`` also on an RDA core: two lanes, an XOR field); and LDA's same-counter
hazard at 512 bits (with ``LDA_SLOW=1``), where a minimum-size frame is one beat and the
counter bank updates the same word every clock (the read-modify-write forwarding around
the RAM's two-edge read). The default suite runs the whole core bench, that hazard
included, on RDA's 512-bit core with this memory (``sim_tb/benches/test_core.py``,
:data:`sim_tb.lib.runner.DEFAULT_PARAMS`). The RAM-level checks of the model and of every DP16KD width mode are in
``sim_tb/benches/test_ecp5_memory.py``.
"""

import importlib.util
import os
import shutil

import pytest

from sim_tb.lib.runner import CoreParams, ecp5_models_missing, long_run, run_core_tests


pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(importlib.util.find_spec("hw.lda_pipeline") is None,
                       reason="hw/lda_pipeline.py (the core's top) does not exist yet"),
    pytest.mark.skipif(shutil.which("iverilog") is None, reason="iverilog is not installed"),
]
MODELS_MISSING = ecp5_models_missing()
if MODELS_MISSING:
    pytestmark.append(pytest.mark.skip(reason="ECP5 simulation models unavailable: "
                                       + MODELS_MISSING))

SCOREBOARD_TESTS = ["counters_match_golden/pauses=none", "counters_match_golden/pauses=random"]
ECP5_PARAMS = [CoreParams(kind="lda", data_width=64, memory="ecp5")]
if long_run():
    ECP5_PARAMS.append(CoreParams(kind="rda", data_width=64, memory="ecp5"))


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LDA_SLOW"), reason="minutes; LDA_SLOW=1")
@pytest.mark.parametrize("params", ECP5_PARAMS, ids=lambda p: p.param_id)
def test_core_ecp5_counters(params):
    """The scoreboard on the ECP5 memory, with ``LDA_SLOW=1``: the default suite has the
    same counters, read out of DP16KD blocks word for word against the golden model, in
    the gate-level LDA netlist's exported intervals
    (``sim_tb/benches/test_gate_level.py::test_gate_level_lda``)."""
    testcases = SCOREBOARD_TESTS if params.kind == "lda" else SCOREBOARD_TESTS[:1]
    results = run_core_tests(params, "sim_tb.benches.test_core", testcase=testcases)
    assert set(testcases) <= set(results.tests), sorted(results.tests)


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("LDA_SLOW"), reason="minutes; LDA_SLOW=1")
def test_core_ecp5_single_beat_hazard():
    params = CoreParams(kind="lda", data_width=512, memory="ecp5")
    results = run_core_tests(params, "sim_tb.benches.test_core", testcase="same_counter_hazard")
    assert "same_counter_hazard" in results.tests, sorted(results.tests)


def test_ecp5_export_instantiates_dp16kd():
    """The core these tests simulate really holds DP16KD blocks with the output register
    (a generic export would pass the scoreboard without testing the ECP5 path): the
    default suite's ECP5 set (``test_core``'s, :data:`sim_tb.lib.runner.DEFAULT_PARAMS`),
    whose export that bench shares."""
    from sim_tb.lib.runner import DEFAULT_PARAMS, export_core

    core = export_core(next(p for p in DEFAULT_PARAMS if p.memory == "ecp5"))
    text = core.verilog.read_text()
    assert text.count("DP16KD #(") >= 2, "no DP16KD instances in the ecp5 export"
    assert '.REGMODE_B("OUTREG")' in text
    assert "CCU2C #(" in text, "no CCU2C carry cells in the ecp5 export"

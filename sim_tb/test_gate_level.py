# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry of the gate-level simulation (:mod:`sim_tb.gate_level`): the core's
``synth_ecp5`` netlist, as a board build makes it, under the same cocotb benches as the
exported RTL, its counters and check values word for word against the golden model.

* default suite: an LDA core at 8 bits (2 banks x 64 rows), the scoreboard test
  (``counters_match_golden``: frozen copy, FROZEN_CHECK, packet and status counters) and
  the swaps under back-to-back traffic (``interval_swaps``: every interval a contiguous
  run equal to the golden synopsis of its run, its check value, the overrun);
* ``LDA_SLOW=1`` (marker ``slow``): the RDA and LDS cores on the same bench, the OPA core
  on its bench (bus and host export), the RLI pair on its two-core bench.

Marker ``gate_level``: ``pytest -m gate_level`` runs only these (wall time in
``docs/SIMULATION.md``, "Gate-level simulation").
"""

import os
import shutil

import pytest

from sim_tb.ecp5_cells import YosysModelMissing
from sim_tb.gate_level import (gate_model_sources, netlist_cells, run_gate_pair_bench,
                               run_gate_tests, yosys_executable)
from sim_tb.runner import CoreParams


def _tools_missing() -> str:
    """Why the netlist cannot be built and simulated here ('' when it can)."""
    if shutil.which("iverilog") is None:
        return "iverilog is not installed"
    try:
        yosys_executable()
        gate_model_sources()
    except YosysModelMissing as exc:
        return str(exc)
    return ""


TOOLS_MISSING = _tools_missing()
pytestmark = [pytest.mark.cocotb, pytest.mark.gate_level,
              pytest.mark.skipif(bool(TOOLS_MISSING), reason=TOOLS_MISSING)]
only_slow = pytest.mark.skipif(not os.environ.get("LDA_SLOW"), reason="minutes; LDA_SLOW=1")

LDA_PARAMS = CoreParams(kind="lda", data_width=8)
#: The core bench's tests run on a netlist (the scoreboard and the swaps).
CORE_TESTS = ["counters_match_golden/pauses=none", "interval_swaps"]


def test_gate_level_lda():
    results = run_gate_tests(LDA_PARAMS, "sim_tb.cocotb_core", testcase=CORE_TESTS)
    assert set(CORE_TESTS) <= set(results.tests), sorted(results.tests)


def test_gate_level_netlist_is_the_board_build():
    """The netlist is ECP5 cells only (no RTL left): flip-flops, LUTs, carry chains and
    the counter bank's DP16KD block RAMs."""
    from sim_tb.gate_level import gate_netlist

    cells = netlist_cells(gate_netlist(LDA_PARAMS).verilog)
    assert cells.get("DP16KD", 0) >= 2, cells
    assert cells.get("TRELLIS_FF", 0) > 1000 and cells.get("LUT4", 0) > 1000, cells
    assert cells.get("CCU2C", 0) > 0, cells
    text = gate_netlist(LDA_PARAMS).verilog.read_text()
    assert "always" not in text and " reg " not in text, "behavioural code in the netlist"


@pytest.mark.parametrize("params", [CoreParams(kind="rda", data_width=8),
                                    CoreParams(kind="lds", data_width=8)],
                         ids=lambda p: p.param_id)
@pytest.mark.slow
@only_slow
def test_gate_level_core(params):
    results = run_gate_tests(params, "sim_tb.cocotb_core", testcase=CORE_TESTS)
    assert set(CORE_TESTS) <= set(results.tests), sorted(results.tests)


@pytest.mark.slow
@only_slow
def test_gate_level_opa():
    params = CoreParams(kind="opa", data_width=64, banks=4, size=16)
    results = run_gate_tests(params, "sim_tb.cocotb_opa_core",
                             testcase=["manual_intervals", "timer_intervals_exported"])
    assert {"manual_intervals", "timer_intervals_exported"} <= set(results.tests), \
        sorted(results.tests)


@pytest.mark.slow
@only_slow
def test_gate_level_rli_pair():
    params = CoreParams(kind="rli", data_width=64, size=16)
    results = run_gate_pair_bench(params, "sim_tb.cocotb_rli_pair", "rli_pair")
    assert "references_through_a_queue" in results.tests, sorted(results.tests)

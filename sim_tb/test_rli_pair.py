# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry for the RLI core's two-core bench (:mod:`sim_tb.cocotb_rli_pair`): the
exported RLI core (:data:`sim_tb.runner.RLI_PARAMS`) twice in the two-device top
(:func:`sim_tb.two_device.write_wrapper`), a sender inserting reference frames and a
receiver whose counters equal the golden model word for word.

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level for the RLI kind,
whose core (``hw/rli/rli_path.py``) needs frames from a sender core."""

import shutil

import pytest

from sim_tb.runner import RLI_PARAMS
from sim_tb.verilator_build import verilator_env
from sim_tb.two_device import run_pair_bench

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(shutil.which("iverilog") is None and verilator_env() is None,
                       reason="no HDL simulator (Icarus Verilog or Verilator)"),
]


@pytest.mark.parametrize("params", RLI_PARAMS, ids=lambda p: p.param_id)
def test_rli_sender_to_receiver(params):
    results = run_pair_bench(params, "sim_tb.cocotb_rli_pair", "rli_pair")
    assert "references_through_a_queue" in results.tests, sorted(results.tests)

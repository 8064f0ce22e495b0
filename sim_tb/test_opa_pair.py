# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry for the OPA core's two-core bench (:mod:`sim_tb.cocotb_opa_pair`): the
exported OPA core (:data:`sim_tb.runner.OPA_PARAMS`) twice in the two-device top
(:func:`sim_tb.two_device.write_wrapper`), one set to the sender's records and one to
the receiver's, through a lossy, delaying channel: the words, the record frames and the
delays recovered from them equal the golden model and the truth.

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level for the OPA kind,
whose record frames need both points."""

import shutil

import pytest

from sim_tb.runner import OPA_PARAMS
from sim_tb.verilator_build import verilator_env
from sim_tb.two_device import run_pair_bench

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(shutil.which("iverilog") is None and verilator_env() is None,
                       reason="no HDL simulator (Icarus Verilog or Verilator)"),
]


@pytest.mark.parametrize("params", OPA_PARAMS, ids=lambda p: p.param_id)
def test_opa_sender_to_receiver(params):
    results = run_pair_bench(params, "sim_tb.cocotb_opa_pair", "opa_pair")
    assert "records_through_a_lossy_queue" in results.tests, sorted(results.tests)

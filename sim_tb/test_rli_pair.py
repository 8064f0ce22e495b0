# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry for the RLI core's two-core bench (:mod:`sim_tb.cocotb_rli_pair`): the
exported RLI core (:data:`sim_tb.runner.RLI_PARAMS`) twice in the two-device top
(:func:`sim_tb.two_device.write_wrapper`), a sender inserting reference frames and a
receiver whose counters equal the golden model word for word.

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level for the RLI kind,
whose core (``hw/rli_path.py``) needs frames from a sender core."""

import importlib.util
import shutil

import pytest

from sim_tb.runner import RLI_PARAMS, export_core, run_cocotb, verilator_env
from sim_tb.two_device import TOPLEVEL, write_wrapper

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(importlib.util.find_spec("hw.lda_pipeline") is None,
                       reason="hw/lda_pipeline.py (the core's top) does not exist yet"),
    pytest.mark.skipif(shutil.which("iverilog") is None and verilator_env() is None,
                       reason="no HDL simulator (Icarus Verilog or Verilator)"),
]


@pytest.mark.parametrize("params", RLI_PARAMS, ids=lambda p: p.param_id)
def test_rli_sender_to_receiver(params):
    core = export_core(params)
    pair = write_wrapper(core.verilog, core.toplevel, core.build_dir / f"{TOPLEVEL}.v")
    results = run_cocotb(sources=[core.verilog, pair], toplevel=TOPLEVEL,
                         build_dir=core.build_dir, test_module="sim_tb.cocotb_rli_pair",
                         extra_env={"LDA_SIM_PARAMS": params.to_json()},
                         results_name="rli_pair")
    assert "references_through_a_queue" in results.tests, sorted(results.tests)

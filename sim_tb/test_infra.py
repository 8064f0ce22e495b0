# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry for the testbench infrastructure on the stand-in core (no gateware
needed): the runner, AXI-Stream source/sink/monitor, pause matrix and byte port.

Where it sits (``docs/DESIGN.md``, "Testing"): the second test level's own tests, so a
failure of a core test points at the core, not at :mod:`sim_tb.runner` or :mod:`sim_tb.tb`.
"""

import pytest

from sim_tb.runner import BUILD_ROOT, REPO, SimFailure, run_cocotb

STANDIN = REPO / "sim_tb" / "data" / "standin_core.v"

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("data_width", [8, 64])
def test_standin_infrastructure(data_width):
    results = run_cocotb(sources=[STANDIN], toplevel="standin_core",
                         build_dir=BUILD_ROOT / f"standin-w{data_width}",
                         test_module="sim_tb.cocotb_standin",
                         parameters={"DATA_WIDTH": data_width}, seed=1)
    assert len(results.tests) >= 6


def test_runner_reports_failures():
    """A failing cocotb test must fail the pytest test (here: a test name filter that
    selects a test which raises)."""
    with pytest.raises(SimFailure):
        run_cocotb(sources=[STANDIN], toplevel="standin_core",
                   build_dir=BUILD_ROOT / "standin-fail", test_module="sim_tb.cocotb_failing",
                   parameters={"DATA_WIDTH": 8}, seed=1)

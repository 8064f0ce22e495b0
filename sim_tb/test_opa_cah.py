# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry of the OPA sender words under a real HDL simulator: the exported
Verilog of :class:`hw.opa.cah.OpaCah` against the golden model
(``sim_tb/cocotb_opa_cah.py``), and the double-buffered block over two intervals
(``sim_tb/cocotb_opa_double.py``); one configuration (the Amaranth-simulator test in
``tests/hw/opa/test_hw_opa_cah.py`` covers k = 2 too), to keep the suite short."""

import pytest
from amaranth.back import verilog

from host_sw.contracts.config import OpaConfig
from hw.opa.cah import OpaCah
from sim_tb.runner import BUILD_ROOT, run_cocotb

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("groups, rows", [(8, 4)])
def test_opa_cah_words_equal_golden(groups, rows):
    build = BUILD_ROOT / f"opa-cah-g{groups}-k{rows}"
    build.mkdir(parents=True, exist_ok=True)
    source = build / "opa_cah.v"
    source.write_text(verilog.convert(OpaCah(config=OpaConfig(groups=groups, rows=rows)),
                                      name="opa_cah"))
    results = run_cocotb(sources=[source], toplevel="opa_cah", build_dir=build,
                         test_module="sim_tb.cocotb_opa_cah", seed=1,
                         extra_env={"OPA_GROUPS": str(groups), "OPA_ROWS": str(rows)})
    assert len(results.tests) == 1 and not results.failed


def test_opa_double_buffered_intervals_equal_golden():
    groups, rows = 8, 3
    build = BUILD_ROOT / f"opa-double-g{groups}-k{rows}"
    build.mkdir(parents=True, exist_ok=True)
    source = build / "opa_double.v"
    core = OpaCah(config=OpaConfig(groups=groups, rows=rows), double_buffered=True)
    source.write_text(verilog.convert(core, name="opa_double"))
    results = run_cocotb(sources=[source], toplevel="opa_double", build_dir=build,
                         test_module="sim_tb.cocotb_opa_double", seed=1,
                         extra_env={"OPA_GROUPS": str(groups), "OPA_ROWS": str(rows)})
    assert len(results.tests) == 1 and not results.failed

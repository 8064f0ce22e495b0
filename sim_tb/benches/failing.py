# SPDX-License-Identifier: BSD-2-Clause
"""A cocotb module whose test always fails: proves the runner turns a failing cocotb
test into a failing pytest test (``sim_tb/benches/test_standin.py``)."""

import cocotb
from cocotb.triggers import Timer


@cocotb.test()
async def always_fails(dut):
    await Timer(10, "ns")
    assert 1 == 2, "deliberate failure"

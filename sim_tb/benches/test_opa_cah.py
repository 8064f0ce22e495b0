# SPDX-License-Identifier: BSD-2-Clause
"""cocotb test of the exported OPA sender words (:class:`hw.opa.cah.OpaCah`): a packet
stream with back-to-back packets of one group (A,A,A and A,B,A) and idle gaps, then
every group's word read back and compared with the golden model
(:func:`host_sw.model.golden_opa.opa_synopsis`) word for word. Run by ``sim_tb/test_opa_cah.py``;
the configuration comes from the environment (``OPA_GROUPS``, ``OPA_ROWS``).
"""

import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from host_sw.contracts.config import OpaConfig
from host_sw.model.golden_opa import opa_synopsis
from hw.opa.cah import OpaCah

#: Edges from the last packet to its B write, with margin (the block's ``latency``).
_DRAIN = 32


def stream(config: OpaConfig, seed: int = 5, n: int = 120):
    """The packets (hashes) and idle gaps of the test: a fixed prefix of one-group runs,
    then random groups."""
    rng = np.random.default_rng(seed)
    gb = config.groups.bit_length() - 1
    groups = np.concatenate([[0, 0, 0, 1, 0, 1, 0, 2, 2, 1, 0, 1],
                             rng.integers(0, config.groups, n)]) % config.groups
    low = rng.integers(0, 2 ** (64 - gb), len(groups), dtype=np.uint64)
    packets = (groups.astype(np.uint64) << np.uint64(64 - gb)) | low if gb else low
    return packets, rng.random(len(packets)) < 0.15


async def feed(dut, packets, gaps):
    """Drive ``packets`` (hashes) into ``valid``/``packet_hash``, one per clock, with an
    idle clock before each packet whose ``gaps`` entry is true."""
    for p, gap in zip(packets, gaps):
        if gap:
            dut.valid.value = 0
            await RisingEdge(dut.clk)
        dut.valid.value = 1
        dut.packet_hash.value = int(p)
        await RisingEdge(dut.clk)
    dut.valid.value = 0


@cocotb.test()
async def words_equal_golden(dut):
    config = OpaConfig(groups=int(os.environ.get("OPA_GROUPS", "8")),
                       rows=int(os.environ.get("OPA_ROWS", "4")))
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    dut.valid.value = 0
    dut.read_en.value = 0
    await RisingEdge(dut.clk)
    await RisingEdge(dut.clk)
    dut.rst.value = 0
    packets, gaps = stream(config)
    await feed(dut, packets, gaps)
    for _ in range(_DRAIN):
        await RisingEdge(dut.clk)
    words = []
    for g in range(config.groups):
        dut.read_addr.value = g
        dut.read_en.value = 1
        await RisingEdge(dut.clk)
        dut.read_en.value = 0
        for _ in range(OpaCah.READ_LATENCY):
            await RisingEdge(dut.clk)
        assert dut.read_valid.value == 1
        words.append(int(dut.read_data.value))
    expected = opa_synopsis(config, packets).words()
    for g, (got, want) in enumerate(zip(words, expected)):
        assert got == want, f"group {g}: {got:#x} != golden {want:#x}"

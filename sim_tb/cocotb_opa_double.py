# SPDX-License-Identifier: BSD-2-Clause
"""cocotb test of the exported double-buffered OPA sender words
(:class:`hw.opa_cah.OpaCah` with ``double_buffered=True``): two intervals, the second's
packets right behind the swap, each frozen copy read back and compared with the golden
model (:func:`host_sw.model.opa.opa_synopsis`) word for word, with its check value and
packet total. Run by ``sim_tb/test_opa_cah.py``; configuration from ``OPA_GROUPS``,
``OPA_ROWS``.
"""

import os

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge

from host_sw.contracts.check_value import check_value
from host_sw.contracts.config import OpaConfig
from host_sw.model.opa import opa_synopsis
from hw.opa_cah import OpaCah
from sim_tb.cocotb_opa_cah import feed, stream

#: Edges from the last packet until the copy is FROZEN, with margin (``latency`` plus
#: ``check_cycles`` of the block, for up to 32 groups).
_FREEZE = 96


async def _ticks(dut, n):
    for _ in range(n):
        await RisingEdge(dut.clk)


async def _pulse(dut, name):
    getattr(dut, name).value = 1
    await RisingEdge(dut.clk)
    getattr(dut, name).value = 0


async def _read_frozen(dut, config):
    words = []
    for g in range(config.groups):
        dut.read_addr.value = g
        dut.read_en.value = 1
        await RisingEdge(dut.clk)
        dut.read_en.value = 0
        await _ticks(dut, OpaCah.READ_LATENCY)
        assert dut.read_valid.value == 1 and dut.read_error.value == 0
        words.append(int(dut.read_data.value))
    return words, int(dut.frozen_check.value), int(dut.frozen_updates.value)


@cocotb.test()
async def intervals_equal_golden(dut):
    config = OpaConfig(groups=int(os.environ.get("OPA_GROUPS", "8")),
                       rows=int(os.environ.get("OPA_ROWS", "4")))
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    for name in ("valid", "read_en", "swap", "release"):
        getattr(dut, name).value = 0
    await _ticks(dut, 2)
    dut.rst.value = 0
    await _ticks(dut, config.groups + 2)            # the clearing sweep after reset
    assert dut.sweeping.value == 0 and dut.other_clean.value == 1
    intervals = [stream(config, seed=6, n=60), stream(config, seed=7, n=40)]
    await feed(dut, *intervals[0])
    await _pulse(dut, "swap")
    await feed(dut, *intervals[1])                  # right behind the swap
    await _ticks(dut, _FREEZE)
    got = [await _read_frozen(dut, config)]
    await _pulse(dut, "release")
    await _ticks(dut, config.groups + 4)
    assert dut.other_clean.value == 1
    await _pulse(dut, "swap")
    await _ticks(dut, _FREEZE)
    assert dut.frozen_ready.value == 1
    got.append(await _read_frozen(dut, config))
    for k, ((words, check, updates), (packets, _)) in enumerate(zip(got, intervals)):
        want = opa_synopsis(config, packets).words()
        for g, (a, b) in enumerate(zip(words, want)):
            assert a == b, f"interval {k} group {g}: {a:#x} != golden {b:#x}"
        assert check == check_value(config, want), f"interval {k}: check value"
        assert updates == len(packets), f"interval {k}: {updates} updates"

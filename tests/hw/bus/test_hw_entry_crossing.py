# SPDX-License-Identifier: BSD-2-Clause
"""The wide-entry crossing (hw.bus.entry_crossing) on Amaranth's simulator, two unrelated
clocks, each side faster: seeded random entries as wide as the core's, written whenever
there is room (random gaps, the input changed at once after each write) and read with
random gaps, arrive each once, in order, unchanged, also when the reader stalls long
enough for the writer to find the crossing full."""

import random

import pytest
from amaranth.hdl import ClockDomain, Module

from hw.bus.entry_crossing import EntryCrossing
from tests.hw.two_clocks import run_two_clocks


@pytest.mark.parametrize("width,w_ns,r_ns,seed", [
    (372, 5.0, 8.0, 1), (361, 9.0, 4.0, 2), (96, 6.0, 6.0, 3), (7, 4.0, 13.0, 4)])
def test_entries_cross_once_in_order(width, w_ns, r_ns, seed):
    rng = random.Random(seed)
    dut = EntryCrossing(width=width, w_domain="wr", r_domain="rd")
    top = Module()
    top.domains.wr = ClockDomain("wr")
    top.domains.rd = ClockDomain("rd")
    top.submodules.dut = dut
    entries = [rng.getrandbits(width) for _ in range(40)]
    got, full_seen = [], [0]

    async def writer(ctx):
        for entry in entries:
            while True:
                ctx.set(dut.w_data, entry)
                ctx.set(dut.w_en, 0)
                full_seen[0] += not ctx.get(dut.w_rdy)
                if ctx.get(dut.w_rdy) and rng.random() < 0.7:
                    ctx.set(dut.w_en, 1)
                    await ctx.tick("wr")
                    ctx.set(dut.w_en, 0)
                    ctx.set(dut.w_data, rng.getrandbits(width))   # changes at once
                    break
                await ctx.tick("wr")

    async def reader(ctx):
        stall = 0
        for _ in range(100 * len(entries)):         # a bound, so a lost entry fails
            if len(got) == len(entries):
                break
            if ctx.get(dut.r_rdy) and stall == 0:
                got.append(ctx.get(dut.r_data))
                ctx.set(dut.r_en, 1)
                stall = rng.choice([0, 0, 3, 20])      # sometimes let the entries pile up
            else:
                ctx.set(dut.r_en, 0)
                stall = max(0, stall - 1)
            await ctx.tick("rd")
        ctx.set(dut.r_en, 0)

    run_two_clocks(top, w_domain="wr", w_ns=w_ns, r_domain="rd", r_ns=r_ns,
                   r_phase=rng.random(), main=reader, background=[writer])
    assert got == entries
    assert full_seen[0] > 0           # the writer was held back: the depth was reached


def test_entry_crossing_needs_two_domains():
    with pytest.raises(ValueError, match="two domains"):
        EntryCrossing(width=8, w_domain="sync", r_domain="sync")

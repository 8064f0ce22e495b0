# SPDX-License-Identifier: BSD-2-Clause
"""The wide-entry crossing (hw.bus.entry_crossing) on Amaranth's simulator, two unrelated
clocks, each side faster: seeded random entries of several slices' width, written whenever
there is room (random gaps) and read with random gaps, arrive each once, in order,
unchanged, also when the reader stalls long enough for the writer to find the crossing
full. (In simulation the slices' synchronisers always agree; that each read waits for
every slice is a matter of the design, `docs/DESIGN.md`, not of this test.)"""

import random

import pytest
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator

from hw.bus.entry_crossing import SLICE_BITS, EntryCrossing


@pytest.mark.parametrize("width,w_ns,r_ns,seed", [
    (372, 5.0, 8.0, 1), (361, 9.0, 4.0, 2), (SLICE_BITS, 6.0, 6.0, 3), (7, 4.0, 13.0, 4)])
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
        while len(got) < len(entries):
            if ctx.get(dut.r_rdy) and stall == 0:
                got.append(ctx.get(dut.r_data))
                ctx.set(dut.r_en, 1)
                stall = rng.choice([0, 0, 3, 20])      # sometimes let the entries pile up
            else:
                ctx.set(dut.r_en, 0)
                stall = max(0, stall - 1)
            await ctx.tick("rd")
        ctx.set(dut.r_en, 0)

    sim = Simulator(top)
    sim.add_clock(w_ns * 1e-9, domain="wr")
    sim.add_clock(r_ns * 1e-9, domain="rd", phase=rng.random() * r_ns * 1e-9)
    sim.add_testbench(writer, background=True)
    sim.add_testbench(reader)
    sim.run()
    assert got == entries
    assert full_seen[0] > 0           # the writer was held back: the depth was reached

# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.stages.memory_delayed on Amaranth's simulator: the value of every clock comes
out exactly ``cycles`` clocks later, for delays at the minimum, at a power of two and just
past one (the ring's depth), and the register line :func:`delayed` agrees with it."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import Module, Signal, UnusedElaboratable
from amaranth.sim import Simulator

from hw.arith.stages import MEMORY_DELAY_MIN, delayed, memory_delayed


@pytest.mark.parametrize("cycles", [MEMORY_DELAY_MIN, 4, 5, 16, 17, 47])
def test_memory_delay_is_exact(cycles):
    m = Module()
    value = Signal(13)
    out = memory_delayed(m, value, cycles, name="line")
    reference = delayed(m, value, cycles, name="reference")
    rng = random.Random(cycles)
    inputs = [rng.getrandbits(13) for _ in range(4 * cycles + 40)]
    outputs = []

    async def bench(ctx):
        for x in inputs:
            ctx.set(value, x)
            outputs.append((ctx.get(out), ctx.get(reference)))
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    got = [o for o, _ in outputs]
    assert got[cycles:] == inputs[:-cycles]
    assert [r for _, r in outputs][cycles:] == inputs[:-cycles]


@pytest.mark.parametrize("cycles", [0, 2])
def test_memory_delay_rejects_short_delays(cycles):
    with warnings.catch_warnings():  # the module is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="at least 3"):
            memory_delayed(Module(), Signal(8), cycles, name="line")
        gc.collect()

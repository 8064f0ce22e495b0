# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.parity.xor_bits: the XOR of every combination of up to five bits, simulated."""

import itertools

import pytest
from amaranth.hdl import Const, Module, Signal
from amaranth.sim import Simulator

from hw.arith.parity import xor_bits


@pytest.mark.parametrize("n", range(6))
def test_xor_bits_is_the_parity_of_its_inputs(n):
    bits = [Signal(name=f"b{i}") for i in range(n)]
    out = Signal()
    m = Module()
    m.d.comb += out.eq(xor_bits(bits))
    sim = Simulator(m)
    seen = []

    async def bench(ctx):
        for values in itertools.product((0, 1), repeat=n):
            for b, v in zip(bits, values):
                ctx.set(b, v)
            seen.append((values, ctx.get(out)))

    sim.add_testbench(bench)
    sim.run()
    assert seen == [(v, sum(v) % 2) for v in itertools.product((0, 1), repeat=n)]


def test_xor_bits_refuses_wide_values():
    with pytest.raises(ValueError, match="one-bit"):
        xor_bits([Signal(2), Const(1, 1)])

# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.multiply.product_mod: (a · b) mod 2^width of signed operands, PRODUCT_LATENCY
cycles later, one product per clock."""

import numpy as np
from amaranth.hdl import Module, Signal, signed

from hw.arith.multiply import PRODUCT_LATENCY, product_mod
from sim_tb.lib.amaranth_streams import simulate


def test_products_equal_python_modulo():
    m = Module()
    a, b = Signal(signed(60)), Signal(signed(42))
    width = 57
    out = product_mod(m, a, b, width)
    rng = np.random.default_rng(2)
    pairs = [(int(rng.integers(-(1 << 59), 1 << 59)), int(rng.integers(-(1 << 41), 1 << 41)))
             for _ in range(40)] + [(-1, -1), (-(1 << 59), (1 << 41) - 1), (0, 5)]
    got = []

    async def main(ctx):
        for k in range(len(pairs) + PRODUCT_LATENCY):
            if k < len(pairs):
                ctx.set(a, pairs[k][0])
                ctx.set(b, pairs[k][1])
            await ctx.tick()
            if k >= PRODUCT_LATENCY - 1:
                got.append(ctx.get(out))

    simulate(m, main)
    assert got[:len(pairs)] == [(x * y) % (1 << width) for x, y in pairs]

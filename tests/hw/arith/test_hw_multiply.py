# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.multiply.product_mod: (a · b) mod 2^width of signed operands, PRODUCT_LATENCY
cycles later, one product per clock."""

import numpy as np
from amaranth.hdl import Module, Signal, signed
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

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


class _RegisteredProduct(wiring.Component):
    """``product_mod`` of two registered operands, as the RLI receiver feeds it (a
    synthesis harness only)."""

    a: In(signed(48))
    b: In(signed(48))
    out: Out(64)

    def elaborate(self, platform):
        m = Module()
        a, b = Signal.like(self.a), Signal.like(self.b)
        m.d.sync += [a.eq(self.a), b.eq(self.b)]
        m.d.comb += self.out.eq(product_mod(m, a, b, 64))
        return m


def test_each_multiplier_has_operand_registers_of_its_own(tmp_path):
    """After ``synth_ecp5``: every MULT18X18D's operand pins come from flip-flops that feed
    no other multiplier, so the placer can put them beside it (one operand register's
    net to the DSP row was 4.1 ns of the RLI core's datapath critical path)."""
    from tests.hw.ecp5_netlist import synthesized

    module = synthesized(_RegisteredProduct(), tmp_path)
    cells = module["cells"]
    register_of = {bit: name for name, cell in cells.items() if cell["type"] == "TRELLIS_FF"
                   for bit in cell["connections"]["Q"]}
    multipliers = {name: cell for name, cell in cells.items()
                   if cell["type"] == "MULT18X18D"}
    assert len(multipliers) == 10          # the pieces (i, j) with 18·(i + j) < 64
    feeds = {}
    for name, cell in multipliers.items():
        for port, bits in cell["connections"].items():
            if port[0] in "AB" and port[1:].isdigit():
                for bit in bits:
                    if isinstance(bit, int):
                        feeds.setdefault(register_of[bit], set()).add(name)
    assert feeds and all(len(fed) == 1 for fed in feeds.values())

# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.multiply.product_mod: (a · b) mod 2^width of signed operands, PRODUCT_LATENCY
cycles later, one product per clock; its ECP5 build's structure (its behaviour under
Icarus: ``sim_tb/benches/test_ecp5_multiply.py``)."""

import numpy as np
import pytest
from amaranth.hdl import Fragment, Instance, Module, Signal, signed

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


def test_unknown_kind_is_refused():
    m = Module()
    with pytest.raises(ValueError, match="kind must be one of"):
        product_mod(m, Signal(8), Signal(8), 8, kind="ice40")
    Fragment.get(m, None)


@pytest.mark.parametrize("width, products", [(18, 1), (40, 6), (60, 10)])
def test_ecp5_build_is_one_registered_mult18x18d_per_piece_product(width, products):
    """``kind="ecp5"``: every piece product below ``width`` is a MULT18X18D with its A, B
    and output registers on the sync clock and no fabric register of the pieces (the
    behaviour is checked under Icarus in ``sim_tb/benches/test_ecp5_multiply.py``)."""
    m = Module()
    a, b = Signal(signed(width)), Signal(width)
    product_mod(m, a, b, width, kind="ecp5")
    fragment = Fragment.get(m, None)
    instances = [sub for sub, _, _ in fragment.subfragments if isinstance(sub, Instance)]
    assert len(instances) == products
    for inst in instances:
        assert inst.type == "MULT18X18D"
        for reg in ("INPUTA", "INPUTB", "OUTPUT"):
            assert inst.parameters[f"REG_{reg}_CLK"] == "CLK0"
        assert inst.parameters["REG_PIPELINE_CLK"] == "NONE"
    driven = {stmt.lhs.name for stmt in fragment.statements.get("sync", [])}
    assert driven == {f"product_s{g}" for g in range(-(-products // 3))} | {"product"}

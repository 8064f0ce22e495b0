# SPDX-License-Identifier: BSD-2-Clause
"""Small register-pipeline building blocks of the packet path.

Used by the hasher (:mod:`hw.hash_h3`) and the per-kind bucket selection
(:mod:`hw.counters.kind_select`), the steps H3 hasher → bucket selection of docs/DESIGN.md's "Data
flow of a packet": a delay line, a two-stage leading-zero count and a two-stage range
reduction. Each adds its registers to the caller's module and returns the last one.
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.utils import ceil_log2

from host_sw.contracts.config_base import is_power_of_two

__all__ = ["delayed", "leading_zeros_pipelined", "range_reduce"]


def delayed(m: Module, value, cycles: int, *, name: str = "delayed",
            reset_less: bool = False):
    """``value`` delayed by ``cycles`` registers (``cycles == 0`` returns it unchanged).

    ``reset_less`` for data qualified by a separately reset valid bit: the synchronous
    reset then reaches only the valid bits, not a net to every data register routed
    through the fabric (nextpnr puts only clocks on the global network)."""
    for i in range(cycles):
        reg = Signal(value.shape(), name=f"{name}_d{i + 1}", reset_less=reset_less)
        m.d.sync += reg.eq(value)
        value = reg
    return value


def leading_zeros_pipelined(m: Module, word, *, name: str = "lz"):
    """Leading zeros (0..32) of a 32-bit ``word`` in two register stages: per byte, then
    the combination. Returns the register holding the count (valid 2 cycles later).

    The registers have no reset (data, qualified by the caller's valid): with one, Yosys
    folds the reset into the priority logic it maps onto the flip-flops' set/reset input,
    and the reset net's route plus four LUT levels becomes a critical path."""
    assert len(word) == 32
    byte_lz = []
    byte_nonzero = []
    for b in range(4):
        byte = word[8 * b:8 * b + 8]
        lz = Signal(range(9), name=f"{name}_byte{b}", reset_less=True)
        nz = Signal(name=f"{name}_nonzero{b}", reset_less=True)
        value = Const(8, range(9))
        for bit in range(8):                # the highest set bit wins
            value = Mux(byte[bit], 7 - bit, value)
        m.d.sync += [lz.eq(value), nz.eq(byte.any())]
        byte_lz.append(lz)
        byte_nonzero.append(nz)
    count = Signal(range(33), name=name, reset_less=True)
    value = Const(32, range(33))
    for b in range(4):                      # the most significant non-zero byte wins
        value = Mux(byte_nonzero[b], (3 - b) * 8 + byte_lz[b], value)
    m.d.sync += count.eq(value)
    return count


def range_reduce(m: Module, hash32, size: int, *, name: str = "reduced"):
    """``(hash32 * size) >> 32`` (:func:`host_sw.contracts.hash_fields.range_reduce32`) in two
    register stages. Returns the register (valid 2 cycles after ``hash32``).

    A power-of-two ``size`` takes the top bits of the hash. Otherwise the product is split
    into two 16-bit halves of the hash (two small multipliers, registered), whose sum
    forms the second stage.
    """
    width = max(1, ceil_log2(size))
    out = Signal(width, name=name, reset_less=True)
    if size == 1:
        m.d.sync += out.eq(0)
        return out
    if is_power_of_two(size):
        top = delayed(m, hash32[32 - ceil_log2(size):32], 1, name=f"{name}_top",
                      reset_less=True)
        m.d.sync += out.eq(top)
        return out
    size_bits = size.bit_length()
    product_high = Signal(16 + size_bits, name=f"{name}_high", reset_less=True)
    product_low = Signal(16 + size_bits, name=f"{name}_low", reset_less=True)
    m.d.sync += [product_high.eq(hash32[16:32] * size), product_low.eq(hash32[:16] * size)]
    total = (product_high << 16) + product_low
    m.d.sync += out.eq(total[32:32 + width])
    return out

# SPDX-License-Identifier: BSD-2-Clause
"""XOR of a few one-bit values, written as a chain of two-input XORs.

Used by the XOR trees of the H3 hasher (:mod:`hw.hash_h3`) and of the freeze check's CRC
(:mod:`hw.counters.freeze_check`). ``a ^ b ^ c ^ d`` is the same function and the same
LUT4 as ``Cat(a, b, c, d).xor()`` after synthesis, and the same narrow expression in the
exported Verilog, but Amaranth's Python simulator evaluates a reduction XOR by formatting
the value as a binary string and counting its ones (``amaranth.sim._pyrtl``), a fifth of
the CPU time of a whole-core simulation; the chain is plain integer XORs there.
"""

from functools import reduce
from operator import xor

from amaranth.hdl import Const, Value

__all__ = ["xor_bits"]


def xor_bits(bits) -> Value:
    """XOR of the one-bit values ``bits`` (``Const(0, 1)`` when there are none)."""
    bits = [Value.cast(b) for b in bits]
    if any(len(b) != 1 for b in bits):
        raise ValueError("xor_bits takes one-bit values")
    return reduce(xor, bits) if bits else Const(0, 1)

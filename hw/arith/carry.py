# SPDX-License-Identifier: BSD-2-Clause
"""Select-then-add on one carry chain: ``sum = (select ? a : b) + increment``.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): inside the counter bank's
read-modify-write loop (:mod:`hw.counters.counter_bank`, stage S3), where a counter word is
either the word the request just ahead produced (same counter, back-to-back: forwarding)
or the base word read from the RAM, plus the packet's increment. That loop — register →
adder → register in one clock — is the critical path of the measurement core on ECP5:
the 40-bit timestamp-sum carry chain plus the 2:1 forwarding multiplexer behind it
(``docs/HARDWARE.md``).

Why hand-written: Yosys maps ``Mux(s, a, b) + c`` to a LUT level for the multiplexer and
a ``CCU2C`` carry chain for the adder (its ``$alu`` mapping puts a fixed XOR in the
chain's LUTs). Each ECP5 carry cell computes its propagate bit in a 4-input LUT, which
has room for the multiplexer too: ``p = (select ? a : b) ^ c`` on inputs D = select,
B = a, C = b, A = c. The cell's generate bit is a 2-input function of A and B taken from
the same LUT's ``INIT[3:0]`` (C = D = 0); when ``p`` is 0 the selected operand equals
``c``, so generate = A = ``c`` is exact, and at C = D = 0 the LUT gives ``0 ^ A`` = A,
consistent with it. One LUT level and one net leave the loop. No published Amaranth
library builds carry chains with merged logic; ``kind="generic"`` is the same function in
plain Amaranth arithmetic (any FPGA, and Amaranth's simulator).
"""

from amaranth.hdl import Const, Instance, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["MUX_ADD_KINDS", "MuxAdd", "mux_add_init"]

#: Implementations of :class:`MuxAdd`.
MUX_ADD_KINDS = ("generic", "ecp5")


def mux_add_init() -> int:
    """The 16-bit ``INIT`` of a CCU2C half computing ``p = (D ? B : C) ^ A``.

    LUT index = A + 2·B + 4·C + 8·D (the ECP5 ``LUT4`` convention)."""
    init = 0
    for index in range(16):
        a, b, c, d = (index >> 0) & 1, (index >> 1) & 1, (index >> 2) & 1, (index >> 3) & 1
        if (b if d else c) ^ a:
            init |= 1 << index
    return init


class MuxAdd(wiring.Component):
    """``total = (select ? a : b) + increment``, modulo ``2 ** width`` (combinational).

    Parameters
    ----------
    width : int
        Operand and result width.
    kind : "generic" | "ecp5"
        ``"ecp5"``: one chain of ``CCU2C`` carry cells with the multiplexer in their LUTs
        (see the module docstring); ``"generic"``: Amaranth arithmetic.

    Members
    -------
    a, b : In(width)
        The operand when ``select`` is 1 / 0.
    select : In(1)
    increment : In(width)
    total : Out(width)
    """

    def __init__(self, *, width: int, kind: str = "generic"):
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"width must be a positive integer, not {width!r}")
        if kind not in MUX_ADD_KINDS:
            raise ValueError(f"kind must be one of {MUX_ADD_KINDS}, not {kind!r}")
        self.width = width
        self.kind = kind
        super().__init__({
            "a": In(width), "b": In(width), "select": In(1), "increment": In(width),
            "total": Out(width),
        })

    def elaborate(self, platform):
        m = Module()
        if self.kind == "generic":
            m.d.comb += self.total.eq(Mux(self.select, self.a, self.b) + self.increment)
            return m
        init = mux_add_init()
        carry = Const(0, 1)
        for cell, low in enumerate(range(0, self.width, 2)):
            bits = [k for k in (low, low + 1) if k < self.width]
            sums = [Signal(name=f"s{low}"), Signal(name=f"s{low + 1}")]
            cout = Signal(name=f"c{low + 1}")
            ports = {"i_CIN": carry, "o_COUT": cout}
            for half in (0, 1):
                if half < len(bits):
                    k = bits[half]
                    ports |= {f"i_A{half}": self.increment[k], f"i_B{half}": self.a[k],
                              f"i_C{half}": self.b[k], f"i_D{half}": self.select}
                else:   # odd width: an idle upper half
                    ports |= {f"i_A{half}": 0, f"i_B{half}": 0, f"i_C{half}": 0,
                              f"i_D{half}": 0}
                ports[f"o_S{half}"] = sums[half]
            m.submodules[f"ccu2c_{cell}"] = Instance(
                "CCU2C", p_INIT0=Const(init, 16), p_INIT1=Const(init, 16), p_INJECT1_0="NO", p_INJECT1_1="NO",
                **ports)
            for half, k in enumerate(bits):
                m.d.comb += self.total[k].eq(sums[half])
            carry = cout
        return m

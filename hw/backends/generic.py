# SPDX-License-Identifier: BSD-2-Clause
"""The portable counter RAM (``amaranth.lib.memory``), and the ports every backend's
counter RAM has.

One copy of one lane of the counter bank (docs/DESIGN.md, "Data flow of a counter"); used
in simulation and in Verilog exported for any tool. :mod:`hw.backends.ecp5` builds the
same RAM from ECP5 block-RAM primitives.
"""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["counter_ram_signature", "check_counter_ram", "GenericCounterRam"]


def _addr_bits(depth: int) -> int:
    return max(1, (depth - 1).bit_length())


def check_counter_ram(width, depth):
    """Validate a counter RAM's ``width`` and ``depth`` (positive integers)."""
    for name, value in (("width", width), ("depth", depth)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, not {value!r}")


def counter_ram_signature(*, width: int, depth: int) -> wiring.Signature:
    """A simple dual-port RAM, from the RAM's side.

    Members
    -------
    w_addr, w_data, w_en : In
        Write port: ``mem[w_addr] = w_data`` at the clock edge when ``w_en``.
    r_addr : In
    r_data : Out(width)
        ``mem[r_addr]`` two clock edges after ``r_addr`` (the word as it was before a
        write to the same address at the first of those edges: callers never depend on
        it).
    """
    check_counter_ram(width, depth)
    return wiring.Signature({
        "w_addr": In(_addr_bits(depth)), "w_data": In(width), "w_en": In(1),
        "r_addr": In(_addr_bits(depth)), "r_data": Out(width),
    })


class GenericCounterRam(wiring.Component):
    """A counter RAM from ``amaranth.lib.memory.Memory`` plus a fabric register on the read
    data (:func:`counter_ram_signature`); powers up zero.

    Parameters
    ----------
    width, depth : int
    """

    def __init__(self, *, width: int, depth: int):
        self.width, self.depth = width, depth
        super().__init__(counter_ram_signature(width=width, depth=depth))

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=unsigned(self.width), depth=self.depth, init=[])
        wr = mem.write_port()
        rd = mem.read_port()  # not transparent: the counter bank forwards explicitly
        out = Signal(self.width, reset_less=True)
        m.d.comb += [wr.addr.eq(self.w_addr), wr.data.eq(self.w_data),
                     wr.en.eq(self.w_en), rd.addr.eq(self.r_addr), self.r_data.eq(out)]
        m.d.sync += out.eq(rd.data)
        return m

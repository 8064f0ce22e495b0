# SPDX-License-Identifier: BSD-2-Clause
"""A registered test harness for measuring a component's own Fmax on an FPGA.

Why: placing a bare component with every port on a pad (``AxisTop``: ~230 pins for a
64-bit core) measures the pads: the logic is pulled towards the pins around the die and
the router fights congestion there (the whole core's first run this way had 20 000
overused wires at nextpnr's first routing iteration). IP cores are timed with a
registered boundary instead, which this module builds:

* every input of the component is a flip-flop of one long shift register fed from one
  pin (``serial_in``), so each input path starts at a flip-flop, as it would behind a
  FIFO or a MAC;
* every output of the component is captured in a flip-flop, then folded (XOR, one
  registered level of 4-input XORs at a time) into a rotating 32-bit signature whose bit
  0 drives one pin (``serial_out``), so no output can be optimised away and the folding
  adds no long path.

The component's clock is the harness's ``clk`` pin; its reset is the ``rst`` pin through
:class:`amaranth.lib.cdc.ResetSynchronizer` (registered, as a board's reset is), so reset
paths start at a flip-flop too. The harness's own registers have no reset, so the reset
net's fan-out is the component's alone. Hand-written:
the pattern is common in FPGA benchmarking, but no package provides it for Amaranth.
"""

from __future__ import annotations

from amaranth.hdl import Cat, ClockDomain, ClockSignal, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["RegisteredHarness"]

_SIGNATURE_BITS = 32


class RegisteredHarness(wiring.Component):
    """Wraps ``component`` (a ``wiring.Component``) behind a registered boundary.

    Members
    -------
    clk, rst: In(1)
        Clock and (asynchronous, synchronised here) reset of domain ``sync``.
    serial_in: In(1)
    serial_out: Out(1)
    """

    def __init__(self, component: wiring.Component):
        if not isinstance(component, wiring.Component):
            raise ValueError(f"component must be a wiring.Component, not {component!r}")
        self.component = component
        super().__init__({"clk": In(1), "rst": In(1), "serial_in": In(1),
                          "serial_out": Out(1)})

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = ClockDomain("sync")
        m.d.comb += ClockSignal("sync").eq(self.clk)
        m.submodules.reset_sync = ResetSynchronizer(self.rst, domain="sync")
        m.submodules.dut = dut = self.component
        inputs, outputs = [], []
        for path, member, value in dut.signature.flatten(dut):
            value = Value.cast(value)
            if member.flow == In:
                inputs.append(value)
            else:
                outputs.append(value)
        in_bits = sum(len(v) for v in inputs)
        chain = Signal(max(1, in_bits), reset_less=True)
        m.d.sync += chain.eq(Cat(self.serial_in, chain[:-1]))
        offset = 0
        for value in inputs:
            m.d.comb += value.eq(chain[offset:offset + len(value)])
            offset += len(value)

        captured = Signal(max(1, sum(len(v) for v in outputs)), reset_less=True)
        m.d.sync += captured.eq(Cat(*outputs))
        level = captured
        while len(level) > _SIGNATURE_BITS:
            width = -(-len(level) // 4)
            folded = Signal(max(_SIGNATURE_BITS, width), reset_less=True)
            m.d.sync += folded.eq(Cat(
                level[4 * k:4 * k + 4].xor() for k in range(width)))
            level = folded
        signature = Signal(_SIGNATURE_BITS, reset_less=True)
        m.d.sync += signature.eq(Cat(signature[-1], signature[:-1]) ^ level)
        m.d.comb += self.serial_out.eq(signature[0])
        return m

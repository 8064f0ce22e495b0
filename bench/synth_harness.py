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
the reset synchroniser a board top uses (:func:`hw.backends.reset_synchronizer`: registered
and, on ECP5, on the global network), so reset paths start at a flip-flop too. The
harness's own registers have no reset, so the reset net's fan-out is the component's
alone. Hand-written: the pattern is common in FPGA benchmarking, but no package provides
it for Amaranth.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.backends import add_reset_domain

__all__ = ["RegisteredHarness"]

_SIGNATURE_BITS = 32


class RegisteredHarness(wiring.Component):
    """Wraps ``component`` (a ``wiring.Component``) behind a registered boundary.

    With ``control_domain`` (e.g. ``"ctrl"``, a two-clock
    :class:`hw.lda_pipeline.MeasurementCore`), the ports named in ``control_ports`` are
    that domain's: their inputs come from a second shift register and their outputs fold
    into a second signature, both clocked by the ``<control_domain>_clk`` pin, so each
    domain's paths start and end on its own clock; the reset pin resets both domains.
    ``family`` picks the domains' reset (:func:`hw.backends.add_reset_domain`):
    ``"ecp5"`` (default; every bench times an ECP5 build) or ``"generic"``.

    Members
    -------
    clk, rst: In(1)
        Clock and (asynchronous, synchronised here) reset of domain ``sync``.
    <control_domain>_clk: In(1)
        With ``control_domain``: the control domain's clock.
    serial_in: In(1)
    serial_out: Out(1)
    <control_domain>_serial_out: Out(1)
        With ``control_domain``: the control domain's signature bit.
    """

    def __init__(self, component: wiring.Component, *, control_domain: str | None = None,
                 control_ports=(), family: str = "ecp5"):
        if not isinstance(component, wiring.Component):
            raise ValueError(f"component must be a wiring.Component, not {component!r}")
        self.component = component
        self.control_domain = control_domain
        self.control_ports = tuple(control_ports) if control_domain else ()
        self.family = family
        members = {"clk": In(1), "rst": In(1), "serial_in": In(1), "serial_out": Out(1)}
        if control_domain:
            members |= {f"{control_domain}_clk": In(1),
                        f"{control_domain}_serial_out": Out(1)}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        clocks = [("sync", self.clk, self.serial_out)]
        if self.control_domain:
            clocks.append((self.control_domain,
                           getattr(self, f"{self.control_domain}_clk"),
                           getattr(self, f"{self.control_domain}_serial_out")))
        for domain, clk, _ in clocks:
            add_reset_domain(m, domain, clk=clk, arst=self.rst, kind=self.family)
        m.submodules.dut = dut = self.component
        ports = {domain: ([], []) for domain, _, _ in clocks}
        for path, member, value in dut.signature.flatten(dut):
            value = Value.cast(value)
            domain = self.control_domain if path[0] in self.control_ports else "sync"
            ports[domain][0 if member.flow == In else 1].append(value)
        for domain, _, serial_out in clocks:
            self._boundary(m, domain, *ports[domain], serial_out)
        return m

    def _boundary(self, m, domain, inputs, outputs, serial_out):
        """The input shift register and the output signature of one clock domain."""
        in_bits = sum(len(v) for v in inputs)
        chain = Signal(max(1, in_bits), reset_less=True, name=f"chain_{domain}")
        m.d[domain] += chain.eq(Cat(self.serial_in, chain[:-1]))
        offset = 0
        for value in inputs:
            m.d.comb += value.eq(chain[offset:offset + len(value)])
            offset += len(value)

        captured = Signal(max(1, sum(len(v) for v in outputs)), reset_less=True,
                          name=f"captured_{domain}")
        m.d[domain] += captured.eq(Cat(*outputs))
        level = captured
        while len(level) > _SIGNATURE_BITS:
            width = -(-len(level) // 4)
            folded = Signal(max(_SIGNATURE_BITS, width), reset_less=True,
                            name=f"folded_{domain}")
            m.d[domain] += folded.eq(Cat(
                level[4 * k:4 * k + 4].xor() for k in range(width)))
            level = folded
        signature = Signal(_SIGNATURE_BITS, reset_less=True, name=f"signature_{domain}")
        m.d[domain] += signature.eq(Cat(signature[-1], signature[:-1]) ^ level)
        m.d.comb += serial_out.eq(signature[0])

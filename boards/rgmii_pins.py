# SPDX-License-Identifier: BSD-2-Clause
"""The RGMII pins of a board top: DDR buffers, the clock-to-data skew each board needs
from the FPGA, and the PHY reset sequence.

Where it sits (``DESIGN.md``): between a board's pins and :class:`boards.rgmii.RGMIIPort`
(which sees only the two DDR samples per pin and clock domain ``eth_rx<k>``).

RGMII at 1000 Mb/s sends data on both edges of a 125 MHz clock with the clock edge-aligned
to the data; the receiver needs the clock about 2 ns (1.5–2.0 ns) later than the data. A
PHY can add that delay inside ("RGMII-ID", by strap or register) on its receive output,
on its transmit input, on both or on neither; the FPGA must add what the PHY does not.
:class:`RGMIISkew` says, per board, what the FPGA adds: ``rx_delay_ns`` on the received
data and control (between the input buffer and the IDDRX1F), ``tx_delay_ns`` on the
transmit clock (between the ODDRX1F and the output buffer), through the ECP5's DELAYG
elements in ``SCLK_ALIGNED`` mode (about 25 ps per tap), as LiteEth's ECP5 RGMII PHY
does. The values per board follow litex-boards' targets for the same boards
(``docs/HARDWARE.md``). With no delay a pin uses amaranth's ``io.DDRBuffer`` (the
platform's IB/OBZ + IDDRX1F/ODDRX1F); with a delay :class:`DelayedDDRBuffer`
instantiates the same primitives with a DELAYG between them (``io.DDRBuffer`` has no
place for one).

:class:`PHYReset`: the PHYs' reset pins are held asserted for ``hold_ms`` after power-on
(the PHYs' data sheets ask 10 ms after the supplies settle; the Marvell 88E1512 and the
Microchip KSZ9031 both), then released; the RGMII clock domains stay in reset until
``settle_ms`` later (the PHY's receive clock is not stable before).
"""

from dataclasses import dataclass

from amaranth.hdl import (Cat, ClockDomain, ClockSignal, Const, Elaboratable, Instance,
                          Module, ResetSignal, Signal)
from amaranth.lib import data, io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.wiring import Out

__all__ = ["DELAY_TAP_NS", "RGMIISkew", "delay_taps", "DelayedDDRBuffer", "RGMIIPins",
           "PHYReset"]

#: One DELAYG tap (Lattice TN1265: 25 ps nominal).
DELAY_TAP_NS = 0.025
#: DEL_VALUE is 7 bits.
MAX_TAPS = 127


def delay_taps(ns: float) -> int:
    """DELAYG taps for ``ns`` nanoseconds (0 to 3.175 ns)."""
    taps = round(ns / DELAY_TAP_NS)
    if not 0 <= taps <= MAX_TAPS:
        raise ValueError(f"an RGMII delay must be 0 to {MAX_TAPS * DELAY_TAP_NS:g} ns, "
                         f"not {ns!r}")
    return taps


@dataclass(frozen=True)
class RGMIISkew:
    """The RGMII delays the FPGA adds (the PHY adds the rest).

    rx_delay_ns:
        On RX_CTL / RXD before they are sampled (0 when the PHY delays its RX clock).
    tx_delay_ns:
        On TX_CLK after the ODDRX1F (0 when the PHY delays the TX clock inside).
    """
    rx_delay_ns: float = 0.0
    tx_delay_ns: float = 0.0

    def __post_init__(self):
        delay_taps(self.rx_delay_ns)
        delay_taps(self.tx_delay_ns)

    @property
    def rx_taps(self) -> int:
        return delay_taps(self.rx_delay_ns)

    @property
    def tx_taps(self) -> int:
        return delay_taps(self.tx_delay_ns)


class DelayedDDRBuffer(Elaboratable):
    """A DDR pin buffer with a DELAYG of ``taps`` between the pad and the DDR register
    (ECP5 primitives; the same ``i`` / ``o`` members as ``io.DDRBuffer``).

    ``direction`` ``"i"``: pad → IB → DELAYG → IDDRX1F → ``i[0]`` (rising-edge sample),
    ``i[1]`` (falling edge). ``"o"``: ``o[0]``, ``o[1]`` → ODDRX1F → DELAYG → OB → pad.
    """

    def __init__(self, direction: str, port, *, domain: str, taps: int):
        if direction not in ("i", "o"):
            raise ValueError(f"direction must be 'i' or 'o', not {direction!r}")
        if not 0 <= taps <= MAX_TAPS:
            raise ValueError(f"taps must be 0 to {MAX_TAPS}, not {taps!r}")
        self.direction, self.port, self.domain, self.taps = direction, port, domain, taps
        pair = Signal(data.ArrayLayout(len(port), 2))
        if direction == "i":
            self.i = pair
        else:
            self.o = pair

    def _delay(self, m, bit: int, a, z):
        m.submodules[f"delay{bit}"] = Instance("DELAYG", p_DEL_MODE="SCLK_ALIGNED",
                                               p_DEL_VALUE=self.taps, i_A=a, o_Z=z)

    def elaborate(self, platform):
        m = Module()
        clk = ClockSignal(self.domain)
        for bit in range(len(self.port)):
            pad, inv = self.port.io[bit], int(self.port.invert[bit])
            near, delayed = Signal(name=f"near{bit}"), Signal(name=f"delayed{bit}")
            if self.direction == "i":
                q0, q1 = Signal(name=f"q0_{bit}"), Signal(name=f"q1_{bit}")
                m.submodules[f"ib{bit}"] = Instance("IB", i_I=pad, o_O=near)
                self._delay(m, bit, near, delayed)
                m.submodules[f"iddr{bit}"] = Instance("IDDRX1F", i_D=delayed, i_SCLK=clk,
                                                      i_RST=Const(0), o_Q0=q0, o_Q1=q1)
                m.d.comb += [self.i[0][bit].eq(q0 ^ inv), self.i[1][bit].eq(q1 ^ inv)]
            else:
                m.submodules[f"oddr{bit}"] = Instance(
                    "ODDRX1F", i_D0=self.o[0][bit] ^ inv, i_D1=self.o[1][bit] ^ inv,
                    i_SCLK=clk, i_RST=Const(0), o_Q=near)
                self._delay(m, bit, near, delayed)
                m.submodules[f"ob{bit}"] = Instance("OB", i_I=delayed, o_O=pad)
        return m


def _ddr(direction, port, domain, taps):
    if taps == 0:
        kw = {"i_domain": domain} if direction == "i" else {"o_domain": domain}
        return io.DDRBuffer(direction, port, **kw)
    return DelayedDDRBuffer(direction, port, domain=domain, taps=taps)


class RGMIIPins(Elaboratable):
    """DDR buffers of one ``lda_rgmii`` port and its receive clock domain ``eth_rx<k>``
    (reset from ``sync``'s reset and ``rx_reset``, e.g. :attr:`PHYReset.rgmii_reset`)."""

    def __init__(self, platform, index: int, *, tx_domain: str | None,
                 skew: RGMIISkew = RGMIISkew()):
        self.index = index
        self.rx_domain = f"eth_rx{index}"
        self.tx_domain = tx_domain
        self.skew = skew
        self.rx_reset = Signal()
        dirs = {"rx_ctl": "-", "rx_data": "-", "tx_ctl": "-", "tx_data": "-", "tx_clk": "-"}
        self.pins = platform.request("lda_rgmii", index, dir=dirs)
        self.rx_ctl = _ddr("i", self.pins.rx_ctl, self.rx_domain, skew.rx_taps)
        self.rx_data = _ddr("i", self.pins.rx_data, self.rx_domain, skew.rx_taps)
        if tx_domain is not None:
            self.tx_ctl = _ddr("o", self.pins.tx_ctl, tx_domain, 0)
            self.tx_data = _ddr("o", self.pins.tx_data, tx_domain, 0)
            self.tx_clk = _ddr("o", self.pins.tx_clk, tx_domain, skew.tx_taps)

    def connect(self, m, port):
        """Join the pins to a :class:`boards.rgmii.RGMIIPort`."""
        m.d.comb += [port.rx_ctl.eq(Cat(self.rx_ctl.i[0], self.rx_ctl.i[1])),
                     port.rx_data[0].eq(self.rx_data.i[0]),
                     port.rx_data[1].eq(self.rx_data.i[1])]
        if self.tx_domain is not None:
            m.d.comb += [self.tx_ctl.o[0].eq(port.tx_ctl[0]), self.tx_ctl.o[1].eq(port.tx_ctl[1]),
                         self.tx_data.o[0].eq(port.tx_data[0]),
                         self.tx_data.o[1].eq(port.tx_data[1]),
                         self.tx_clk.o[0].eq(1), self.tx_clk.o[1].eq(0)]

    def elaborate(self, platform):
        m = Module()
        m.domains += ClockDomain(self.rx_domain)
        m.d.comb += ClockSignal(self.rx_domain).eq(self.pins.rx_clk.i)
        m.submodules.rst_sync = ResetSynchronizer(ResetSignal("sync") | self.rx_reset,
                                                  domain=self.rx_domain)
        m.submodules.rx_ctl = self.rx_ctl
        m.submodules.rx_data = self.rx_data
        if self.tx_domain is not None:
            m.submodules.tx_ctl = self.tx_ctl
            m.submodules.tx_data = self.tx_data
            m.submodules.tx_clk = self.tx_clk
        return m


class PHYReset(wiring.Component):
    """The PHY reset sequence: ``phy_reset`` for ``hold_ms`` after the core's reset, then
    ``rgmii_reset`` for ``settle_ms`` more (the RGMII domains wait for a stable clock).

    Members
    -------
    phy_reset: Out(1)
        Drive the PHYs' (active-low) reset pins asserted while 1.
    rgmii_reset: Out(1)
        Hold the RGMII clock domains in reset while 1.
    """

    phy_reset: Out(1)
    rgmii_reset: Out(1)

    def __init__(self, *, clk_hz: float, hold_ms: float = 10.0, settle_ms: float = 5.0):
        if not clk_hz > 0:
            raise ValueError(f"clk_hz must be positive, not {clk_hz!r}")
        if not (hold_ms >= 0 and settle_ms >= 0):
            raise ValueError(f"hold_ms and settle_ms must be non-negative, not "
                             f"{hold_ms!r}, {settle_ms!r}")
        self.hold_cycles = round(clk_hz * hold_ms / 1e3)
        self.settle_cycles = round(clk_hz * settle_ms / 1e3)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        end = self.hold_cycles + self.settle_cycles
        count = Signal(range(end + 1))
        with m.If(count != end):
            m.d.sync += count.eq(count + 1)
        m.d.comb += [self.phy_reset.eq(count < self.hold_cycles),
                     self.rgmii_reset.eq(count != end)]
        return m

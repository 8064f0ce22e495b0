# SPDX-License-Identifier: BSD-2-Clause
"""The parts of the gateware built from Lattice ECP5 primitives: the counter RAM of DP16KD
block RAMs and a domain's reset on the global clock network (DCCA).

One copy of one lane of the counter bank (docs/DESIGN.md, "Data flow of a counter") on an
ECP5: the DP16KD's own output register (``REGMODE_B="OUTREG"``) stands in for the generic
RAM's fabric register, which takes the block RAM's slow clock-to-output off the fabric
paths (figures in docs/HARDWARE.md). Same ports and cycle behaviour as
:class:`hw.backends.generic.GenericCounterRam`; ``sim_tb/benches/test_ecp5_memory.py`` checks the
two against each other under a behavioural DP16KD model.
"""

from amaranth.hdl import ClockSignal, Const, Elaboratable, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import AsyncFFSynchronizer

from hw.backends.generic import check_counter_ram, counter_ram_signature

__all__ = ["DP16KD_MODES", "DP16KD_MAX_DEPTH", "Ecp5CounterRam", "Ecp5ResetSynchronizer",
           "dp16kd_slice_bits"]

#: DP16KD modes ``(depth, data width, lowest address pin)`` of one block, shallowest first.
DP16KD_MODES = ((1024, 18, 4), (2048, 9, 3), (4096, 4, 2), (8192, 2, 1), (16384, 1, 0))
#: The deepest counter RAM one column of DP16KDs holds.
DP16KD_MAX_DEPTH = DP16KD_MODES[-1][0]


def dp16kd_slice_bits(depth: int) -> int:
    """The data bits of one DP16KD in the narrowest mode that holds ``depth`` words."""
    return next(mode[1] for mode in DP16KD_MODES if depth <= mode[0])


class Ecp5CounterRam(wiring.Component):
    """A counter RAM (:func:`~hw.backends.generic.counter_ram_signature`) of DP16KD blocks,
    one block deep in the narrowest mode that holds ``depth`` words, as many side by side
    as ``width`` needs; output register enabled; powers up zero.

    Parameters
    ----------
    width : int
    depth : int
        Up to :data:`DP16KD_MAX_DEPTH`.
    """

    def __init__(self, *, width: int, depth: int):
        check_counter_ram(width, depth)
        if depth > DP16KD_MAX_DEPTH:
            raise ValueError(f"memory='ecp5' supports up to {DP16KD_MAX_DEPTH} words per "
                             f"lane, not {depth}")
        self.width, self.depth = width, depth
        super().__init__(counter_ram_signature(width=width, depth=depth))

    def elaborate(self, platform):
        m = Module()
        _, slice_bits, low_pin = next(mode for mode in DP16KD_MODES if self.depth <= mode[0])
        for index, lsb in enumerate(range(0, self.width, slice_bits)):
            bits = min(slice_bits, self.width - lsb)
            params = {
                "p_DATA_WIDTH_A": slice_bits, "p_DATA_WIDTH_B": slice_bits,
                "p_REGMODE_A": "NOREG", "p_REGMODE_B": "OUTREG",
                "p_RESETMODE": "SYNC", "p_ASYNC_RESET_RELEASE": "SYNC",
                "p_CSDECODE_A": "0b000", "p_CSDECODE_B": "0b000",
                "p_WRITEMODE_A": "NORMAL", "p_WRITEMODE_B": "NORMAL", "p_GSR": "DISABLED",
            }
            for init in range(0x40):
                params[f"p_INITVAL_{init:02X}"] = Const(0, 320)
            m.submodules[f"dp16kd_{index}"] = Instance(
                "DP16KD", **params, **self._ports(slice_bits, low_pin, lsb, bits))
        return m

    def _ports(self, slice_bits, low_pin, lsb, bits):
        """The pins of the block holding data bits ``lsb .. lsb + bits - 1``."""
        addr_bits = len(self.w_addr)
        ports = {
            "i_CLKA": ClockSignal(), "i_CLKB": ClockSignal(),
            "i_CEA": 1, "i_OCEA": 1, "i_WEA": self.w_en, "i_RSTA": 0,
            "i_CEB": 1, "i_OCEB": 1, "i_WEB": 0, "i_RSTB": 0,
        }
        for cs in range(3):
            ports[f"i_CSA{cs}"] = 0
            ports[f"i_CSB{cs}"] = 0
        for pin in range(14):
            bit = pin - low_pin
            if 0 <= bit < addr_bits:
                ports[f"i_ADA{pin}"] = self.w_addr[bit]
                ports[f"i_ADB{pin}"] = self.r_addr[bit]
            else:
                # x18 mode: ADA0/ADA1 are the byte write enables
                ports[f"i_ADA{pin}"] = int(slice_bits == 18 and pin < 2)
                ports[f"i_ADB{pin}"] = 0
        for pin in range(18):
            ports[f"i_DIA{pin}"] = self.w_data[lsb + pin] if pin < bits else 0
            ports[f"i_DIB{pin}"] = 0
            if pin < bits:
                ports[f"o_DOB{pin}"] = self.r_data[lsb + pin]
        return ports


class Ecp5ResetSynchronizer(Elaboratable):
    """:class:`amaranth.lib.cdc.ResetSynchronizer` whose output reaches the domain's
    registers over the ECP5's global clock network: asserted asynchronously by ``arst``,
    released synchronously two edges of ``domain``'s clock later, then through a DCCA
    (the clock-network buffer) onto the reset of ``domain``.

    Why: the reset is the net with the most loads in a domain (every register whose value
    matters after reset); on fabric routing nextpnr drove it from one flip-flop to
    thousands of LSR pins, a single net of up to 7.1 ns (the LDA core's datapath limit on
    three of five placements, docs/HARDWARE.md). Lattice's clocking guide (TN1263) lets a
    primary clock net carry such a high-fan-out set/reset; nextpnr routes a DCCA's output
    that drives non-clock pins on one of the eight globals that reach the fabric.
    Amaranth's ResetSynchronizer cannot put a buffer between its last stage and the
    domain's reset, so this one is its :class:`~amaranth.lib.cdc.AsyncFFSynchronizer`
    with the DCCA after it. The same interface as ResetSynchronizer.
    """

    def __init__(self, arst, *, domain: str = "sync", stages: int = 2):
        self.arst = arst
        self._domain = domain
        self._stages = stages

    def elaborate(self, platform):
        m = Module()
        released = Signal(name=f"{self._domain}_rst_synced")
        m.submodules.synchronizer = AsyncFFSynchronizer(
            self.arst, released, o_domain=self._domain, stages=self._stages,
            async_edge="pos")
        buffered = Signal(name=f"{self._domain}_rst_global")
        m.submodules.global_buffer = Instance("DCCA", i_CLKI=released, i_CE=Const(1),
                                              o_CLKO=buffered)
        m.d.comb += ResetSignal(self._domain).eq(buffered)
        return m

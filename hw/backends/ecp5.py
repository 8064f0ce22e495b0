# SPDX-License-Identifier: BSD-2-Clause
"""The counter RAM built from Lattice ECP5 DP16KD block-RAM primitives.

One copy of one lane of the counter bank (docs/DESIGN.md, "Data flow of a counter") on an
ECP5: the DP16KD's own output register (``REGMODE_B="OUTREG"``) stands in for the generic
RAM's fabric register, which takes the block RAM's slow clock-to-output off the fabric
paths (figures in docs/HARDWARE.md). Same ports and cycle behaviour as
:class:`hw.backends.generic.GenericCounterRam`; ``sim_tb/benches/test_ecp5_memory.py`` checks the
two against each other under a behavioural DP16KD model.
"""

from amaranth.hdl import ClockSignal, Const, Instance, Module
from amaranth.lib import wiring

from hw.backends.generic import check_counter_ram, counter_ram_signature

__all__ = ["DP16KD_MODES", "DP16KD_MAX_DEPTH", "Ecp5CounterRam", "dp16kd_slice_bits"]

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

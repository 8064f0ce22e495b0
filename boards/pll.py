# SPDX-License-Identifier: BSD-2-Clause
"""The ECP5 PLL that makes a board's core clock from its oscillator.

Where it sits (``docs/HARDWARE.md``, "The core clock"): in :mod:`boards.top`, between the board's
clock pin and the ``sync`` domain of the measurement cores. The board tops run the cores
at :data:`boards.top.CORE_CLOCK_HZ`, not at the oscillator's frequency, so that every kind
closes timing on every board with room to spare; a 1 GbE port needs far less.

Hand-written: amaranth and amaranth-boards have no ECP5 PLL, LiteX's ``ECP5PLL`` is a
Migen module, and prjtrellis' ``ecppll`` (``yowasp-ecppll``) writes Verilog from a command
line. :func:`pll_parameters` searches the divisors as ``ecppll`` does (the same limits,
the same choice among equal errors: the VCO nearest 600 MHz), and :class:`ECP5PLL`
instantiates ``EHXPLLL`` with the parameters and attributes ``ecppll`` writes; a test
compares the divisors with the tool's (``tests/boards/test_pll.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from amaranth.hdl import Elaboratable, Instance, Module, Signal

__all__ = ["PllParameters", "pll_parameters", "ECP5PLL"]

#: EHXPLLL's ranges (MHz), as ``ecppll`` has them.
PFD_MHZ = (3.125, 400.0)
VCO_MHZ = (400.0, 800.0)
INPUT_DIV_MAX, FEEDBACK_DIV_MAX, OUTPUT_DIV_MAX = 128, 80, 128


@dataclass(frozen=True)
class PllParameters:
    """Divisors of a PLL with its primary output (CLKOP) fed back."""

    input_div: int
    feedback_div: int
    output_div: int
    fin_mhz: float

    @property
    def fout_mhz(self) -> float:
        return self.fin_mhz / self.input_div * self.feedback_div

    @property
    def fvco_mhz(self) -> float:
        return self.fout_mhz * self.output_div

    @property
    def cphase(self) -> int:
        """CLKOP_CPHASE: half an output period in VCO cycles (the shift Lattice's tools
        give the fed-back output), rounded as ``ecppll`` rounds it (in single precision,
        so ``output_div`` 10 gives 4)."""
        fout, fvco = _f32_out(self.fin_mhz, self.input_div, self.feedback_div,
                              self.output_div)
        half_period = np.float32(1 / (float(fout) * 1e6) * 0.5)
        return int(float(half_period) * (float(fvco) * 1e6))


def _f32_out(fin, input_div, feedback_div, output_div):
    """``ecppll``'s output and VCO frequencies (MHz), in its single precision."""
    fvco = (np.float32(fin) / np.float32(input_div) * np.float32(feedback_div)
            * np.float32(output_div))
    return fvco / np.float32(output_div), fvco


def pll_parameters(fin_hz: float, fout_hz: float, *, tolerance: float = 1e-4) -> PllParameters:
    """The divisors that make ``fout_hz`` from ``fin_hz`` (``ecppll``'s search); a
    ``ValueError`` when the nearest output is more than ``tolerance`` (relative) off."""
    fin, fout = fin_hz / 1e6, fout_hz / 1e6
    if not (fin > 0 and fout > 0 and math.isfinite(fin) and math.isfinite(fout)):
        raise ValueError(f"PLL frequencies must be positive, not {fin_hz!r} → {fout_hz!r}")
    best, error, best_vco = None, None, None
    target = np.float32(fout)
    for input_div in range(1, INPUT_DIV_MAX + 1):
        if not PFD_MHZ[0] <= fin / input_div <= PFD_MHZ[1]:
            continue
        for feedback_div in range(1, FEEDBACK_DIV_MAX + 1):
            out = fin / input_div * feedback_div
            # only the output divisors that put the VCO in range (ecppll tries all)
            for output_div in range(max(1, math.ceil(VCO_MHZ[0] / out) - 1),
                                    min(OUTPUT_DIV_MAX, int(VCO_MHZ[1] / out) + 1) + 1):
                got, vco = _f32_out(fin, input_div, feedback_div, output_div)
                if not VCO_MHZ[0] <= vco <= VCO_MHZ[1]:
                    continue
                err = abs(got - target)
                if error is None or err < error or (
                        err == error and abs(vco - 600) < abs(best_vco - 600)):
                    best = PllParameters(input_div, feedback_div, output_div, fin)
                    error, best_vco = err, vco
    if best is None or float(error) > tolerance * fout:
        near = "none" if best is None else f"{best.fout_mhz:g} MHz"
        raise ValueError(f"the ECP5 PLL cannot make {fout:g} MHz from {fin:g} MHz "
                         f"(nearest: {near})")
    return best


class ECP5PLL(Elaboratable):
    """``EHXPLLL``: ``clk_in`` at ``fin_hz`` → ``clk_out`` at ``fout_hz``; ``locked`` high
    once the loop has locked (the PLL's LOCK pin).

    Parameters
    ----------
    clk_in, clk_out : Signal
        The reference clock and the signal the output clock drives (the caller makes a
        domain of it; nextpnr derives its constraint from the reference clock's and the
        divisors).
    fin_hz, fout_hz : float
        Input and output frequencies; the output must be within 0.01 % of reachable.
    """

    def __init__(self, clk_in, clk_out, *, fin_hz: float, fout_hz: float):
        self.params = pll_parameters(fin_hz, fout_hz)
        self.clk_in, self.clk_out = clk_in, clk_out
        self.locked = Signal()

    def elaborate(self, platform):
        m = Module()
        p = self.params
        out = self.clk_out
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=f"{p.fin_mhz:g}", a_FREQUENCY_PIN_CLKOP=f"{p.fout_mhz:g}",
            a_ICP_CURRENT="12", a_LPF_RESISTOR="8", a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED", p_INTFB_WAKE="DISABLED", p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED", p_OUTDIVIDER_MUXA="DIVA", p_OUTDIVIDER_MUXB="DIVB",
            p_OUTDIVIDER_MUXC="DIVC", p_OUTDIVIDER_MUXD="DIVD",
            p_CLKI_DIV=p.input_div, p_CLKOP_ENABLE="ENABLED", p_CLKOP_DIV=p.output_div,
            p_CLKOP_CPHASE=p.cphase, p_CLKOP_FPHASE=0, p_FEEDBK_PATH="CLKOP",
            p_CLKFB_DIV=p.feedback_div,
            i_RST=0, i_STDBY=0, i_CLKI=self.clk_in, o_CLKOP=out, i_CLKFB=out,
            i_PHASESEL0=0, i_PHASESEL1=0, i_PHASEDIR=1, i_PHASESTEP=1, i_PHASELOADREG=1,
            i_PLLWAKESYNC=0, i_ENCLKOP=0, o_LOCK=self.locked)
        return m

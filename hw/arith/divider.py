# SPDX-License-Identifier: BSD-2-Clause
"""A sequential unsigned divider: restoring division, one quotient bit per clock.

Where it sits (docs/DESIGN.md; docs/SPEC.md "RLI"): the RLI interpolation unit
(:mod:`hw.rli.interpolator`) divides, once per reference pair, the delay difference
``(d_j − d_i) << F`` by the arrival span ``a_j − a_i`` to get the slope its drain
multiplies by each packet's offset. Amaranth's library has no sequential divider (``//``
on values elaborates to one combinational array of ``dividend_bits`` chained
subtractors, far too slow at these widths) and ECP5 has no divide block, so this is
written by hand: the textbook restoring loop, one trial subtraction per quotient bit,
from the dividend's most significant bit down.

Timing: ``start`` (while ``busy`` is low) samples ``dividend`` and ``divisor``; ``busy``
is high from the next clock for ``dividend_bits`` clocks, then ``done`` is high for one
clock, with ``quotient`` and ``remainder`` valid from then until the next ``start``. A
``start`` while ``busy`` is ignored. A divisor of zero gives a quotient of all ones
(every trial subtraction succeeds) and a meaningless remainder; callers rule it out.

The loop's one long path is the trial subtraction of ``divisor_bits + 1`` bits and the
multiplexer choosing between its result and the shifted remainder: one carry chain.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Divider"]


class Divider(wiring.Component):
    """``quotient, remainder = divmod(dividend, divisor)`` in ``dividend_bits`` clocks.

    Parameters
    ----------
    dividend_bits, divisor_bits : int (≥ 1)

    Members
    -------
    start : In(1)
        Sample the operands and begin (ignored while ``busy``).
    dividend : In(dividend_bits), divisor : In(divisor_bits)
    busy : Out(1)
        Dividing: ``dividend_bits`` clocks after a taken ``start``.
    done : Out(1)
        The clock after the last step: ``quotient`` and ``remainder`` are final (they hold
        until the next ``start``).
    quotient : Out(dividend_bits), remainder : Out(divisor_bits)
    """

    def __init__(self, *, dividend_bits: int, divisor_bits: int):
        for name, value in (("dividend_bits", dividend_bits),
                            ("divisor_bits", divisor_bits)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, not {value!r}")
        self.dividend_bits, self.divisor_bits = dividend_bits, divisor_bits
        super().__init__({
            "start": In(1), "dividend": In(dividend_bits), "divisor": In(divisor_bits),
            "busy": Out(1), "done": Out(1),
            "quotient": Out(dividend_bits), "remainder": Out(divisor_bits),
        })

    def elaborate(self, platform):
        m = Module()
        nb, db = self.dividend_bits, self.divisor_bits
        # the dividend's bits not yet brought down, most significant first; the quotient
        # bits enter at the bottom of ``quotient`` as the dividend's leave at the top
        pending = Signal(nb)
        divisor = Signal(db)
        steps = Signal(range(nb + 1))
        shifted = Signal(db + 1)          # remainder · 2 + the next dividend bit
        trial = Signal(db + 2)            # shifted − divisor; its top bit is the borrow
        m.d.comb += [shifted.eq(Cat(pending[-1], self.remainder)),
                     trial.eq(shifted - divisor),
                     self.busy.eq(steps != 0)]
        m.d.sync += self.done.eq(0)
        with m.If(self.busy):
            m.d.sync += [pending.eq(pending << 1), steps.eq(steps - 1),
                         self.done.eq(steps == 1)]
            with m.If(trial[-1]):         # borrow: shifted < divisor
                m.d.sync += [self.remainder.eq(shifted),
                             self.quotient.eq(Cat(0, self.quotient))]
            with m.Else():
                m.d.sync += [self.remainder.eq(trial),
                             self.quotient.eq(Cat(1, self.quotient))]
        with m.Elif(self.start):
            m.d.sync += [pending.eq(self.dividend), divisor.eq(self.divisor),
                         steps.eq(nb), self.remainder.eq(0), self.quotient.eq(0)]
        return m

# SPDX-License-Identifier: BSD-2-Clause
"""The free-running timebase: the tick counter that timestamps frames at start of frame.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): beside the header tap,
which latches :attr:`Timebase.now` at each start of frame; the counters sum its low
``ts_bits`` bits. The host sets it over the bus (``set``/``set_value``) to align two
measurement points; the unit of a tick is ``config.tick_ns``.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["Timebase"]


class Timebase(wiring.Component):
    """A ``width``-bit tick counter, +1 every clock, settable.

    Parameters
    ----------
    width:
        Counter width in bits (default 64).

    Members
    -------
    now: Out(width)
        The current tick (registered).
    set: In(1)
        Load ``set_value`` this cycle; :attr:`now` shows it the next cycle and counts on
        from there.
    set_value: In(width)
    """

    def __init__(self, *, width: int = 64):
        if not isinstance(width, int) or not 16 <= width <= 64:
            raise ValueError(f"timebase width must be 16..64 bits, not {width!r}")
        self.width = width
        super().__init__({"now": Out(width), "set": In(1), "set_value": In(width)})

    def status_sources(self) -> dict:
        """TIMEBASE's reads show the running count (:func:`hw.bus.core_registers.wire_status`;
        writes set it through ``set`` / ``set_value``)."""
        return {"timebase.ticks": self.now}

    def elaborate(self, platform):
        m = Module()
        # Two halves, so no carry chain is longer than 32 bits: the high half counts when
        # the low half wraps. ``wraps`` (the low half is all ones) is a register loaded
        # from what the low half loads: ``low.all()`` in the high half's enables was a
        # 32-input AND, three LUT levels from the low half to 32 clock enables, the
        # two-clock LDA core's datapath critical path on one placement
        # (``docs/HARDWARE.md``).
        half = self.width // 2
        low, high = self.now[:half], self.now[half:]
        wraps = Signal()
        with m.If(self.set):
            m.d.sync += [self.now.eq(self.set_value), wraps.eq(self.set_value[:half].all())]
        with m.Else():
            m.d.sync += [low.eq(low + 1), wraps.eq(low == (1 << half) - 2)]
            with m.If(wraps):
                m.d.sync += high.eq(high + 1)
        return m

# SPDX-License-Identifier: BSD-2-Clause
"""A wide entry (a marker request, an export's parameters) from one clock domain into
another, through :class:`amaranth.lib.fifo.AsyncFIFOBuffered` slices side by side.

Where it sits (``docs/DESIGN.md``, "Clock domains"): at the datapath → control edges of
the two-clock core's crossings (:class:`hw.inband.marker_crossing.MarkerSourceCrossing`'s
requests, :class:`hw.inband.exporter_crossing.ExporterCrossing`'s parameters), where one
entry of 361 or 372 bits crosses per marker or export.

Why slices: as one FIFO, the entry's storage is some 93 LUT-RAM cells that all take the
read address from one pointer, and the pointer's update into them was the two-clock LDA
and LDS cores' control-clock critical path on ECP5 (8.8–9.1 ns, 3–4 ns of it on that one
net; ``docs/HARDWARE.md``). Each slice of at most :data:`SLICE_BITS` has its own pointers
and a quarter of the cells. The slices are written together and read together: an entry
is readable once every slice shows it (their synchronisers may see the write a clock
apart), and there is room once every slice has it.

Hand-written: ``amaranth.lib.fifo`` has no multi-slice FIFO; the synchronisation is the
FIFOs' own.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.fifo import AsyncFIFOBuffered
from amaranth.lib.wiring import In, Out

__all__ = ["EntryCrossing", "SLICE_BITS"]

#: The widest slice (bits).
SLICE_BITS = 96


class EntryCrossing(wiring.Component):
    """Entries of ``width`` bits from ``w_domain`` to ``r_domain``, ``depth`` of them.

    Members (the :class:`amaranth.lib.fifo.FIFOInterface` names): ``w_data``, ``w_en``,
    ``w_rdy`` in ``w_domain``; ``r_data``, ``r_en``, ``r_rdy`` in ``r_domain``, both read
    side outputs registered. Write only while ``w_rdy``.
    """

    def __init__(self, *, width: int, w_domain: str, r_domain: str, depth: int = 3):
        if width < 1:
            raise ValueError(f"width must be at least 1, not {width!r}")
        self.width, self.depth = width, depth
        self.w_domain, self.r_domain = w_domain, r_domain
        super().__init__({"w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
                          "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        slices = []
        for k, low in enumerate(range(0, self.width, SLICE_BITS)):
            bits = min(SLICE_BITS, self.width - low)
            fifo = AsyncFIFOBuffered(width=bits, depth=self.depth, w_domain=self.w_domain,
                                     r_domain=self.r_domain, exact_depth=True)
            m.submodules[f"slice{k}"] = fifo
            slices.append((fifo, low, bits))
        m.d.comb += [
            self.w_rdy.eq(Cat(f.w_rdy for f, _, _ in slices).all()),
            self.r_rdy.eq(Cat(f.r_rdy for f, _, _ in slices).all()),
            self.r_data.eq(Cat(f.r_data for f, _, _ in slices)),
        ]
        for fifo, low, bits in slices:
            m.d.comb += [fifo.w_en.eq(self.w_en),
                         fifo.w_data.eq(self.w_data[low: low + bits]),
                         fifo.r_en.eq(self.r_en & self.r_rdy)]
        return m

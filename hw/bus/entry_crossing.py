# SPDX-License-Identifier: BSD-2-Clause
"""A wide entry (a marker request, an export's parameters) from one clock domain into
another: a register on each side and a toggle handshake between them.

Where it sits (``docs/DESIGN.md``, "Clock domains"): at the datapath → control edges of
the two-clock core's crossings (:class:`hw.inband.marker_crossing.MarkerSourceCrossing`'s
requests, :class:`hw.inband.exporter_crossing.ExporterCrossing`'s parameters), where one
entry of 361 or 372 bits crosses per marker or export.

Why not a FIFO: an entry crosses once per marker or export, and the crossing's every
register costs a route on the control clock. As :class:`amaranth.lib.fifo.AsyncFIFOBuffered`
slices, the read pointer's update into the LUT-RAM cells and out to the read register was
the two-clock LDA core's control-clock critical path on ECP5 in each of three seeds
(7.6–8.9 ns; ``docs/HARDWARE.md``). Here no pointer and no memory exist:

- the writing side holds the entry in ``held`` and flips ``request``; it is ready again
  once ``acknowledge`` has come back through a :class:`amaranth.lib.cdc.FFSynchronizer`;
- the reading side sees ``request`` through another, copies ``held`` into its output
  register while that register is empty (``held`` has not changed since before the flip
  arrived, and does not change until the flip back does), and flips ``acknowledge``.

A write is sampled into registers first and enters ``held`` a clock later, so the
writer's strobe (an export's start from the freeze logic across the core, a marker
request) drives a flip-flop per 64 bits of the entry (each the enable of its 64 holding
registers), not the holding registers' enables; ``w_rdy`` falls at the write. The output
register's enables are copies of its own ``valid`` (one per 64 bits), so the entry's
fan-out starts at a register on both sides. Two entries can wait: one in ``held``,
one in the output register.

Hand-written: ``amaranth.lib.cdc`` has the synchronisers but no data handshake; the
pattern is the usual two-phase (toggle) request/acknowledge.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

from hw.arith.stages import kept_copies

__all__ = ["EntryCrossing", "split_entry"]


class EntryCrossing(wiring.Component):
    """Entries of ``width`` bits from ``w_domain`` to ``r_domain``, two of them waiting.

    Members (the :class:`amaranth.lib.fifo.FIFOInterface` names): ``w_data``, ``w_en``,
    ``w_rdy`` in ``w_domain``; ``r_data``, ``r_en``, ``r_rdy`` in ``r_domain``, all three
    read side outputs from registers. Write only while ``w_rdy``; ``w_data`` is sampled
    with ``w_en``.

    Reset: each side's toggle by its own domain's reset; reset both domains together
    (``docs/CORE_INTERFACE.md``, "Two clocks").
    """

    def __init__(self, *, width: int, w_domain: str, r_domain: str):
        if width < 1:
            raise ValueError(f"width must be at least 1, not {width!r}")
        if w_domain == r_domain:
            raise ValueError(f"a crossing needs two domains, not {w_domain!r} twice")
        self.width = width
        self.w_domain, self.r_domain = w_domain, r_domain
        super().__init__({"w_data": In(width), "w_en": In(1), "w_rdy": Out(1),
                          "r_data": Out(width), "r_en": In(1), "r_rdy": Out(1)})

    def elaborate(self, platform):
        m = Module()
        w, r = self.w_domain, self.r_domain
        held = Signal(self.width, reset_less=True)
        request, acknowledge = Signal(), Signal()
        request_seen, acknowledge_seen = Signal(), Signal()
        m.submodules.request_sync = FFSynchronizer(request, request_seen, o_domain=r)
        m.submodules.acknowledge_sync = FFSynchronizer(acknowledge, acknowledge_seen,
                                                       o_domain=w)

        # ``pushed``: a write was sampled last clock. A write needs ``free``, which then
        # holds until the request flips (no request is pending, so ``acknowledge`` does
        # not move): ``pushed`` alone moves the entry into ``held``, in copies of 64 bits
        # each (:func:`hw.arith.stages.kept_copies`). With ``pushed & free`` as the
        # enable of all 372 bits, that LUT's net (4.8 ns) was the two-clock LDA core's
        # datapath critical path on one placement (``docs/HARDWARE.md``).
        pieces = range(0, self.width, 64)
        write = self.w_en & self.w_rdy
        pushed = Signal()
        copies = kept_copies(m, write, len(pieces), name="pushed", domain=w)
        sampled = Signal(self.width, reset_less=True)
        m.d[w] += [pushed.eq(write), sampled.eq(self.w_data)]
        free = request == acknowledge_seen
        m.d.comb += self.w_rdy.eq(free & ~pushed)
        with m.If(pushed):
            m.d[w] += request.eq(~request)
        for lo, copy in zip(pieces, copies):
            with m.If(copy):
                m.d[w] += held[lo: lo + 64].eq(sampled[lo: lo + 64])

        out = Signal(self.width, reset_less=True)
        out_valid = Signal()
        pending = request_seen != acknowledge
        with m.If(~out_valid):
            # Copied every clock while empty; counted only once ``pending`` says ``held``
            # has settled.
            m.d[r] += out_valid.eq(pending)
            with m.If(pending):
                m.d[r] += acknowledge.eq(~acknowledge)
        with m.Elif(self.r_en):
            m.d[r] += out_valid.eq(0)
        # The output register's enables: copies of ``out_valid`` (each a register of its
        # next value), one per 64 bits. With ``out_valid`` itself the enable of the whole
        # entry, its net (7.3–7.6 ns, to an export's key) was the control clock's critical
        # path of the two-clock LDA and OPA cores on one placement each
        # (``docs/HARDWARE.md``).
        valid_next = Signal()
        m.d.comb += valid_next.eq(Mux(out_valid, ~self.r_en, pending))
        valids = kept_copies(m, valid_next, len(pieces), name="out_valid", reset_less=False,
                             domain=r)
        for lo, valid in zip(pieces, valids):
            with m.If(~valid):
                m.d[r] += out[lo: lo + 64].eq(held[lo: lo + 64])
        m.d.comb += [self.r_data.eq(out), self.r_rdy.eq(out_valid)]
        return m


def split_entry(m, data, targets):
    """Drive each of ``targets`` (in order, lowest bits first) from its slice of ``data``,
    an entry's ``r_data`` laid out as ``Cat(*targets)``."""
    offset = 0
    for target in targets:
        m.d.comb += target.eq(data[offset: offset + len(target)])
        offset += len(target)

# SPDX-License-Identifier: BSD-2-Clause
"""A frame stream from one clock domain into another, stored and forwarded.

Where it sits (``docs/DESIGN.md``, "Clock domains"): between the frame sources that run in
the control domain of a two-domain core (the exporter's ports,
:class:`hw.inband.exporter_crossing.ExporterCrossing`; the marker source,
:class:`hw.inband.marker_crossing.MarkerSourceCrossing`) and the frame merger on the
datapath clock. A frame's beats go into an :class:`amaranth.lib.fifo.AsyncFIFOBuffered`
that holds a whole frame, and a token (one entry per frame, written one writer clock after
the frame's last beat) tells the reading side that the frame is complete, so a frame
leaves on consecutive clocks whatever the two clocks' ratio: the merger's output never has
a gap inside a frame.

Hand-written: ``amaranth.lib.fifo`` crosses words, not whole frames, and neither LiteX's
``stream.ClockDomainCrossing`` nor amaranth-soc has a store-and-forward crossing.
"""

from amaranth.hdl import DomainRenamer, ResetSignal, Signal
from amaranth.lib.fifo import AsyncFIFOBuffered

from hw.arith.stages import kept_reset_domain
from hw.frames.frame import RegisterSlice, frame_beat_layout

__all__ = ["FrameDepths", "frame_depths", "store_and_forward"]


class FrameDepths:
    """The depths of a crossing for frames of ``longest`` .. ``shortest`` beats: the beat
    FIFO holds the longest frame (a power of two, at least 2), the token FIFO one token per
    frame the beat FIFO can hold (its registered read side holds one token more)."""

    def __init__(self, *, longest: int, shortest: int):
        if not 1 <= shortest <= longest:
            raise ValueError(f"need 1 <= shortest <= longest beats, not {shortest}, {longest}")
        self.frame_beats = longest
        self.beat_depth = max(2, 1 << (longest - 1).bit_length())
        self.token_depth = 1 << (self.beat_depth // shortest + 1).bit_length()


def frame_depths(*, longest_bytes: int, shortest_bytes: int, data_width: int) -> FrameDepths:
    """:class:`FrameDepths` of frames of ``longest_bytes`` .. ``shortest_bytes`` bytes on a
    ``data_width``-bit stream."""
    lanes = data_width // 8
    return FrameDepths(longest=-(-longest_bytes // lanes), shortest=-(-shortest_bytes // lanes))


def store_and_forward(m, source, port, *, depths: FrameDepths, data_width: int,
                      w_domain: str, r_domain: str, name: str):
    """Connect the frame stream ``source`` (driven in ``w_domain``) to ``port`` (read in
    ``r_domain``) through a beat FIFO and a token FIFO, then a register slice (submodules
    ``<name>_beats``, ``<name>_tokens`` and ``<name>_slice``). Returns the ``r_domain``
    strobe of a frame's last beat leaving through ``port``."""
    # Both read sides are registered (``r_rdy`` a flip-flop): unbuffered, the token FIFO's
    # pointer comparison and the beat FIFO's read pointer update were one path, the
    # two-clock LDS core's datapath critical path on ECP5 (10 LUT levels), and the beat
    # FIFO's pointer comparison into the port's ``valid`` that of one LDA placement.
    # Written in a domain of their own (``w_domain``'s clock, its reset a clock longer):
    # each crossing's FIFOs then synchronise the write side's reset into ``r_domain``
    # beside them, not through one flip-flop shared by every crossing
    # (:func:`hw.arith.stages.kept_reset_domain`).
    fifo_w = kept_reset_domain(m, w_domain, name=f"{name}_write")
    beats = AsyncFIFOBuffered(width=frame_beat_layout(data_width).size,
                              depth=depths.beat_depth + 1, w_domain=fifo_w,
                              r_domain=r_domain, exact_depth=True)
    tokens = AsyncFIFOBuffered(width=1, depth=depths.token_depth + 1, w_domain=fifo_w,
                               r_domain=r_domain, exact_depth=True)
    m.submodules[f"{name}_beats"] = beats
    m.submodules[f"{name}_tokens"] = tokens
    # No beat is taken while the FIFOs' own reset lasts (it outlasts ``w_domain``'s by a
    # clock, and a FIFO in reset shows ``w_rdy`` but keeps nothing).
    ready = Signal(name=f"{name}_write_ready")
    ended = Signal(name=f"{name}_frame_written")
    m.d[w_domain] += ended.eq(source.valid & ready & source.payload.last)
    m.d.comb += [ready.eq(beats.w_rdy & ~ResetSignal(fifo_w)),
                 beats.w_en.eq(source.valid & ready), beats.w_data.eq(source.payload),
                 source.ready.eq(ready),
                 tokens.w_en.eq(ended), tokens.w_data.eq(0)]
    # The frames leave through a register slice: the reader's ready (the frame merger's
    # grant) loads the slice, not the beat FIFO's read enable and through it the read
    # data register of every bit (the merger's grant → the marker crossing's read data
    # was the datapath critical path of two-clock LDA and LDS cores on ECP5). The slice
    # keeps a frame's beats on consecutive clocks.
    out = RegisterSlice(data_width=data_width)
    m.submodules[f"{name}_slice"] = DomainRenamer({"sync": r_domain})(out)
    entering = Signal(name=f"{name}_frame_entering")
    leaving = Signal(name=f"{name}_frame_leaving")
    m.d.comb += [out.sink.valid.eq(tokens.r_rdy & beats.r_rdy),
                 out.sink.payload.eq(beats.r_data),
                 beats.r_en.eq(out.sink.ready & tokens.r_rdy),
                 entering.eq(out.sink.valid & out.sink.ready & out.sink.payload.last),
                 tokens.r_en.eq(entering),
                 port.valid.eq(out.source.valid), port.payload.eq(out.source.payload),
                 out.source.ready.eq(port.ready),
                 leaving.eq(port.valid & port.ready & port.payload.last)]
    return leaving

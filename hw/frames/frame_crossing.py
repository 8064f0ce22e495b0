# SPDX-License-Identifier: BSD-2-Clause
"""A frame stream from one clock domain into another, stored and forwarded.

Where it sits (``docs/DESIGN.md``, "Clock domains"): between the frame sources that run in
the control domain of a two-domain core (the exporter's ports,
:class:`hw.inband.exporter_crossing.ExporterCrossing`; the marker source,
:class:`hw.inband.marker_crossing.MarkerSourceCrossing`) and the frame merger on the
datapath clock. A frame's beats go into a clock-crossing FIFO
(:class:`hw.arith.async_fifo.RegisteredAsyncFIFO`) that holds a whole frame, and a token
(one entry per frame, written one writer clock after the frame's last beat) tells the
reading side that the frame is complete, so a frame leaves on consecutive clocks whatever
the two clocks' ratio: the merger's output never has a gap inside a frame.

Hand-written: ``amaranth.lib.fifo`` crosses words, not whole frames, and neither LiteX's
``stream.ClockDomainCrossing`` nor amaranth-soc has a store-and-forward crossing.
"""

from amaranth.hdl import DomainRenamer, Signal

from hw.arith.async_fifo import RegisteredAsyncFIFO
from hw.arith.stages import kept_reset_domain
from hw.frames.frame import RegisterSlice, frame_beat_layout

__all__ = ["FrameDepths", "frame_depths", "store_and_forward"]


class FrameDepths:
    """The depths of a crossing for frames of ``longest`` .. ``shortest`` beats: the beat
    FIFO holds the longest frame (a power of two, at least 2), the token FIFO a token per
    frame the beat FIFO can hold and more (the writer takes no beat while it is full)."""

    def __init__(self, *, longest: int, shortest: int):
        if not 1 <= shortest <= longest:
            raise ValueError(f"need 1 <= shortest <= longest beats, not {shortest}, {longest}")
        self.frame_beats = longest
        self.shortest = shortest
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
    # The FIFOs' flags are registers and their pointers' next values ready
    # (:class:`hw.arith.async_fifo.RegisteredAsyncFIFO`): with
    # :class:`amaranth.lib.fifo.AsyncFIFOBuffered` here, the read pointers' comparison,
    # increment and encoding in one clock was the datapath critical path of the two-clock
    # LDA, RDA and LDS cores on ECP5 in seven of nine seeds.
    # Written in a domain of their own (``w_domain``'s clock, its reset a clock longer):
    # each crossing's FIFOs then synchronise the write side's reset into ``r_domain``
    # beside them, not through one flip-flop shared by every crossing
    # (:func:`hw.arith.stages.kept_reset_domain`).
    fifo_w = kept_reset_domain(m, w_domain, name=f"{name}_write")
    beats = RegisteredAsyncFIFO(width=frame_beat_layout(data_width).size,
                                depth=depths.beat_depth, w_domain=fifo_w, r_domain=r_domain)
    tokens = RegisteredAsyncFIFO(width=1, depth=depths.token_depth, w_domain=fifo_w,
                                 r_domain=r_domain)
    m.submodules[f"{name}_beats"] = beats
    m.submodules[f"{name}_tokens"] = tokens
    # A token is written a clock after its frame's last beat, unchecked: the writer takes
    # no beat while the token FIFO is full, and its ``w_rdy`` falls only at a token's
    # write. A frame of two beats or more cannot end in the clock the previous token is
    # written; where a frame can be one beat, no beat is taken in that clock.
    ended = Signal(name=f"{name}_frame_written")
    ready = Signal(name=f"{name}_write_ready")
    m.d[w_domain] += ended.eq(source.valid & ready & source.payload.last)
    m.d.comb += [ready.eq(beats.w_rdy & tokens.w_rdy
                          & (~ended if depths.shortest == 1 else 1)),
                 beats.w_en.eq(source.valid & ready), beats.w_data.eq(source.payload),
                 source.ready.eq(ready),
                 tokens.w_en.eq(ended), tokens.w_data.eq(0)]
    # The frames leave through a register slice: the reader's ready (the frame merger's
    # grant) loads the slice, not the beat FIFO's read enable and through it the read
    # pointer (the merger's grant → the marker crossing's read data was the datapath
    # critical path of two-clock LDA and LDS cores on ECP5). The slice keeps a frame's
    # beats on consecutive clocks.
    # A frame's token is taken with its first beat; ``inside`` then lets the rest follow
    # (it ends with the last beat). So the token FIFO's read enable is of registers only,
    # not of the beat memory's output (``last``), which it was with the token taken at
    # the last beat.
    out = RegisterSlice(data_width=data_width)
    m.submodules[f"{name}_slice"] = DomainRenamer({"sync": r_domain})(out)
    inside = Signal(name=f"{name}_inside_frame")
    released = Signal(name=f"{name}_frame_released")
    entering = Signal(name=f"{name}_beat_entering")
    leaving = Signal(name=f"{name}_frame_leaving")
    m.d.comb += [released.eq(tokens.r_rdy | inside),
                 out.sink.valid.eq(released & beats.r_rdy),
                 out.sink.payload.eq(beats.r_data),
                 beats.r_en.eq(out.sink.ready & released),
                 entering.eq(out.sink.valid & out.sink.ready),
                 tokens.r_en.eq(entering & ~inside)]
    with m.If(entering):
        m.d[r_domain] += inside.eq(~out.sink.payload.last)
    m.d.comb += [port.valid.eq(out.source.valid), port.payload.eq(out.source.payload),
                 out.source.ready.eq(port.ready),
                 leaving.eq(port.valid & port.ready & port.payload.last)]
    return leaving

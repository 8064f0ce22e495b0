# SPDX-License-Identifier: BSD-2-Clause
"""The frame inserter: puts marker and export frames into a frame stream between frames.

Where it sits (``DESIGN.md``): the "mux" before "frames out", with "markers / export
frames" as its second input. It switches only between frames: a data frame in progress
always completes first; the inserted frame then goes out while the data input is held
(``sink.ready`` low), and the pass-through resumes. Data frames are never altered,
dropped or reordered.

Latency: the mux is combinational (zero added latency, ``sink.ready`` follows
``source.ready``). A data path built as *pass-through → inserter* therefore keeps the
pass-through's fixed latency **except while an inserted frame is being sent** (and while a
data beat waits behind one): those beats leave later by the inserted frame's duration.

Wiring for marker mode (see :mod:`hw.interval_control`): put the inserter at the core's
*input* (``s_axis`` → inserter → tap watch and pass-through), so the inserted marker
passes the sender's own tap like any frame (it is a control frame, never counted) and the
swap requested at :attr:`FrameInserter.inserted_sof` falls between exactly the data
frames the marker falls between.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .frame import FrameStream, check_data_width

__all__ = ["FrameInserter"]


class FrameInserter(wiring.Component):
    """Merges whole frames of ``insert`` into the ``sink`` → ``source`` frame stream.

    Parameters
    ----------
    data_width:
        Frame stream width in bits.

    Members
    -------
    sink: In(FrameStream(data_width))
        Data frames.
    insert: In(FrameStream(data_width))
        Frames to insert (markers, export frames).
    source: Out(FrameStream(data_width))
        Both, whole frames interleaved; the payload of each beat is passed unaltered.
    inserted_sof: Out(1)
        The first beat of an inserted frame transfers on ``source`` this cycle.
    inserted_eof: Out(1)
        The last beat of an inserted frame transfers on ``source`` this cycle.

    Arbitration: between frames (no frame open on ``source`` and no beat presented but
    not yet taken), an ``insert`` frame waiting goes first, except right after an inserted
    frame when a data frame is waiting: then data and inserted frames alternate, so a
    long export cannot starve the data path and a marker waits for at most one data
    frame. The selection is held from a beat's first presentation until its transfer (the
    stream rules: valid and payload hold until the transfer).
    """

    def __init__(self, *, data_width: int):
        check_data_width(data_width)
        self.data_width = data_width
        super().__init__({
            "sink": In(FrameStream(data_width)),
            "insert": In(FrameStream(data_width)),
            "source": Out(FrameStream(data_width)),
            "inserted_sof": Out(1),
            "inserted_eof": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        in_frame = Signal()         # a frame is open on `source`
        held = Signal()             # `source` showed a beat last cycle that did not transfer
        selected = Signal()         # 1 = insert, as of last cycle
        last_was_insert = Signal()  # the previous complete frame was an inserted one
        choose = Signal()           # 1 = insert, this cycle

        with m.If(in_frame | held):
            m.d.comb += choose.eq(selected)
        with m.Elif(last_was_insert & self.sink.valid):
            m.d.comb += choose.eq(0)
        with m.Else():
            m.d.comb += choose.eq(self.insert.valid)

        m.d.comb += [
            self.source.valid.eq(Mux(choose, self.insert.valid, self.sink.valid)),
            self.source.payload.eq(Mux(choose, self.insert.payload.as_value(),
                                      self.sink.payload.as_value())),
            self.sink.ready.eq(self.source.ready & ~choose),
            self.insert.ready.eq(self.source.ready & choose),
        ]
        transfer = self.source.valid & self.source.ready
        last = self.source.payload.last
        m.d.comb += [
            self.inserted_sof.eq(transfer & choose & ~in_frame),
            self.inserted_eof.eq(transfer & choose & last),
        ]
        m.d.sync += [selected.eq(choose), held.eq(self.source.valid & ~self.source.ready)]
        with m.If(transfer):
            m.d.sync += in_frame.eq(~last)
            with m.If(last):
                m.d.sync += last_was_insert.eq(choose)
        return m

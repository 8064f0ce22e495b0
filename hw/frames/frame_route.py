# SPDX-License-Identifier: BSD-2-Clause
"""The frame route: one frame stream to one of two outputs, chosen per whole frame.

Where it sits: OPA's record frames (:class:`hw.opa.opa_path.OpaPath`) go either to the
frame merger's insert input (the measured stream's output) or to the host export port
(merged there with the exporter's frames), as OPA_RECORD_CONTROL.to_export says. The
choice is taken when a frame's first beat is offered and held until its last beat has
left, so a frame is never split and an offered beat (``valid``) is never withdrawn from
the output it was offered on: a change of ``select`` applies from the next frame on.
No register on the data path (the outputs' ``ready`` reaches the input through one
multiplexer).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.frames.frame import FrameStream, check_data_width

__all__ = ["FrameRoute"]


class FrameRoute(wiring.Component):
    """Whole frames of ``sink`` to ``source[select]``.

    Parameters
    ----------
    data_width : int
        Frame stream width in bits.

    Members
    -------
    sink : In(FrameStream(data_width))
    source : Out(FrameStream(data_width)).array(2)
        Output 0 (``select`` = 0) and output 1; each beat's payload unaltered.
    select : In(1)
        The output of the next frame (sampled when its first beat is offered).
    """

    def __init__(self, *, data_width: int):
        check_data_width(data_width)
        self.data_width = data_width
        super().__init__({
            "sink": In(FrameStream(data_width)),
            "source": Out(FrameStream(data_width)).array(2),
            "select": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        sink = self.sink
        held = Signal()             # a frame's first beat has been offered, its last not taken
        held_select = Signal()
        route = Mux(held, held_select, self.select)
        ready = Mux(route, self.source[1].ready, self.source[0].ready)
        m.d.comb += sink.ready.eq(ready)
        for k, out in enumerate(self.source):
            m.d.comb += [out.payload.eq(sink.payload),
                         out.valid.eq(sink.valid & (route == k))]
        with m.If(sink.valid & ready & sink.payload.last):
            m.d.sync += held.eq(0)
        with m.Elif(sink.valid & ~held):
            m.d.sync += [held.eq(1), held_select.eq(self.select)]
        return m

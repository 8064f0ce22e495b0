# SPDX-License-Identifier: BSD-2-Clause
"""The frame merger: the core's data frames and its own marker / export frames, one stream.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): the "mux" before "frames
out", with "markers / export frames" as its other inputs, merged with the pass-through
register of the core. It switches only between frames: a frame in progress always
completes first; an inserted frame goes out while the data input is held (``sink.ready``
low), and the pass-through resumes. Data frames are never altered, dropped or reordered.

It is built for the core's clock (≥ 250 MHz on ECP5): the output is a register with a
skid register (like :class:`hw.frames.frame.RegisterSlice`), so every input's ``ready`` is two
registers ANDed, and the input selection (``grant``) is a one-hot register that changes
only between frames, so the payload multiplexer's selects come straight from flip-flops.
The price is that a choice is made one cycle ahead: when the granted input has no frame
waiting at a frame boundary, the merger re-arbitrates and a frame on another input starts
one cycle later.

Arbitration (input 0 = ``sink``, the data frames; inputs 1.. = ``insert[0]``,
``insert[1]``, … in priority order): after a data frame, the first insert input with a
frame waiting goes next, else data; after an inserted frame, data goes next if a data
frame is waiting, else the first insert input with a frame waiting. So data and inserted
frames alternate while both wait, a long export cannot starve the data path, and a frame
on ``insert[0]`` (the markers) waits for at most one data frame and one frame of each
other insert input.

Latency: a beat accepted in cycle ``t`` is valid on ``source`` in cycle ``t + 1`` unless
``source`` is stalled — the core's fixed pass-through latency of one cycle.

``watch`` (with ``watch_valid``) is a copy of every accepted beat, one cycle after its acceptance (so in the
cycle it enters the output register), with no backpressure: the measurement side watches
it (it sees exactly the frames that leave, in order), and ``inserted_sof`` /
``inserted_eof`` mark the first / last beat of each insert input's frames in it.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.frames.frame import FrameStream, check_data_width, frame_beat_layout

__all__ = ["FrameMerger"]


class FrameMerger(wiring.Component):
    """Merges whole frames of ``sink`` and ``insert[0..inserts-1]`` into ``source``.

    Parameters
    ----------
    data_width:
        Frame stream width in bits.
    inserts:
        Number of insert inputs (priority order).

    Members
    -------
    sink: In(FrameStream(data_width))
        Data frames.
    insert: In(FrameStream(data_width)).array(inserts)
        Frames to insert (markers, export frames).
    source: Out(FrameStream(data_width))
        All of them, whole frames interleaved; each beat's payload unaltered. Registered.
    watch_valid: Out(1)
    watch: Out(frame_beat_layout(data_width))
        Each accepted beat, one cycle after its acceptance (no backpressure).
    inserted_sof, inserted_eof: Out(inserts)
        With ``watch_valid``: bit ``j`` — this beat is the first / last beat of a frame
        from ``insert[j]``.
    """

    def __init__(self, *, data_width: int, inserts: int = 2):
        check_data_width(data_width)
        if not isinstance(inserts, int) or inserts < 1:
            raise ValueError(f"inserts must be a positive integer, not {inserts!r}")
        self.data_width = data_width
        self.inserts = inserts
        #: Cycles from an input transfer to ``source.valid`` when not stalled.
        self.latency = 1
        super().__init__({
            "sink": In(FrameStream(data_width)),
            "insert": In(FrameStream(data_width)).array(inserts),
            "source": Out(FrameStream(data_width)),
            "watch_valid": Out(1),
            "watch": Out(frame_beat_layout(data_width)),
            "inserted_sof": Out(inserts),
            "inserted_eof": Out(inserts),
        })

    def elaborate(self, platform):
        m = Module()
        inputs = [self.sink, *self.insert]
        grant = Signal(len(inputs), init=1)   # one-hot: the input whose beats are taken
        in_frame = Signal()             # a frame is open (its first beat was accepted)
        skid_valid = Signal()
        payload = Signal.like(self.sink.payload)    # the granted input's beat (AND-OR)
        offered = Signal()                          # ... and its valid
        m.d.comb += offered.eq((Cat(*(s.valid for s in inputs)) & grant).any())
        terms = [s.payload.as_value() & grant[k].replicate(len(payload.as_value()))
                 for k, s in enumerate(inputs)]
        merged = terms[0]
        for t in terms[1:]:
            merged = merged | t
        m.d.comb += payload.eq(merged)

        accept = Signal()
        m.d.comb += accept.eq(offered & ~skid_valid)
        for k, s in enumerate(inputs):
            m.d.comb += s.ready.eq(grant[k] & ~skid_valid)
        self._output(m, payload, offered, accept, skid_valid)
        self._watch_copy(m, payload, accept, grant, in_frame)
        self._arbitrate(m, inputs, grant, in_frame, skid_valid, offered, accept, payload)
        return m

    def _output(self, m, payload, offered, accept, skid_valid):
        """The output register and its skid register (as :class:`hw.frames.frame.RegisterSlice`).
        Payload registers have no reset: read only with their valid bits."""
        skid = Signal.like(self.sink.payload, reset_less=True, name="skid")
        out_payload = Signal.like(self.sink.payload, reset_less=True, name="out_payload")
        out = self.source
        m.d.comb += out.payload.eq(out_payload)
        with m.If(~out.valid | out.ready):
            with m.If(skid_valid):
                m.d.sync += [out_payload.eq(skid), out.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [out_payload.eq(payload), out.valid.eq(offered)]
        with m.Elif(accept):
            m.d.sync += skid_valid.eq(1)
        with m.If(~skid_valid):
            m.d.sync += skid.eq(payload)

    def _watch_copy(self, m, payload, accept, grant, in_frame):
        """The registered copy of every accepted beat, with the inserted frames' SOF and
        EOF strobes."""
        n = len(grant)
        watch_payload = Signal.like(self.sink.payload, reset_less=True, name="watch_payload")
        m.d.comb += self.watch.eq(watch_payload)
        last = payload.last
        m.d.sync += [
            self.watch_valid.eq(accept),
            watch_payload.eq(payload),
            self.inserted_sof.eq(Cat(accept & grant[k] & ~in_frame for k in range(1, n))),
            self.inserted_eof.eq(Cat(accept & grant[k] & last for k in range(1, n))),
        ]

    def _arbitrate(self, m, inputs, grant, in_frame, skid_valid, offered, accept, payload):
        """The next grant, registered: data and inserted frames alternate when both wait."""
        n = len(inputs)
        last_was_insert = Signal()      # the last complete frame came from an insert input
        # The first insert input with a frame waiting, one-hot over all inputs (0 if none).
        waiting = Cat(s.valid for s in inputs)
        first_insert = Signal(n)
        found = 0
        for k in range(1, n):
            m.d.comb += first_insert[k].eq(waiting[k] & ~found)
            found = found | waiting[k]
        any_insert = waiting[1:].any()
        data_grant = Const(1, n)
        after_data = Signal(n)          # the choice after a data frame
        after_insert = Signal(n)        # the choice after an inserted frame
        m.d.comb += [
            after_data.eq(first_insert | (~any_insert).replicate(n) & data_grant),
            after_insert.eq((waiting[0] | ~any_insert).replicate(n) & data_grant
                            | (~waiting[0]).replicate(n) & first_insert),
        ]
        # "The granted input's frame ends now", from each input's own valid and last
        # (one LUT each) rather than through the granted payload's multiplexer (one LUT
        # level less into the grant).
        ends = Cat(s.valid & s.payload.last for s in inputs)
        frame_ends = (ends & grant).any() & ~skid_valid
        with m.If(accept):
            m.d.sync += in_frame.eq(~payload.last)
        with m.If(frame_ends):
            m.d.sync += [last_was_insert.eq(~grant[0]),
                         grant.eq(Mux(grant[0], after_data, after_insert))]
        with m.Elif(~in_frame & ~offered):
            # Between frames with nothing on the granted input: choose again.
            m.d.sync += grant.eq(Mux(last_was_insert, after_insert, after_data))

# SPDX-License-Identifier: BSD-2-Clause
"""RLI's sender: reference frames (type 3) carrying their send tick and a sequence
number, inserted at the configured rate.

Where it sits (docs/DESIGN.md, "Data flow of a packet"; docs/SPEC.md "RLI"): beside the
marker source, one more insert input of the frame merger (:mod:`hw.frames.frame_merger`), which
puts an inserted frame between data frames and holds data for at most that one frame.
The frame is :func:`host_sw.contracts.frames.reference_frame.build_reference` byte for byte:
the control header (:func:`hw.inband.control_frame_tx.control_header`) with ``type`` 3, the
SipHash-2-4 tag (:class:`hw.inband.siphash.SipHash`, zero key or AUTH_KEY) and zero padding.

Rate (run-time inputs, the RLI registers): one reference after every ``every_packets``-th
counted data frame (``counted`` pulses, one per counted frame), and/or one each
``period_ticks`` of the timebase (0 turns a rule off). A trigger while a reference is
still being built or waits in the merger is held (one) and starts the next reference as
soon as that one has left; a further one is merged into it (``merged`` counts them).

Send tick: the frame's first beat can leave no earlier than :data:`STAMP_AHEAD` cycles
after its trigger (the tag's latency), so the stamp is ``now + STAMP_AHEAD``. A data
frame already going out delays the reference by at most its own length, and that much
is added to the reference's measured delay (docs/SPEC.md "RLI": at most one maximum
frame; 12 µs at 1 Gb/s for 1518 bytes).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from host_sw.contracts.config import KIND_CODES, RliConfig
from host_sw.contracts.frames.reference_frame import REFERENCE_FRAME_BYTES, TYPE_REFERENCE
from host_sw.contracts.siphash import KEY_BYTES, TAG_BYTES

from hw.inband.control_frame_tx import HEADER_BYTES, control_header
from hw.frames.frame import FrameStream, RegisterSlice, check_data_width
from hw.inband.siphash import SipHash, header_feed

__all__ = ["ReferenceFrameSource", "STAMP_AHEAD"]

#: Cycles from a trigger to the reference's first beat on the merger's output when the
#: merger is free: the stamp and header registers (2), the tag over the 48-byte header
#: (43), the slice (1) and the merger's arbitration and output registers (2)
#: (``tests/hw/rli/test_hw_reference_source.py`` measures it).
STAMP_AHEAD = 48


class ReferenceFrameSource(wiring.Component):
    """Builds and offers RLI reference frames (module docstring for the contract).

    Parameters
    ----------
    config : RliConfig
    data_width : int

    Members
    -------
    counted : In(1)
        One pulse per counted data frame of the sender's stream.
    now : In(64)
        The timebase.
    every_packets : In(32), period_ticks : In(64)
        The rate rules (0: off).
    src_mac, dst_mac : In(48); config_id : In(32); key : In(128); auth : In(1)
        As for the marker source (:class:`hw.inband.marker_source.MarkerFrameSource`).
    source : Out(FrameStream(data_width))
        The reference frames (to a merger insert input).
    sent, merged : Out(32)
        References sent; triggers merged into one already held.
    """

    def __init__(self, *, config, data_width: int):
        if not isinstance(config, RliConfig):
            raise ValueError(f"config must be an RliConfig, not {type(config).__name__}")
        check_data_width(data_width)
        self.config = config
        self.data_width = data_width
        self.beats = -(-REFERENCE_FRAME_BYTES // (data_width // 8))
        super().__init__({
            "counted": In(1), "now": In(64),
            "every_packets": In(32), "period_ticks": In(64),
            "src_mac": In(48), "dst_mac": In(48), "config_id": In(32),
            "key": In(8 * KEY_BYTES), "auth": In(1),
            "source": Out(FrameStream(data_width)),
            "sent": Out(32), "merged": Out(32),
        })

    def _elaborate_trigger(self, m):
        """The rate rules; returns the trigger strobe, registered: a clock after the
        counted frame, two after the timebase passes the deadline (it is compared as a
        registered copy). Why: the timebase reaches the whole core, and its net, the
        64-bit deadline compare and the stamp's enables in one clock were the RLI core's
        datapath limit on both routed placements (docs/CHANGES.md). The stamp is taken
        from the timebase itself when the registered trigger starts the frame, so it
        stays exact (:data:`STAMP_AHEAD` counts from there)."""
        since = Signal(32)
        due = Signal(64)
        now = Signal(64, reset_less=True)  # the timebase a clock late, beside the compare
        armed = Signal()               # ``due`` holds a deadline of the current period
        by_count, by_time = Signal(), Signal()
        m.d.sync += now.eq(self.now)
        with m.If(self.counted & (self.every_packets != 0)):
            with m.If(since + 1 >= self.every_packets):
                m.d.comb += by_count.eq(1)
                m.d.sync += since.eq(0)
            with m.Else():
                m.d.sync += since.eq(since + 1)
        with m.If(self.period_ticks == 0):
            m.d.sync += armed.eq(0)
        with m.Elif(~armed):
            m.d.sync += [due.eq(now + self.period_ticks), armed.eq(1)]
        with m.Elif(now >= due):
            m.d.comb += by_time.eq(1)
            m.d.sync += due.eq(due + self.period_ticks)
        trigger = Signal()
        m.d.sync += trigger.eq(by_count | by_time)
        return trigger

    def elaborate(self, platform):
        m = Module()
        w, lanes = self.data_width, self.data_width // 8
        trigger = self._elaborate_trigger(m)
        seq, stamp = Signal(32), Signal(64)
        header = control_header(m, {
            "dst_mac": self.dst_mac, "src_mac": self.src_mac, "type": TYPE_REFERENCE,
            "kind": KIND_CODES[self.config.kind], "seq": seq, "config_id": self.config_id,
            "word_chunks": self.config.layout.chunks, "timestamp": stamp,
            "auth": self.auth})
        frame = Signal(8 * lanes * self.beats, reset_less=True)
        remaining = Signal(range(self.beats + 1))
        last_keep = (1 << (REFERENCE_FRAME_BYTES - lanes * (self.beats - 1))) - 1
        m.submodules.slice = out = RegisterSlice(data_width=w)
        connect(m, out.source, flipped(self.source))
        idle, loading, tagging = Signal(init=1), Signal(), Signal()
        m.submodules.engine = engine = SipHash()
        m.d.comb += [
            engine.key.eq(Mux(self.auth, self.key, 0)),
            engine.start.eq(loading),
        ]
        # The header's words, loaded with ``frame``.
        header_feed(m, engine, header[:8 * HEADER_BYTES], load=loading, start=loading,
                    name="header")
        pending = Signal()             # one trigger waits while a reference is out
        with m.If(trigger & ~idle):
            m.d.sync += pending.eq(1)
            with m.If(pending):
                m.d.sync += self.merged.eq(self.merged + 1)
        with m.If(idle):
            with m.If(trigger | pending):  # stamp first, the header a cycle later
                m.d.sync += [stamp.eq(self.now + STAMP_AHEAD), idle.eq(0), loading.eq(1),
                             pending.eq(0)]
        with m.Elif(loading):
            m.d.sync += [frame.eq(header), loading.eq(0), tagging.eq(1),
                         remaining.eq(self.beats)]
        with m.Elif(tagging):
            with m.If(engine.done):
                m.d.sync += [frame[8 * HEADER_BYTES: 8 * (HEADER_BYTES + TAG_BYTES)].eq(
                    engine.tag), tagging.eq(0)]
        with m.Elif(out.sink.ready):
            m.d.sync += [frame.eq(frame >> w), remaining.eq(remaining - 1)]
            with m.If(remaining == 1):
                m.d.sync += [idle.eq(1), seq.eq(seq + 1), self.sent.eq(self.sent + 1)]
        m.d.comb += [
            out.sink.valid.eq(~idle & ~loading & ~tagging),
            out.sink.payload.data.eq(frame[:w]),
            out.sink.payload.last.eq(remaining == 1),
            out.sink.payload.keep.eq(Mux(remaining == 1, last_keep, (1 << lanes) - 1)),
            out.sink.payload.error.eq(0),
        ]
        return m

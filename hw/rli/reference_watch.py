# SPDX-License-Identifier: BSD-2-Clause
"""RLI's receiver front: which tap records are reference frames, and their send tick.

Where it sits (docs/DESIGN.md; docs/SPEC.md "RLI"): header tap (:mod:`hw.frames.header_tap`,
one record per frame: window, class, arrival tick) ► **this watch** ► the RLI receiver
(:class:`hw.rli.receiver.RliReceiver`: reference frames to the interpolation, counted
data frames to the buffer). A reference frame is a control frame (class CONTROL) whose
header (:mod:`host_sw.contracts.frames.reference_frame`) has this format's version, ``type`` 3
and the RLI kind code; its ``timestamp`` field is the send tick. The header must lie in
the tap's window (``window_bytes`` ≥ 48).

The frame's source, configuration ID and SipHash tag are checked before the tap sees
it: in a core (:class:`hw.rli.rli_path.RliPath`) a :class:`hw.inband.marker_watch.MarkerWatch` for
type 3 checks them on the core's undelayed watch copy of the stream, and its verdict
reaches ``tag_ok`` in the cycle of the frame's tap record. A reference whose verdict is
not good (tag, source, configuration ID or ``auth`` byte; or the check unit was still
busy with the previous reference) is not used as a reference and is counted in
``references_bad_tag``; the frame is then neither a reference nor counted data.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config import KIND_CODES
from host_sw.contracts.frames.frame_format import PAYLOAD_OFFSET, VERSION
from host_sw.contracts.hashing import FrameClass
from host_sw.contracts.frames.reference_frame import TYPE_REFERENCE

from hw.inband.control_frame_tx import header_field
from hw.frames.header_tap import TapRecord

__all__ = ["ReferenceWatch"]


class ReferenceWatch(wiring.Component):
    """Classifies tap records for RLI, one cycle later (module docstring).

    Parameters
    ----------
    window_bytes : int (≥ 48), ts_bits : int

    Members
    -------
    record : In(TapRecord(window_bytes, ts_bits))
    tag_ok : In(1)
        With a reference's record: its check passed (module docstring). 1 when not
        driven (standalone use: every reference is taken).
    valid : Out(1)
        A reference frame (``is_ref``) or a counted data frame (IPv4/IPv6) this cycle.
    is_ref : Out(1); arrival, send : Out(ts_bits)
        The record's tick; a reference's carried send tick (low ``ts_bits`` bits).
    references_seen : Out(32)
        References taken (counted two cycles after the record).
    references_bad_tag : Out(32)
        References not taken: their check failed (counted two cycles after the record).
    """

    def __init__(self, *, window_bytes: int, ts_bits: int):
        if not isinstance(window_bytes, int) or window_bytes < PAYLOAD_OFFSET:
            raise ValueError(f"window_bytes must be at least {PAYLOAD_OFFSET} (the "
                             f"reference header), not {window_bytes!r}")
        self.window_bytes, self.ts_bits = window_bytes, ts_bits
        super().__init__({
            "record": In(TapRecord(window_bytes, ts_bits)),
            "tag_ok": In(1, init=1),
            "valid": Out(1), "is_ref": Out(1),
            "arrival": Out(ts_bits), "send": Out(ts_bits),
            "references_seen": Out(32), "references_bad_tag": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        rec = self.record.payload
        header = rec.window[:8 * PAYLOAD_OFFSET]
        is_ref, looks_ref = Signal(), Signal()
        m.d.comb += is_ref.eq(looks_ref & self.tag_ok)
        m.d.comb += looks_ref.eq(
            (rec.frame_class == FrameClass.CONTROL)
            & (header_field(header, "version") == VERSION)
            & (header_field(header, "type") == TYPE_REFERENCE)
            & (header_field(header, "kind") == KIND_CODES["rli"]))
        counted = (rec.frame_class == FrameClass.IPV4) | (rec.frame_class == FrameClass.IPV6)
        m.d.sync += [
            self.valid.eq(self.record.valid & (is_ref | counted)),
            self.is_ref.eq(is_ref),
            self.arrival.eq(rec.timestamp),
            self.send.eq(header_field(header, "timestamp")[:self.ts_bits]),
        ]
        # The counts count registered strobes, a clock later: the record's class and
        # header, from the tap's registers across the die, reach one flip-flop each
        # instead of the enables of a 32-bit count (the path from the tap's runt flag to
        # the bad-tag count was the RLI core's datapath critical path on one placement,
        # ``docs/HARDWARE.md``).
        seen, bad = Signal(), Signal()
        m.d.sync += [seen.eq(self.record.valid & is_ref),
                     bad.eq(self.record.valid & looks_ref & ~self.tag_ok)]
        with m.If(seen):
            m.d.sync += self.references_seen.eq(self.references_seen + 1)
        with m.If(bad):
            m.d.sync += self.references_bad_tag.eq(self.references_bad_tag + 1)
        return m

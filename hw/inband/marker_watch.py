# SPDX-License-Identifier: BSD-2-Clause
"""The receiver's marker check: which frames of the watched stream are markers from the
configured sender that end an interval.

Where it sits (``docs/DESIGN.md``, "Data flow of a counter"): inside the "interval
control" box (:class:`hw.interval.interval_control.IntervalControl`, mode 3 marker receive), on
the merger's watch copy of the stream. It checks a marker's header (EtherType, type,
version, configuration ID, source MAC, ``auth`` byte), its length (at least the 60 bytes
of its format: a runt is rejected) and its SipHash-2-4 tag (:class:`hw.inband.siphash.SipHash`,
docs/SPEC.md §6 "Tag"); the interval control then takes only numbers forward of the
last one it took.

The same check serves RLI's reference frames (``frame_type`` 3, :mod:`hw.rli.rli_path`):
a reference is a control frame laid out as a marker with the same tag, and the receiver
takes it only from the configured sender with a verified tag.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.frames.frame_format import TYPE_MARKER, VERSION
from host_sw.contracts.hashing import ETHERTYPE_CONTROL, MIN_FRAME_BYTES
from host_sw.contracts.frames.reference_frame import TYPE_REFERENCE
from host_sw.contracts.siphash import KEY_BYTES, TAG_BYTES

from hw.inband.control_frame_tx import HEADER_BYTES, header_field
from hw.frames.frame import FrameMonitor, check_data_width, frame_beat_layout
from hw.arith.stages import kept_copies
from hw.inband.siphash import SipHash, header_feed

__all__ = ["MarkerWatch", "CAPTURE_BYTES"]

SEQ_BITS = 32
TS_BITS = 64
#: Bytes of a marker the receiver keeps: the header and the tag.
CAPTURE_BYTES = HEADER_BYTES + TAG_BYTES


class MarkerWatch(wiring.Component):
    """Parses the frames of a watched stream for marker frames and checks their tag (the
    receiver's side).

    Parameters
    ----------
    data_width:
        Stream width in bits.
    frame_type:
        The control frame ``type`` checked (default 1, the marker; 3 for RLI's reference
        frames, whose header, length and tag rules are the marker's).

    Members
    -------
    watch: In(FrameMonitor(data_width))
        The watched stream (a transfer is ``valid & ready``; never driven).
    config_id: In(32)
        CONFIG_ID: the configuration ID a marker must carry.
    marker_src_mac: In(48)
        MARKER_SRC_MAC (byte 0 of the address in bits 47..40).
    key, auth: In(128), In(1)
        AUTH_KEY and AUTH_MODE.enable: with ``auth`` a marker must be authenticated
        (``auth`` byte 1) and its tag verify under ``key``; without, its ``auth`` byte
        must be 0 and its tag verify under the zero key.
    accepted: Out(1)
        :data:`VERIFY_LATENCY` cycles after a marker's EOF transfer: a marker (EtherType
        0x88B5, type 1) with version 2, the configuration ID, the source MAC and
        ``auth`` byte expected, at least 60 bytes, no error flag, whose tag verified.
    rejected: Out(1)
        Three cycles after a marker's EOF transfer: the marker failed a check of its header
        or length, or its tag could not be checked because the engine was still checking
        the previous marker (the rule for a marker that comes while the engine is busy:
        it is ignored and counted; markers come one per interval).
    runt: Out(1)
        With ``rejected``: the marker was shorter than its 60-byte format.
    bad_tag: Out(1)
        :data:`VERIFY_LATENCY` cycles after the EOF: the marker passed the other checks
        and its tag did not verify.
    seq, timestamp, flags: Out(32), Out(64), Out(8)
        The marker's fields, valid with ``accepted``.

    The data path is never stalled: the watch has no ``ready``, the header is copied
    into the engine's own buffer when its check starts.
    """

    #: Cycles from a marker's EOF transfer to ``accepted`` / ``bad_tag``: the watched
    #: beat registered here (1), the decision on the header (2), then the tag of its 12
    #: words (the engine's rounds) and its comparison in registered pieces.
    VERIFY_LATENCY = 1 + 2 + 44

    def __init__(self, *, data_width: int, frame_type: int = TYPE_MARKER):
        check_data_width(data_width)
        if frame_type not in (TYPE_MARKER, TYPE_REFERENCE):
            raise ValueError(f"frame_type must be {TYPE_MARKER} (marker) or "
                             f"{TYPE_REFERENCE} (reference), not {frame_type!r}")
        self.data_width = data_width
        self.frame_type = frame_type
        super().__init__({
            "watch": In(FrameMonitor(data_width)),
            "config_id": In(32), "marker_src_mac": In(48),
            "key": In(8 * KEY_BYTES), "auth": In(1),
            "accepted": Out(1), "rejected": Out(1), "runt": Out(1), "bad_tag": Out(1),
            "seq": Out(SEQ_BITS), "timestamp": Out(TS_BITS), "flags": Out(8),
        })

    def elaborate(self, platform):
        m = Module()
        header, complete, ended, ended_error = self._capture(m)
        # The header's comparisons, registered in 16-bit pieces (Fmax: the 88 compared
        # bits are 4–5 LUT levels in one go); the decision waits for them one cycle
        # after the EOF (`ended` registered again), at every data width.
        def equal_pieces(a, b):
            return [a[k:k + 16] == b[k:k + 16] for k in range(0, len(a), 16)]

        pieces = (equal_pieces(header_field(header, "config_id"), self.config_id)
                  + equal_pieces(header_field(header, "src_mac"), self.marker_src_mac)
                  + [header_field(header, "version") == VERSION,
                     header_field(header, "auth") == self.auth,
                     header_field(header, "ethertype") == ETHERTYPE_CONTROL,
                     header_field(header, "type") == self.frame_type])
        piece_equal = Signal(len(pieces), reset_less=True)
        decided, decided_error, decided_complete = Signal(), Signal(), Signal()
        m.d.sync += [piece_equal.eq(Cat(pieces)), decided.eq(ended),
                     decided_error.eq(ended_error), decided_complete.eq(complete)]
        is_marker = decided & piece_equal[-2:].all()
        good = piece_equal[:-2].all() & decided_complete & ~decided_error
        self._verify(m, header, ended, decided, is_marker, good, decided_complete)
        return m

    def _capture(self, m):
        """The first 56 bytes of each frame (header and tag), and whether it reached 60
        bytes. Returns ``(header, complete, ended, ended_error)``."""
        lanes = self.data_width // 8
        # The header bytes are data (read only with `decided`): no reset, which keeps
        # ~450 flip-flops off the reset net.
        header = Signal(8 * CAPTURE_BYTES, reset_less=True)
        beats = -(-MIN_FRAME_BYTES // lanes)
        # One-hot: the beat of the frame a transfer now is (bit 0: a frame's first;
        # bit ``beats`` past byte 59), so a byte's store enable is one register and its
        # lane's keep (a binary beat count's compare spread the capture: LDA seed 1).
        at = Signal(beats + 1, init=1)
        complete = Signal()                          # byte 59 (the 60th) was seen
        ended, ended_error = Signal(), Signal()
        # The watched beat, registered beside the capture: the watch copy's valid, an
        # enable of every header byte, was one net from the merger to ~450 flip-flops
        # here (7.3 ns, the LDA datapath's critical path on a placement).
        transfer = Signal(name="watched_transfer")
        watched = Signal(frame_beat_layout(self.data_width), reset_less=True,
                         name="watched")
        m.d.sync += [transfer.eq(self.watch.valid & self.watch.ready),
                     watched.eq(self.watch.payload)]
        with m.If(transfer):
            with m.If(at[0]):
                m.d.sync += [header.eq(0), complete.eq(0)]   # byte stores below win
            for b in range(beats):
                with m.If(at[b]):
                    for lane in range(lanes):
                        byte = b * lanes + lane
                        if byte >= MIN_FRAME_BYTES:
                            break
                        with m.If(watched.keep[lane]):
                            if byte < CAPTURE_BYTES:
                                m.d.sync += header[8 * byte: 8 * byte + 8].eq(
                                    watched.data[8 * lane: 8 * lane + 8])
                            if byte == MIN_FRAME_BYTES - 1:
                                m.d.sync += complete.eq(1)
            m.d.sync += at.eq(Mux(watched.last, 1,
                                  Cat(0, at[:beats - 1], at[beats - 1] | at[beats])))
        m.d.sync += [ended.eq(transfer & watched.last),
                     ended_error.eq(watched.error)]
        return header, complete, ended, ended_error

    def _verify(self, m, header, ended, decided, is_marker, good, decided_complete):
        """The tag check: a marker that passed the header checks is copied (with its
        tag) into the engine's buffer, its 12 header words absorbed, the tag compared."""
        m.submodules.engine = engine = SipHash()
        held = Signal(8 * CAPTURE_BYTES, reset_less=True)    # the marker being checked
        checking = Signal()
        start = Signal()
        m.d.comb += [
            start.eq(is_marker & good & ~checking),
            engine.key.eq(Mux(self.auth, self.key, 0)),
            engine.start.eq(start),
        ]
        # `held` and the header's words follow the captured header (as it was one cycle
        # after the EOF) until a check starts, then keep it: a next frame may overwrite
        # the capture meanwhile. They pause in every decision cycle (`decided`), whether
        # a check starts or not. The pause, `checking | decided`, is the load select of
        # some 830 flip-flops: as a LUT of those two, one net to all of them (4.9 ns, the
        # LDA datapath's critical path on one placement). So it is registered from both
        # next values (`decided` is `ended` a clock later), in copies kept apart, one per
        # slice of the header's words and of `held`.
        slices = 4
        pausing = kept_copies(m, ended | start | (checking & ~engine.done), 2 * slices,
                              name="pausing", reset_less=False)
        header_feed(m, engine, header[:8 * HEADER_BYTES], load=[~p for p in pausing[:slices]],
                    start=start, name="header", slices=slices)
        per = -(-len(held) // slices)
        for k, pause in enumerate(pausing[slices:]):
            part = slice(per * k, min(len(held), per * (k + 1)))
            with m.If(~pause):
                m.d.sync += held[part].eq(header[part])
        with m.If(start):
            m.d.sync += checking.eq(1)
        tag = held[8 * HEADER_BYTES: 8 * CAPTURE_BYTES]
        # The verdict: the tag compared in 16-bit pieces, each registered every clock
        # (its value is read only the clock after ``done``, while ``held`` still holds the
        # marker checked: it reloads a clock later), and ``accepted`` / ``bad_tag`` one
        # LUT of those registers. The 64-bit comparison into one register (5 LUT levels,
        # 80 % routing) was the two-clock LDA and RDA cores' datapath critical path on
        # three placements (``docs/HARDWARE.md``); the verdict comes in the same clock.
        tag_piece_equal = Signal(4, reset_less=True)
        m.d.sync += tag_piece_equal.eq(Cat(
            engine.tag[k:k + 16] == tag[k:k + 16] for k in range(0, len(tag), 16)))
        verdict = Signal()
        m.d.sync += verdict.eq(checking & engine.done)
        with m.If(checking & engine.done):
            m.d.sync += checking.eq(0)
        m.d.comb += [
            self.accepted.eq(verdict & tag_piece_equal.all()),
            self.bad_tag.eq(verdict & ~tag_piece_equal.all()),
            self.rejected.eq(is_marker & (~good | checking)),
            self.runt.eq(is_marker & ~decided_complete),
            self.seq.eq(header_field(held, "seq")),
            self.timestamp.eq(header_field(held, "timestamp")),
            self.flags.eq(header_field(held, "flags")),
        ]

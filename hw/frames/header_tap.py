# SPDX-License-Identifier: BSD-2-Clause
"""The header tap: one record per frame (header window, class, timestamp, copy).

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): frames in → **header tap**
→ H3 hasher. The tap only watches the input stream's transfers (``valid & ready``); it
never drives ``ready``, so the measurement side cannot stall the data path.

Per frame it

* captures the first ``window_bytes`` bytes into the window register (bytes past the
  frame's end read as zero — the ``host_sw.contracts.hashing.header_windows`` contract);
* latches the timestamp (``now``) and the active counter copy (``copy``) at the start of
  frame (SOF) — a frame belongs to the interval of its SOF;
* classifies it at the end of frame (EOF) with the priorities of
  :func:`host_sw.contracts.hashing.classify_frame`: errored (``error`` on the last beat), runt
  (fewer than ``min_frame_bytes`` bytes), control (EtherType 0x88B5), IPv4 (0x0800 and
  version 4), IPv6 (0x86DD and version 6), otherwise non-IP;
* emits the record the cycle after the EOF transfer, and counts frames per class.

Swap ordering: :attr:`HeaderTap.boundary_ok` says the tap is between frames (no frame
open, no single-beat frame transferring), so an interval boundary executed in this cycle
(``swap`` pulse, with ``copy`` already showing the new copy) separates the records
cleanly: the ``swap`` flag comes out in the record stream strictly after every record of
a frame that started before it and strictly before every record of a frame that starts
with or after it. (A stream made only of back-to-back single-beat frames defers a
boundary until its first gap; at data widths ≤ 64 bits such frames are runts.)
"""

from amaranth.hdl import Cat, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.hashing import (
    ETHERTYPE_CONTROL, ETHERTYPE_IPV4, ETHERTYPE_IPV6, MIN_FRAME_BYTES, FrameClass,
)

from hw.frames.frame import FrameMonitor, check_data_width

__all__ = ["FRAME_CLASS_BITS", "tap_record_layout", "TapRecord", "TapStatus", "HeaderTap"]

#: Width of a :class:`host_sw.contracts.hashing.FrameClass` value in gateware.
FRAME_CLASS_BITS = 3
#: Per-class status counters of the tap, in this order.
TAP_STATUS_NAMES = ("frames", "counted", "errored", "runt", "non_ip", "control")


def tap_record_layout(window_bytes: int, ts_bits: int) -> data.StructLayout:
    """One frame's record: ``window`` (byte ``i`` at bits ``8i+7:8i``), ``frame_class``
    (a :class:`~host_sw.contracts.hashing.FrameClass` value), ``timestamp`` (ticks, low
    ``ts_bits`` bits, latched at SOF) and ``copy`` (latched at SOF)."""
    return data.StructLayout({
        "window": unsigned(window_bytes * 8),
        "frame_class": unsigned(FRAME_CLASS_BITS),
        "timestamp": unsigned(ts_bits),
        "copy": unsigned(1),
    })


def TapRecord(window_bytes: int, ts_bits: int) -> wiring.Signature:
    """Record port (source view): ``valid`` (one record this cycle), ``swap`` (an interval
    boundary at this point of the record order; see the module docstring) and
    ``payload``. No backpressure: the consumer takes every record."""
    return wiring.Signature({
        "valid": Out(1),
        "swap": Out(1),
        "payload": Out(tap_record_layout(window_bytes, ts_bits)),
    })


def TapStatus(counter_bits: int = 32) -> wiring.Signature:
    """Status counters (source view), one per name of ``TAP_STATUS_NAMES``: frames seen,
    counted (IPv4/IPv6), errored, runt, non-IP, control. They wrap modulo
    ``2**counter_bits``."""
    return wiring.Signature({name: Out(counter_bits) for name in TAP_STATUS_NAMES})


class HeaderTap(wiring.Component):
    """Watches a frame stream and emits one :func:`TapRecord` per frame.

    Parameters
    ----------
    data_width:
        Stream data width in bits (multiple of 8).
    window_bytes:
        Bytes of the header window (``config.window_bytes``, ≥ 15).
    ts_bits:
        Timestamp width (``config.ts_bits``); ``now`` is truncated to it.
    min_frame_bytes:
        Frames shorter than this are runts.
    counter_bits:
        Width of the status counters.

    Members
    -------
    watch: In(FrameMonitor(data_width))
        The watched stream (a transfer is ``valid & ready``).
    now: In(ts_bits)
        The timebase.
    copy: In(1)
        The active copy, latched at SOF.
    swap: In(1)
        An interval boundary is executed this cycle (only when ``boundary_ok``).
    boundary_ok: Out(1)
        No frame is open and no single-beat frame transfers this cycle (combinational).
    in_frame: Out(1)
        A frame is open: its SOF was transferred and its EOF not yet (a register).
    record: Out(TapRecord(window_bytes, ts_bits))
        One record the cycle after each EOF transfer. ``payload.window`` is the window
        register itself and ``payload.frame_class`` is decoded from it: both are valid
        only in the cycle ``valid`` is high (the consumer registers them).
    status: Out(TapStatus(counter_bits))
        Updated 2 cycles after the record.

    Latency: the record appears 1 cycle after the EOF transfer; ``swap`` appears 1 cycle
    after the boundary.
    """

    def __init__(self, *, data_width: int, window_bytes: int, ts_bits: int,
                 min_frame_bytes: int = MIN_FRAME_BYTES, counter_bits: int = 32):
        check_data_width(data_width)
        if not isinstance(window_bytes, int) or window_bytes < 15:
            raise ValueError(f"window_bytes must be at least 15 (EtherType and IP version), "
                             f"not {window_bytes!r}")
        if not isinstance(ts_bits, int) or not 1 <= ts_bits <= 64:
            raise ValueError(f"ts_bits must be 1..64, not {ts_bits!r}")
        if not isinstance(min_frame_bytes, int) or min_frame_bytes < 1:
            raise ValueError(f"min_frame_bytes must be positive, not {min_frame_bytes!r}")
        if not isinstance(counter_bits, int) or not 1 <= counter_bits <= 64:
            raise ValueError(f"counter_bits must be 1..64, not {counter_bits!r}")
        self.data_width = data_width
        self.window_bytes = window_bytes
        self.ts_bits = ts_bits
        self.min_frame_bytes = min_frame_bytes
        self.counter_bits = counter_bits
        #: Cycles from the EOF transfer to ``record.valid``.
        self.latency = 1
        super().__init__({
            "watch": In(FrameMonitor(data_width)),
            "now": In(ts_bits),
            "copy": In(1),
            "swap": In(1),
            "boundary_ok": Out(1),
            "in_frame": Out(1),
            "record": Out(TapRecord(window_bytes, ts_bits)),
            "status": Out(TapStatus(counter_bits)),
        })

    def status_sources(self) -> dict:
        """The status counters by register name (FRAMES_SEEN, FRAMES_<class>):
        :func:`hw.bus.core_registers.wire_status`."""
        return {("frames_seen" if name == "frames" else f"frames_{name}"):
                getattr(self.status, name) for name in TAP_STATUS_NAMES}

    def elaborate(self, platform):
        m = Module()
        beat = self.watch.payload
        transfer = Signal()
        m.d.comb += transfer.eq(self.watch.valid & self.watch.ready)

        in_frame = Signal()          # an SOF was transferred and its EOF not yet
        first = Signal()             # this transfer is a start of frame
        m.d.comb += first.eq(~in_frame)
        with m.If(transfer):
            m.d.sync += in_frame.eq(~beat.last)
        m.d.comb += [self.boundary_ok.eq(~in_frame & ~(transfer & beat.last)),
                     self.in_frame.eq(in_frame)]

        window, byte_is, version_is = self._capture_window(m, transfer, first)
        runt = self._runt(m, transfer, first)
        rec_valid, frame_class = self._record(m, transfer, first, runt, window, byte_is,
                                              version_is)
        self._count(m, rec_valid, frame_class)
        return m

    def _capture_window(self, m, transfer, first):
        """The window register and the flags of the bytes the class depends on.

        At SOF slot 0 takes the beat and every other slot clears (zero past the end of a
        short frame); later beats write their own slot. The bytes the class depends on
        (EtherType, bytes 12-13; IP version, the high nibble of byte 14) are also
        compared as they are written, into flag registers that always equal the
        comparisons on the window register (the class is then two LUT levels from
        registers)."""
        lanes = self.data_width // 8
        wbytes = self.window_bytes
        slots = (wbytes + lanes - 1) // lanes          # beats that reach into the window
        beat = self.watch.payload
        # `next_slot` is one-hot: the window slot the next (non-first) beat of the frame
        # writes (all zero once past the window), so a slot's write enable is one gate.
        next_slot = Signal(max(1, slots))
        with m.If(transfer):
            with m.If(beat.last):
                m.d.sync += next_slot.eq(0)
            with m.Elif(first):
                m.d.sync += next_slot.eq(0b10 if slots > 1 else 0)
            with m.Else():
                m.d.sync += next_slot.eq(next_slot << 1)

        incoming = Signal(self.data_width)      # the beat with dropped lanes zeroed
        m.d.comb += incoming.eq(Cat(beat.data.word_select(i, 8) & beat.keep[i].replicate(8)
                                    for i in range(lanes)))
        checks = {12: (ETHERTYPE_IPV4 >> 8, ETHERTYPE_IPV6 >> 8, ETHERTYPE_CONTROL >> 8),
                  13: (ETHERTYPE_IPV4 & 0xFF, ETHERTYPE_IPV6 & 0xFF,
                       ETHERTYPE_CONTROL & 0xFF)}
        byte_is = {p: Signal(len(c), name=f"byte{p}_is", reset_less=True)
                   for p, c in checks.items()}
        version_is = Signal(2, reset_less=True)          # byte 14's high nibble is 4 / 6
        # Data registers (the window, its flags, the record's fields) have no reset: an
        # SOF rewrites every slot and flag, and the record's fields are read only with
        # its (reset) valid bit; a reset reaching them would make the reset net ~600
        # flip-flops larger.
        window = Signal(wbytes * 8, reset_less=True)
        for j in range(slots):
            lo, hi = j * lanes, min((j + 1) * lanes, wbytes)
            slot = window[lo * 8:hi * 8]
            value = incoming[:(hi - lo) * 8]
            written = value if j == 0 else Mux(first, 0, value)
            flag_updates = []
            for p, consts in checks.items():
                if lo <= p < hi:
                    byte = written[(p - lo) * 8:(p - lo + 1) * 8]
                    flag_updates.append(byte_is[p].eq(Cat(byte == c for c in consts)))
            if lo <= 14 < hi:
                nibble = written[(14 - lo) * 8 + 4:(14 - lo) * 8 + 8]
                flag_updates.append(version_is.eq(Cat(nibble == 4, nibble == 6)))
            enable = transfer & first if j == 0 else transfer & (first | next_slot[j])
            with m.If(enable):
                m.d.sync += [slot.eq(written), *flag_updates]
        return window, byte_is, version_is

    def _runt(self, m, transfer, first):
        """Runt detection: 1 when the frame ending in this beat is shorter than
        ``min_frame_bytes``.

        ``bytes_short``: bytes the frame still lacks to reach min_frame_bytes before this
        beat. Only the last beat may be partial and its keep is contiguous from lane 0,
        so "the last beat has fewer than n bytes" is just ``~keep[n - 1]``: no popcount
        or adder on the path to the class."""
        lanes, beat = self.data_width // 8, self.watch.payload
        min_bytes = self.min_frame_bytes
        bytes_short = Signal(range(min_bytes + 1))
        short_now = Signal(range(min_bytes + 1))
        m.d.comb += short_now.eq(Mux(first, min_bytes, bytes_short))
        with m.If(transfer & ~beat.last):
            m.d.sync += bytes_short.eq(Mux(short_now > lanes, short_now - lanes, 0))
        runt = Signal()
        if lanes == 1:
            short_keep = ~beat.keep[0]
        else:
            index = Signal(range(lanes))
            m.d.comb += index.eq(short_now - 1)
            short_keep = ~beat.keep.bit_select(index, 1)
        m.d.comb += runt.eq(Mux(short_now == 0, 0, Mux(short_now > lanes, 1, short_keep)))
        return runt

    def _record(self, m, transfer, first, runt, window, byte_is, version_is):
        """The timestamp and copy at SOF, the record registered at EOF and its class.
        Returns the record's ``valid`` and class."""
        beat = self.watch.payload
        sof_timestamp = Signal(self.ts_bits, reset_less=True)
        sof_copy = Signal(reset_less=True)
        with m.If(transfer & first):
            m.d.sync += [sof_timestamp.eq(self.now), sof_copy.eq(self.copy)]

        rec_valid = Signal()
        rec_swap = Signal()
        rec_error = Signal(reset_less=True)
        rec_runt = Signal(reset_less=True)
        rec_timestamp = Signal(self.ts_bits, reset_less=True)
        rec_copy = Signal(reset_less=True)
        eof = transfer & beat.last
        m.d.sync += [rec_valid.eq(eof), rec_swap.eq(self.swap)]
        # The record's fields load every clock: they are read only in the cycle after
        # the EOF (with `rec_valid`), when they hold the EOF cycle's values. With `eof`
        # as their enable, its ~70-flop net would be the core's critical path.
        m.d.sync += [
            rec_error.eq(beat.error),
            rec_runt.eq(runt),
            rec_timestamp.eq(Mux(first, self.now, sof_timestamp)),
            rec_copy.eq(Mux(first, self.copy, sof_copy)),
        ]

        # Classification, in the record's cycle, from the byte-comparison flags,
        # registered with the window bytes (bytes 12–14 may arrive in the EOF beat
        # itself), and the flags registered at EOF: no path from the beat's lanes through
        # the window write into the class.
        is_ipv4 = byte_is[12][0] & byte_is[13][0]
        is_ipv6 = byte_is[12][1] & byte_is[13][1]
        is_control = byte_is[12][2] & byte_is[13][2]
        frame_class = Signal(FRAME_CLASS_BITS)
        with m.If(rec_error):
            m.d.comb += frame_class.eq(FrameClass.ERRORED)
        with m.Elif(rec_runt):
            m.d.comb += frame_class.eq(FrameClass.RUNT)
        with m.Elif(is_control):
            m.d.comb += frame_class.eq(FrameClass.CONTROL)
        with m.Elif(is_ipv4 & version_is[0]):
            m.d.comb += frame_class.eq(FrameClass.IPV4)
        with m.Elif(is_ipv6 & version_is[1]):
            m.d.comb += frame_class.eq(FrameClass.IPV6)
        with m.Else():
            m.d.comb += frame_class.eq(FrameClass.NON_IP)

        m.d.comb += [
            self.record.valid.eq(rec_valid),
            self.record.swap.eq(rec_swap),
            self.record.payload.window.eq(window),
            self.record.payload.frame_class.eq(frame_class),
            self.record.payload.timestamp.eq(rec_timestamp),
            self.record.payload.copy.eq(rec_copy),
        ]
        return rec_valid, frame_class

    def _count(self, m, rec_valid, frame_class):
        """The status counters, counting a registered copy of the record's class (short
        paths)."""
        rec_class = Signal(FRAME_CLASS_BITS)
        counted_valid = Signal()
        m.d.sync += [counted_valid.eq(rec_valid), rec_class.eq(frame_class)]
        st = self.status
        with m.If(counted_valid):
            m.d.sync += st.frames.eq(st.frames + 1)
            with m.Switch(rec_class):
                with m.Case(FrameClass.IPV4, FrameClass.IPV6):
                    m.d.sync += st.counted.eq(st.counted + 1)
                with m.Case(FrameClass.ERRORED):
                    m.d.sync += st.errored.eq(st.errored + 1)
                with m.Case(FrameClass.RUNT):
                    m.d.sync += st.runt.eq(st.runt + 1)
                with m.Case(FrameClass.NON_IP):
                    m.d.sync += st.non_ip.eq(st.non_ip + 1)
                with m.Case(FrameClass.CONTROL):
                    m.d.sync += st.control.eq(st.control + 1)

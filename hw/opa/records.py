# SPDX-License-Identifier: BSD-2-Clause
"""OPA's per-packet records streamed out as record frames (EtherType 0x88B5, type 4)
while the interval runs: the sender's send timestamps with their groups, or the
receiver's packet hashes with their arrival timestamps (docs/SPEC.md §8.7).

Where it sits (docs/DESIGN.md, "Data flow of a packet"): beside the OPA words
(:mod:`hw.opa.cah`), fed the same counted packets (packet hash, the tap's timestamp) and
the interval boundaries in order with them; in the OPA core (:mod:`hw.opa.opa_path`) its
frames are a frame-merger insert input (in-band), its point chosen at run time. The
frames are
:func:`host_sw.contracts.opa.records.build_record_frames` byte for byte (field table
``RECORD_HEADER_FIELDS`` and record layout ``record_format`` imported, never re-typed),
tagged by :class:`hw.inband.siphash.ItemTagger` and packed into beats by
:class:`hw.inband.control_frame_tx.BytePacker` as the exporter's are.

Two halves joined by one block-RAM FIFO of entries (``amaranth.lib.fifo``):

* **write side**, one packet per clock, never waits: a packet of a recorded group
  (``G < record_groups``, the interval's sampling rule, latched at each boundary, as
  ``enable``) is one
  record entry; a boundary adds the interval's end (its dropped count, the next
  interval's number and rule) to the entry of that clock. A record is dropped — and
  counted, in the interval's LAST frame and in ``dropped`` — when fewer than two entries
  are free (one is kept for an end, so ends are never lost; an end that finds the FIFO
  full waits in a register, and a further boundary meanwhile merges into it: the
  interval between has no stream, counted in ``merged``).
* **framer**: takes entries in order into a frame buffer (block RAM, one frame of
  records, each already in its byte layout with its offset from the frame's base); when a
  record does not fit (the frame is full or its offset exceeds the offset field) or the
  interval ends, it sends the header (now known: count, base, LAST, dropped), then the
  buffered records, to the tagger. Entries wait in the FIFO meanwhile.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out, connect, flipped

from host_sw.contracts.config import KIND_CODES, OpaConfig
from host_sw.contracts.frames.frame_format import MTU_PAYLOAD, PAYLOAD_OFFSET
from host_sw.contracts.hashing import MIN_FRAME_BYTES
from host_sw.contracts.opa.records import (
    RECORD_HEADER_FIELDS, TYPE_OPA_RECORDS, Point, RecordFlags, record_format,
    records_per_frame,
)
from host_sw.contracts.siphash import KEY_BYTES, TAG_BYTES

from hw.inband.control_frame_tx import BytePacker, control_header
from hw.frames.frame import FrameStream, RegisterSlice, check_data_width
from hw.inband.siphash import ItemTagger

__all__ = ["OpaRecordStreamer"]

#: Bytes of one item into the tagger: a quarter of the header, a record, or the tag.
ITEM_BYTES = 12
_HEADER_PIECES = PAYLOAD_OFFSET // ITEM_BYTES


def _big_endian(value, nbytes: int):
    """``value``'s low ``nbytes`` bytes, most significant first (lane order)."""
    return Cat(*(value[8 * (nbytes - 1 - j): 8 * (nbytes - j)] for j in range(nbytes)))


class OpaRecordStreamer(wiring.Component):
    """Record frames of one OPA point (module docstring for the contract).

    Parameters
    ----------
    config : OpaConfig
    point : "sender", "receiver" or None
        None: chosen at run time by the ``receiver`` input (one bitstream at both ends;
        the frame buffer and the packer then hold either record format).
    data_width : int
        Output frame stream width.
    mtu : int
        Ethernet payload bytes per frame.
    depth : int
        Entries of the FIFO between the packet side and the framer (block RAM).
    record_from_reset : bool
        Whether the interval running from reset records (``enable`` applies from the
        first boundary on). A core passes False: its operator's setting, not the reset,
        decides what goes on the link.

    Members
    -------
    valid, packet_hash, timestamp : In(1), In(64), In(64)
        One counted packet per clock at most (the tap's timestamp in ticks).
    boundary, next_seq : In(1), In(32)
        Pulse, in order with the packets: the interval ends; a packet in the same clock
        belongs to the next one, numbered ``next_seq``. Before the first boundary the
        interval is 0.
    record_groups : In(24)
        The RECORD_GROUPS register (0: every group), latched at each boundary.
    enable : In(1)
        Record the next interval (the export's enable), latched at each boundary: an
        interval records all or nothing, and one that did not record sends no frame.
        The interval running from reset records if ``record_from_reset``.
    receiver : In(1), only with ``point=None``
        Record the receiver's records (1) or the sender's (0); latched at each boundary
        like ``enable``. Before the first boundary the input is taken as it is (a frame
        never mixes the two: a change closes the open frame).
    src_mac, dst_mac, config_id, key, auth : In(48), In(48), In(32), In(128), In(1)
        As for the exporter (LOCAL_MAC, EXPORT_DST_MAC, CONFIG_ID, AUTH_KEY,
        AUTH_MODE.enable), read when a frame's header is sent.
    source : Out(FrameStream(data_width))
        The record frames.
    dropped, merged, frames : Out(32)
        Records dropped (all intervals), boundaries merged into a waiting end, frames
        sent (wrapping counters).
    """

    def __init__(self, *, config, point, data_width: int, mtu: int = MTU_PAYLOAD,
                 depth: int = 512, record_from_reset: bool = True):
        if not isinstance(config, OpaConfig):
            raise ValueError(f"config must be an OpaConfig, not {type(config).__name__}")
        if point not in (None, "sender", "receiver", Point.SENDER, Point.RECEIVER):
            raise ValueError(f"point must be 'sender', 'receiver' or None, not {point!r}")
        check_data_width(data_width)
        if not isinstance(depth, int) or depth < 4:
            raise ValueError(f"depth must be an integer of at least 4, not {depth!r}")
        self.config = config
        self.point = None if point is None else Point(point)
        self.points = tuple(Point) if point is None else (self.point,)
        self.formats = {p: record_format(config, p) for p in self.points}
        self.per_frames = {p: records_per_frame(config, p, mtu)        # validates mtu
                           for p in self.points}
        if self.point is not None:
            self.format, self.per_frame = self.formats[point], self.per_frames[point]
        self.data_width, self.mtu, self.depth = data_width, mtu, depth
        self.record_from_reset = bool(record_from_reset)
        self.gbits = config.groups.bit_length() - 1
        members = {
            "valid": In(1), "packet_hash": In(64), "timestamp": In(64),
            "boundary": In(1), "next_seq": In(32), "record_groups": In(24),
            "enable": In(1),
            "src_mac": In(48), "dst_mac": In(48), "config_id": In(32),
            "key": In(8 * KEY_BYTES), "auth": In(1),
            "source": Out(FrameStream(data_width)),
            "dropped": Out(32), "merged": Out(32), "frames": Out(32),
        }
        if point is None:
            members["receiver"] = In(1)
        super().__init__(members)

    def _by_point(self, recv, values: dict):
        """``values[point]`` of the point ``recv`` selects (a constant when fixed)."""
        if self.point is not None:
            return values[self.point]
        return Mux(recv, values[Point.RECEIVER], values[Point.SENDER])

    def _entry_layout(self) -> data.StructLayout:
        key_bits = 64 if Point.RECEIVER in self.points else max(1, self.gbits)
        return data.StructLayout({"rec": 1, "key": key_bits, "ts": 64, "end": 1,
                                  "quiet": 1, "dropped": 32, "next_seq": 32,
                                  "next_groups": 24, "recv": 1, "end_recv": 1})

    def _effective_groups(self, value):
        g = self.config.groups
        return Mux((value == 0) | (value >= g), g, value)

    def _group(self, packet_hash):
        return packet_hash[64 - self.gbits:] if self.gbits else Const(0, 1)

    def elaborate(self, platform):
        m = Module()
        layout = self._entry_layout()
        m.submodules.fifo = fifo = SyncFIFOBuffered(width=layout.size, depth=self.depth)
        self._write_side(m, fifo, layout)
        m.submodules.tagger = tagger = ItemTagger(
            item_bytes=ITEM_BYTES,
            frame_items=_HEADER_PIECES + max(self.per_frames.values()) + 1)
        m.submodules.packer = packer = BytePacker(
            data_width=self.data_width, item_bytes=ITEM_BYTES,
            item_sizes={ITEM_BYTES, TAG_BYTES} | {f.record_bytes
                                                  for f in self.formats.values()})
        m.d.comb += [tagger.key.eq(Mux(self.auth, self.key, 0)), packer.enable.eq(1)]
        connect(m, packer.sources[0], flipped(self.source))
        # Tagger ► pad ► a register slice ► packer: the tagger's store (block RAM) and the
        # packer's write-position logic are not on one path.
        m.submodules.to_packer = to_packer = RegisterSlice(shape=packer.items.payload.shape())
        self._pad(m, tagger.source, to_packer.sink)
        connect(m, to_packer.source, packer.items)
        # The framer reads the FIFO's head from registers (a register slice: the BRAM's
        # output and the head's 64-bit offset are not on one path).
        m.submodules.head = head = RegisterSlice(shape=layout.size)
        m.d.comb += [head.sink.valid.eq(fifo.r_rdy), head.sink.payload.eq(fifo.r_data),
                     fifo.r_en.eq(fifo.r_rdy & head.sink.ready)]
        self._framer(m, head.source, layout, tagger.sink)
        with m.If(packer.frame_sent):
            m.d.sync += self.frames.eq(self.frames + 1)
        return m

    def _write_side(self, m, fifo, layout):
        """Packets and boundaries into FIFO entries (module docstring)."""
        valid, boundary, on_in = Signal(), Signal(), Signal()
        p_hash, ts, next_seq, groups_in = Signal(64), Signal(64), Signal(32), Signal(24)
        recv_in = Signal()
        if self.point is None:
            m.d.sync += recv_in.eq(self.receiver)
        m.d.sync += [valid.eq(self.valid), boundary.eq(self.boundary), on_in.eq(self.enable),
                     p_hash.eq(self.packet_hash), ts.eq(self.timestamp),
                     next_seq.eq(self.next_seq),
                     groups_in.eq(self._effective_groups(self.record_groups))]
        groups = Signal(24, init=self.config.groups)       # this interval's rule
        count_drops = Signal(32)                           # this interval's drops
        on = Signal(init=int(self.record_from_reset))      # this interval records
        pend, pend_dropped, pend_quiet = Signal(), Signal(32), Signal()
        pend_seq, pend_groups = Signal(32), Signal(24)
        # the point (run-time only): latched at each boundary, taken as it is before the
        # first one
        started, recv_latched, pend_recv = Signal(), Signal(), Signal()
        recv_now = Mux(started, recv_latched, recv_in)
        rule = Mux(boundary, groups_in, groups)
        rec = valid & Mux(boundary, on_in, on) & (self._group(p_hash) < rule)
        end = boundary | pend
        entry = Signal(layout)
        m.d.comb += [
            entry.rec.eq(rec), entry.ts.eq(ts), entry.end.eq(end),
            entry.quiet.eq(Mux(pend, pend_quiet, ~on)),
            entry.key.eq(p_hash if Point.RECEIVER in self.points else self._group(p_hash)),
            entry.dropped.eq(Mux(pend, pend_dropped, count_drops)),
            entry.next_seq.eq(Mux(boundary, next_seq, pend_seq)),
            entry.next_groups.eq(Mux(boundary, groups_in, pend_groups)),
            entry.recv.eq(Mux(boundary, recv_in, recv_now)),
            entry.end_recv.eq(Mux(pend, pend_recv, recv_now)),
            fifo.w_data.eq(entry.as_value()),
        ]
        room_for_record = fifo.w_level < self.depth - 1
        write = Mux(end, fifo.w_rdy, rec & room_for_record)
        m.d.comb += fifo.w_en.eq(write)
        lost = rec & ~write
        base_drops = Mux(boundary, 0, count_drops)

        def saturating(v):
            return Mux(v == 0xFFFFFFFF, v, v + 1)
        m.d.sync += count_drops.eq(Mux(lost, saturating(base_drops), base_drops))
        with m.If(lost):
            m.d.sync += self.dropped.eq(self.dropped + 1)
        with m.If(boundary):
            m.d.sync += [groups.eq(groups_in), on.eq(on_in), started.eq(1),
                         recv_latched.eq(recv_in)]
        with m.If(end & ~write):
            m.d.sync += [pend.eq(1), pend_seq.eq(entry.next_seq),
                         pend_groups.eq(entry.next_groups)]
            with m.If(~pend):
                m.d.sync += [pend_dropped.eq(count_drops), pend_quiet.eq(~on),
                             pend_recv.eq(recv_now)]
            with m.If(boundary & pend):
                m.d.sync += self.merged.eq(self.merged + 1)
        with m.Elif(end):
            m.d.sync += pend.eq(0)
            with m.If(boundary & pend):   # a waiting end and a new one, written merged
                m.d.sync += self.merged.eq(self.merged + 1)

    def _record_bytes(self, key, offset, recv):
        """A record in its byte layout (lane order) from its key (the group, or the
        packet hash when the streamer may record the receiver's) and offset."""
        out = {}
        if Point.RECEIVER in self.points:
            out[Point.RECEIVER] = Cat(_big_endian(key, 8), _big_endian(offset, 4))
        if Point.SENDER in self.points:
            fmt = self.formats[Point.SENDER]
            group = key[len(key) - self.gbits:] if len(key) == 64 else key[:self.gbits]
            value = Cat(offset[:fmt.offset_bits], group if self.gbits else Const(0, 0))
            out[Point.SENDER] = _big_endian(value, fmt.record_bytes)
        return self._by_point(recv, out)

    def _framer(self, m, entries, layout, items):
        """FIFO entries into frames: buffer a frame's records, then send it."""
        per = max(self.per_frames.values())
        head = Signal(layout)
        m.d.comb += head.eq(entries.payload)
        seq, chunk = Signal(32), Signal(32)
        groups = Signal(24, init=self.config.groups)
        count, base = Signal(range(per + 1)), Signal(64)
        end_taken = Signal()                 # the head's end part is done
        emitting, e_last, e_dropped = Signal(), Signal(), Signal(32)
        e_seq, e_groups = Signal(32), Signal(24)
        f_recv, e_recv = Signal(), Signal()  # the open frame's / the sent frame's point
        width = max(f.record_bytes for f in self.formats.values())
        m.submodules.buffer = buffer = Memory(shape=8 * width, depth=per, init=[])
        wport, rport = buffer.write_port(), buffer.read_port()
        offset = Signal(64)
        m.d.comb += offset.eq(head.ts - base)
        offset_fits = self._by_point(head.recv, {
            p: offset[f.offset_bits:] == 0 for p, f in self.formats.items()})
        full = count == self._by_point(head.recv, self.per_frames)
        fits = (count == 0) | (~full & offset_fits & (head.recv == f_recv))
        has_end = head.end & ~end_taken
        m.d.comb += [wport.addr.eq(count),
                     wport.data.eq(self._record_bytes(head.key, Mux(count == 0, 0, offset),
                                                      head.recv))]
        with m.If(~emitting & entries.valid):
            with m.If(has_end):
                # an interval that did not record (``enable`` low) ends without a frame
                m.d.sync += [emitting.eq(~head.quiet), e_last.eq(1),
                             e_dropped.eq(head.dropped), e_seq.eq(head.next_seq),
                             e_groups.eq(head.next_groups), end_taken.eq(head.rec),
                             e_recv.eq(Mux(count == 0, head.end_recv, f_recv))]
                m.d.comb += entries.ready.eq(~head.rec)
                with m.If(head.quiet):      # (no records: ``count`` is 0)
                    m.d.sync += [seq.eq(head.next_seq), groups.eq(head.next_groups),
                                 chunk.eq(0)]
            with m.Elif(~fits):
                m.d.sync += [emitting.eq(1), e_last.eq(0), e_dropped.eq(0),
                             e_recv.eq(f_recv)]
            with m.Else():
                m.d.comb += [wport.en.eq(1), entries.ready.eq(1)]
                m.d.sync += [count.eq(count + 1), end_taken.eq(0)]
                with m.If(count == 0):
                    m.d.sync += [base.eq(head.ts), f_recv.eq(head.recv)]
        recv_flag = self._by_point(e_recv, {
            p: int(RecordFlags.RECEIVER if p is Point.RECEIVER else RecordFlags.NONE)
            for p in self.points})
        flags = Mux(e_last, int(RecordFlags.LAST), 0) | recv_flag
        header = control_header(m, {
            "dst_mac": self.dst_mac, "src_mac": self.src_mac, "type": TYPE_OPA_RECORDS,
            "flags": flags, "kind": KIND_CODES["opa"], "seq": seq,
            "config_id": self.config_id, "record_count": count, "record_groups": groups,
            "auth": self.auth, "chunk_index": chunk, "dropped": e_dropped,
            "timestamp": Mux(count == 0, 0, base)},
            name="record_header", fields=RECORD_HEADER_FIELDS)
        done = self._send(m, items, header, count, emitting, rport, e_recv)
        with m.If(done):
            m.d.sync += [emitting.eq(0), count.eq(0)]
            with m.If(e_last):
                m.d.sync += [seq.eq(e_seq), groups.eq(e_groups), chunk.eq(0)]
            with m.Else():
                m.d.sync += chunk.eq(chunk + 1)

    def _send(self, m, items, header, count, emitting, rport, recv):
        """While ``emitting``: the header's pieces, then ``count`` buffered records, to
        the tagger; returns the strobe of the frame's last item."""
        piece = Signal(range(_HEADER_PIECES + 1))
        index = Signal(range(max(self.per_frames.values()) + 1))
        fresh = Signal()                     # the read port shows record ``index``
        in_records = piece == _HEADER_PIECES
        take = items.valid & items.ready
        m.d.comb += rport.addr.eq(index)
        m.d.sync += fresh.eq(~take)
        size = self._by_point(recv, {p: f.record_bytes for p, f in self.formats.items()})
        with m.If(~in_records):
            m.d.comb += [items.valid.eq(emitting),
                         items.payload.data.eq(header.word_select(piece, 8 * ITEM_BYTES)),
                         items.payload.size.eq(ITEM_BYTES),
                         items.payload.last.eq((piece == _HEADER_PIECES - 1) & (count == 0))]
        with m.Else():
            m.d.comb += [items.valid.eq(emitting & fresh),
                         items.payload.data.eq(rport.data),
                         items.payload.size.eq(size),
                         items.payload.last.eq(index == count - 1)]
        done = take & items.payload.last
        with m.If(take & ~in_records):
            m.d.sync += piece.eq(piece + 1)
        with m.If(take & in_records):
            m.d.sync += index.eq(index + 1)
        with m.If(done):
            m.d.sync += [piece.eq(0), index.eq(0)]
        return done

    def _pad(self, m, tagged, items):
        """Tagger to packer; a frame without records (48 + 8 bytes) gets its tag item
        widened by 4 zero bytes, to the 60-byte minimum."""
        seen = Signal(range(_HEADER_PIECES + 2))
        pad = tagged.payload.last & (seen == _HEADER_PIECES)
        short = MIN_FRAME_BYTES - PAYLOAD_OFFSET - TAG_BYTES
        m.d.comb += [items.valid.eq(tagged.valid), tagged.ready.eq(items.ready),
                     items.payload.data.eq(tagged.payload.data),
                     items.payload.last.eq(tagged.payload.last),
                     items.payload.size.eq(Mux(pad, TAG_BYTES + short, tagged.payload.size))]
        with m.If(tagged.valid & tagged.ready):
            with m.If(tagged.payload.last):
                m.d.sync += seen.eq(0)
            with m.Elif(seen <= _HEADER_PIECES):
                m.d.sync += seen.eq(seen + 1)

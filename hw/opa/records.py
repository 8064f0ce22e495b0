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
* **framer**: takes entries in order into a frame buffer (block RAM, two frames of
  records, each already in its byte layout with its offset from the frame's base); when
  a record does not fit (the frame is full or its offset exceeds the offset field) or
  the interval ends, the frame closes: its header (now known: count, base, LAST,
  dropped) and then its records go to the tagger from one half of the buffer while the
  next frame fills the other. Entries wait in the FIFO only when a frame closes while
  the previous one is still leaving.
* **coded records** (``rice``; SPEC §8.7 "Coded sender records", "Coded receiver
  records"): the framer's coder writes each record's Golomb–Rice code into a 64-bit
  accumulator and full words into the frame buffer, the coding word goes after the
  header; a receiver record is two appends, its 64-bit packet hash, then its arrival
  difference's code; lossy sender ones (``shift`` > 0) first pass the quantum sorter
  (per-group counts of the current quantum in one of two RAMs while the other is
  scanned in group order), so each quantum's records leave as a set sorted by group.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out, connect, flipped

from host_sw.contracts.config import KIND_CODES, OpaConfig
from host_sw.contracts.frames.frame_format import MTU_PAYLOAD, PAYLOAD_OFFSET
from host_sw.contracts.hashing import MIN_FRAME_BYTES
from host_sw.contracts.opa.records import (
    CODED_WORD_BYTES, CODING_BYTES, MAX_RECORDS, RECORD_HEADER_FIELDS, RICE_CODING,
    RICE_K_INIT, RICE_K_MAX, RICE_MAX_SHIFT, RICE_UNARY_LIMIT, TYPE_OPA_RECORDS, Point,
    RecordFlags, coded_words_per_frame, record_format, records_per_frame,
)
from host_sw.contracts.siphash import KEY_BYTES, TAG_BYTES

from hw.inband.control_frame_tx import BytePacker, control_header
from hw.frames.frame import FrameStream, RegisterSlice, check_data_width
from hw.inband.siphash import ItemTagger

__all__ = ["OpaRecordStreamer"]

#: Bits of an entry's record format (``mode``): 0 receiver, 1 coded, 2–6 shift (sender).
MODE_BITS = 7
_STAT_BITS = 48

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
    rice : In(1)
        Code the records (Golomb–Rice, SPEC §8.7 "Coded sender records", "Coded
        receiver records"); latched at each boundary like ``receiver`` (before the first
        one taken as it is).
    shift : In(5), only when the streamer may record the sender's
        The coded sender records' timestamps quantised by ``shift`` bits (0: lossless;
        above 24 taken as 24), each quantum's records as a set; latched like ``rice``.
        The receiver's are never quantised.
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
        self.coded_words = coded_words_per_frame(mtu)
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
        members["rice"] = In(1)
        if Point.SENDER in self.points:
            members["shift"] = In(5)
        super().__init__(members)

    def _by_point(self, recv, values: dict):
        """``values[point]`` of the point ``recv`` selects (a constant when fixed)."""
        if self.point is not None:
            return values[self.point]
        return Mux(recv[0], values[Point.RECEIVER], values[Point.SENDER])

    def _entry_layout(self) -> data.StructLayout:
        key_bits = 64 if Point.RECEIVER in self.points else max(1, self.gbits)
        return data.StructLayout({"rec": 1, "key": key_bits, "ts": 64, "end": 1,
                                  "quiet": 1, "dropped": 32, "next_seq": 32,
                                  "next_groups": 24, "recv": MODE_BITS,
                                  "end_recv": MODE_BITS})

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
            frame_items=_HEADER_PIECES + 1 + max(max(self.per_frames.values()),
                                                 self.coded_words) + 1)
        m.submodules.packer = packer = BytePacker(
            data_width=self.data_width, item_bytes=ITEM_BYTES,
            item_sizes={ITEM_BYTES, TAG_BYTES} | {f.record_bytes
                                                  for f in self.formats.values()}
            | ({CODING_BYTES, CODED_WORD_BYTES} if self.coded_words else set()))
        m.d.comb += [tagger.key.eq(Mux(self.auth, self.key, 0)), packer.enable.eq(1)]
        connect(m, packer.sources[0], flipped(self.source))
        # Tagger ► pad ► a register slice ► packer: the tagger's store (block RAM) and the
        # packer's write-position logic are not on one path.
        m.submodules.to_packer = to_packer = RegisterSlice(shape=packer.items.payload.shape())
        self._pad(m, tagger.source, to_packer.sink)
        connect(m, to_packer.source, packer.items)
        # The framer reads the FIFO's head from registers (a register slice: the BRAM's
        # output and the head's offset and fit are not on one path).
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
        # the record format (``mode``, MODE_BITS): receiver, coded, shift
        recv_in = Signal(MODE_BITS)
        recv_bit = (self.receiver if self.point is None
                    else Const(int(self.point is Point.RECEIVER), 1))
        if Point.SENDER in self.points:
            shift = Mux(self.shift > RICE_MAX_SHIFT, RICE_MAX_SHIFT, self.shift)
            m.d.sync += recv_in.eq(Cat(recv_bit, self.rice,
                                       Mux(self.rice & ~recv_bit, shift, 0)))
        else:
            m.d.sync += recv_in.eq(Cat(recv_bit, self.rice))
        m.d.sync += [valid.eq(self.valid), boundary.eq(self.boundary), on_in.eq(self.enable),
                     p_hash.eq(self.packet_hash), ts.eq(self.timestamp),
                     next_seq.eq(self.next_seq),
                     groups_in.eq(self._effective_groups(self.record_groups))]
        groups = Signal(24, init=self.config.groups)       # this interval's rule
        # The sampling rule's compares a clock early, into registers: whether the packet's
        # group is under the rule a boundary in its clock latches (``lt_new``: a group is
        # always under ``config.groups``, what 0 or a value past it means) and under the
        # rule it keeps otherwise (``lt_kept``: ``groups`` as it will be then). Compared
        # in the clock of the decision they were, on ECP5, the start of the path through
        # the record's decision to the drop count's carry chain (``docs/HARDWARE.md``).
        lt_new, lt_kept = Signal(), Signal()
        group_in, rule_in = self._group(self.packet_hash), self.record_groups
        m.d.sync += [
            lt_new.eq((rule_in == 0) | (rule_in >= self.config.groups) | (group_in < rule_in)),
            lt_kept.eq(group_in < Mux(boundary, groups_in, groups)),
        ]
        count_drops = Signal(32)                           # this interval's drops
        on = Signal(init=int(self.record_from_reset))      # this interval records
        pend, pend_dropped, pend_quiet = Signal(), Signal(32), Signal()
        pend_seq, pend_groups = Signal(32), Signal(24)
        # the point (run-time only): latched at each boundary, taken as it is before the
        # first one
        started = Signal()
        recv_latched, pend_recv = Signal(MODE_BITS), Signal(MODE_BITS)
        recv_now = Mux(started, recv_latched, recv_in)
        rec = valid & Mux(boundary, on_in & lt_new, on & lt_kept)
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
        write = Signal()
        room_for_record = self._room_for_record(m, fifo, write)
        m.d.comb += [write.eq(Mux(end, fifo.w_rdy, rec & room_for_record)),
                     fifo.w_en.eq(write)]
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

    def _room_for_record(self, m, fifo, write):
        """Whether a record may be written: two entries or more free in ``fifo`` (one is
        kept for an end), as a register of its own.

        ``fifo.w_level`` is a sum (``SyncFIFOBuffered``'s inner level and output
        register); compared in the clock of the decision it was, on ECP5, the start of the
        path through the write and the loss to the drop count on every placement of the
        OPA core (``docs/HARDWARE.md``). The entries held are counted here instead
        (``write`` is every write, the FIFO's reads are its own), and the next clock's
        room is chosen from three compares of that register with constants by whether
        this clock writes and reads: the same value as ``w_level < depth - 1`` in every
        clock (``tests/hw/opa/test_hw_opa_records.py`` checks it in each)."""
        held = Signal(range(self.depth + 1))
        room = Signal(init=1)
        took = fifo.r_en & fifo.r_rdy
        m.d.sync += [
            held.eq(held + write - took),
            room.eq(Mux(write == took, held < self.depth - 1,
                        Mux(write, held < self.depth - 2, held < self.depth))),
        ]
        return room

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

    def _coded(self, mode):
        """Whether the record format ``mode`` is coded (either point's)."""
        return mode[1]

    def _framer(self, m, fifo_head, layout, items):
        """FIFO entries into frames: buffer a frame's records, then send it from its half
        of the buffer while the next frame fills the other. Coded
        records (``mode`` bit 1) go through a bit accumulator into 64-bit words; lossy
        coded sender ones (``shift`` > 0) first through the quantum sorter.

        The framer's head is in registers after the FIFO's (``_head_stage``), with its
        offset from the open frame's base and whether it fits the offset field and the
        frame's format, so that no subtraction or comparison lies between the head and
        the take: that path was the OPA core's datapath critical path on ECP5 in every
        seed (``docs/HARDWARE.md``)."""
        per = max(self.per_frames.values())
        seq, chunk = Signal(32), Signal(32)
        groups = Signal(24, init=self.config.groups)
        count, base = Signal(range(max(per, MAX_RECORDS) + 1)), Signal(64)
        # whether ``count`` is 0 and whether it is each point's records per frame, kept
        # as registers beside it (set from compares of ``count`` made beside the
        # decision, not after it)
        empty = Signal(init=1)
        full_at = {p: Signal(name=f"full_{i}") for i, p in enumerate(self.points)}

        def advance():
            m.d.sync += [count.eq(count + 1), empty.eq(0)]
            m.d.sync += [full_at[p].eq(count == self.per_frames[p] - 1) for p in self.points]
        end_taken = Signal()                 # the head's end part is done
        emitting, e_last, e_dropped = Signal(), Signal(), Signal(32)
        # the open frame's / the sent frame's record format (MODE_BITS)
        f_recv, e_recv = Signal(MODE_BITS), Signal(MODE_BITS)
        width = max([f.record_bytes for f in self.formats.values()]
                    + [CODED_WORD_BYTES] * bool(self.coded_words))
        # two frame buffers: the open frame fills one while the closed one leaves from
        # the other (``wb``: the one filling)
        abits = (max(per, self.coded_words) - 1).bit_length()
        m.submodules.buffer = buffer = Memory(shape=8 * width, depth=2 << abits, init=[])
        bport, rport = buffer.write_port(), buffer.read_port()
        wb = Signal()
        wport = SimpleNamespace(en=Signal(), addr=Signal(abits), data=Signal(8 * width))
        # the write lands a clock after the framer decided it (from registers: the
        # decision and the buffer's ports are not on one path); a closed frame's records
        # are read after its header's pieces, clocks later. The one write in the clock
        # after a close (``closed``: no record is taken then) is the closed frame's
        # partial coded word, to the buffer that frame filled.
        closed = Signal()
        m.d.sync += [bport.en.eq(wport.en), bport.addr.eq(Cat(wport.addr, wb ^ closed)),
                     bport.data.eq(wport.data)]
        # the closed frame's header values, held from its close while it leaves
        # (``closed``: the clock after the close, when the coder's parameter and counts
        # start the next frame)
        h_count, h_base = Signal.like(count), Signal(64)
        h_seq, h_groups, h_chunk = Signal(32), Signal(24), Signal(32)
        h_k, h_words = Signal(range(RICE_K_MAX + 1)), Signal(16)
        off_bits = {p: f.offset_bits for p, f in self.formats.items()}
        base_hi1 = {b: Signal(64 - b, name=f"base_hi1_{b}") for b in set(off_bits.values())}
        based = Signal()                     # a frame's first record taken: its base set

        entries, facts = self._head_stage(m, fifo_head, layout, base, base_hi1, f_recv,
                                          off_bits)
        head = entries.payload
        # the head's facts are a clock old: after the base or the format was set they
        # are computed again before anything is decided
        stale = Signal()
        m.d.sync += stale.eq(based)
        offset = facts["offset"]
        offset_fits = self._by_point(head.recv, {p: facts[f"fits_{b}"]
                                                 for p, b in off_bits.items()})
        full = self._by_point(head.recv, full_at)
        coded = self._coded(head.recv)
        has_end = head.end & ~end_taken
        # the quantum sorter's record (lossy coded), served before the FIFO's head
        srt = (self._sorter(m, head, entries, has_end, facts["quantum_base"],
                            facts["lossy"])
               if Point.SENDER in self.points else None)
        use_s = srt["valid"] if srt else Const(0, 1)
        binned = srt["binned_head"] if srt else Const(0, 1)
        # a coded record waits (the sorter's, or a lossless coded head): the coder
        # prepares its code first
        coded_cand = use_s | (entries.valid & ~has_end & facts["lossless"])
        clear = Signal()
        c = (self._coder(m, head, count, srt, coded_cand, clear)
             if self.coded_words else None)
        plain_fits = ~full & offset_fits
        record_fits = Mux(coded | use_s, c["fits"], plain_fits) if c else plain_fits
        # the sorter's format against the frame's, as a register: it is used only where
        # both were set a clock before or more (the frame's is set at its first record's
        # take, followed by a ``stale`` clock, or while it is empty, where ``fits`` holds
        # anyway; the sorter's when its scan starts, two clocks or more before it offers
        # a record); a 7-bit compare in the decision was a LUT level of its longest path
        if srt:
            s_same_mode = Signal(name="sorter_same_mode")
            m.d.sync += s_same_mode.eq(srt["mode"] == f_recv)
        same_mode = (Mux(use_s, s_same_mode, facts["same_mode"]) if srt
                     else facts["same_mode"])
        fits = empty | (record_fits & same_mode)
        plain_data = self._record_bytes(head.key, Mux(empty, 0, offset), head.recv)
        m.d.comb += [wport.addr.eq(count), wport.data.eq(plain_data)]
        flush = Signal()                     # a frame closes: its partial word is written
        coded_flush = Signal()               # ... in the clock after, when it was coded
        m.d.sync += coded_flush.eq(flush & self._coded(f_recv))
        busy = srt["busy"] if srt else Const(0, 1)
        prepared = (~coded_cand | c["ready"]) & ~c["pending"] if c else Const(1, 1)

        # The open frame's header values and its base follow the framer's state while
        # they may change (the header's until the frame closes: it closes only when none
        # is leaving; the base and format while the frame is empty, so the first record
        # taken sets them): no decision of the framer is their registers' enable.
        with m.If(~emitting):
            m.d.sync += [h_count.eq(count), h_base.eq(Mux(empty, 0, base)),
                         h_seq.eq(seq), h_groups.eq(groups), h_chunk.eq(chunk)]
            if c:
                m.d.sync += [h_k.eq(c["k"]), h_words.eq(c["flush_words"])]
        with m.If(empty):
            first_ts = Mux(use_s, srt["base"], head.ts) if srt else head.ts
            m.d.sync += [base.eq(first_ts), f_recv.eq(Mux(use_s, srt["mode"], head.recv)
                                                      if srt else head.recv)]
            m.d.sync += [r.eq(first_ts[b:] + 1) for b, r in base_hi1.items()]

        def close():
            """The open frame closes (its header values are those of this clock), the
            other buffer fills next (a frame still leaving holds the close)."""
            m.d.sync += [count.eq(0), empty.eq(1), wb.eq(~wb), closed.eq(1),
                         chunk.eq(chunk + 1)]
            m.d.sync += [full_at[p].eq(0) for p in self.points]
        with m.If(~closed & ~stale & (use_s | (entries.valid & ~(has_end & busy) & ~binned))
                  & prepared):
            with m.If(~use_s & has_end):
                with m.If(~emitting):
                    # an interval that did not record (``enable`` low) ends without a
                    # frame
                    m.d.sync += [emitting.eq(~head.quiet), e_last.eq(1),
                                 e_dropped.eq(head.dropped), end_taken.eq(head.rec),
                                 e_recv.eq(Mux(empty, head.end_recv, f_recv))]
                    m.d.comb += [entries.ready.eq(~head.rec), flush.eq(~empty)]
                    with m.If(~head.quiet):
                        close()
                    m.d.sync += [seq.eq(head.next_seq), groups.eq(head.next_groups),
                                 chunk.eq(0)]
            with m.Elif(~fits):
                with m.If(~emitting):
                    m.d.sync += [emitting.eq(1), e_last.eq(0), e_dropped.eq(0),
                                 e_recv.eq(f_recv)]
                    m.d.comb += flush.eq(1)
                    close()
                    if c:
                        c["on_break"]()
            if srt:
                with m.Elif(use_s):
                    advance()
                    c["on_take"]()
                    with m.If(empty):
                        m.d.comb += based.eq(1)
            with m.Else():
                m.d.comb += [wport.en.eq(~coded), entries.ready.eq(1)]
                m.d.sync += end_taken.eq(0)
                advance()
                if c:
                    with m.If(coded):
                        c["on_take"]()
                with m.If(empty):
                    m.d.comb += based.eq(1)
        if srt:
            # the sorter's take, the chain above's decision when ``use_s`` holds, written
            # from the registers it depends on then: decided through the chain, the
            # head's facts and format were in its logic (it is the sorter's scan loop,
            # 8 LUT levels, the OPA core's datapath critical path on every seed)
            m.d.comb += srt["take"].eq(
                use_s & ~closed & ~stale & c["ready"] & ~c["pending"]
                & (empty | (c["fits"] & s_same_mode)))
        with m.If(entries.valid & entries.ready):      # (also the sorter's takes)
            m.d.sync += end_taken.eq(0)
        # anything that changes the coder's record or state — a coded record taken (its
        # append pending; a receiver record's second append no more), a frame closed
        # (``closed``: k and the counts of the next frame set) —:
        # prepare again (from registers, not from this clock's decisions)
        if c:
            m.d.comb += clear.eq(closed | c["restart"])
        with m.If(closed):
            m.d.sync += closed.eq(0)
            if c:
                c["on_done"](e_last | ~self._coded(e_recv), coded_flush, wport)
        if c:
            c["on_append"](wport)
        e_coded = self._coded(e_recv)
        recv_flag = self._by_point(e_recv, {
            p: int(RecordFlags.RECEIVER if p is Point.RECEIVER else RecordFlags.NONE)
            for p in self.points})
        flags = (Mux(e_last, int(RecordFlags.LAST), 0) | recv_flag
                 | Mux(e_coded, int(RecordFlags.CODED), 0))
        header = control_header(m, {
            "dst_mac": self.dst_mac, "src_mac": self.src_mac, "type": TYPE_OPA_RECORDS,
            "flags": flags, "kind": KIND_CODES["opa"], "seq": h_seq,
            "config_id": self.config_id, "record_count": h_count,
            "record_groups": h_groups, "auth": self.auth, "chunk_index": h_chunk,
            "dropped": e_dropped, "timestamp": h_base},
            name="record_header", fields=RECORD_HEADER_FIELDS)
        # the coding word (bytes 48–51, lane order) and the coded frame's words
        coding = (Cat(Const(RICE_CODING, 8), h_k, Const(0, 8 - len(h_k)),
                      e_recv[2:7], Const(0, 3), Const(0, 8)) if c else Const(0, 32))
        words = h_words if c else Const(0, 1)
        done = self._send(m, items, header, h_count, emitting, rport, e_recv, coding, words,
                          bank=~wb, abits=abits)
        with m.If(done):
            m.d.sync += emitting.eq(0)

    def _head_stage(self, m, source, layout, base, base_hi1, f_recv, off_bits):
        """The framer's head: ``source``'s entries in a ring of two registers, the head the
        one ``first`` points at, with its facts against the open frame (``offset``,
        ``ts - base`` in the offset field's bits; ``fits``, per field width, whether
        ``ts - base < 2**bits``; ``same_mode``, whether its format is the frame's;
        ``quantum_base``, ``ts`` with its format's ``shift`` low bits cleared, the lossy
        sorter's quantum: masked after the head's select, it was on the streamer's
        critical path on ECP5; ``lossy`` and ``lossless``, whether it is a coded record
        with or without a ``shift``: the sorter's and the coder's, each from the framer's
        take decision's inputs, where the format's select and tests were LUT levels of
        the OPA core's datapath critical path on ECP5), each register's in registers of
        its own, computed every
        clock for what it holds in the next one against the base and format of this clock
        (so the framer decides nothing in the clock after it set the base or format). A
        take moves ``first`` and the level only: the ring's registers and their facts load
        from ``source`` on its own handshake, whose ``ready`` is a register (the take and
        ~500 load enables were one path, the OPA core's datapath critical path on ECP5).
        Returns the head stream (``valid``, ``ready``, ``payload``) and the facts."""
        ring = [Signal(layout, name=f"head_ring{i}", reset_less=True) for i in range(2)]
        # the head's register, the next one to load
        first, free = Signal(name="head_first"), Signal(name="head_free")
        level = Signal(range(3))
        room = Signal(init=1, name="head_room")         # level < 2, as a register
        valid, ready = Signal(), Signal()
        payload = Signal(layout)
        m.d.comb += payload.eq(Mux(first, ring[1], ring[0]))
        facts = {"offset": Signal(max(off_bits.values()), name="head_offset"),
                 **{f"fits_{b}": Signal(name=f"head_fits_{b}")
                    for b in set(off_bits.values())},
                 "same_mode": Signal(name="head_same_mode"),
                 "quantum_base": Signal(64, name="head_quantum_base"),
                 "lossy": Signal(name="head_lossy"), "lossless": Signal(name="head_lossless")}

        def facts_of(entry):
            ts = entry.ts
            # ``ts - base < 2**b``: the low ``b`` bits subtracted, the high part compared
            # with ``base``'s, or with it plus one (``base_hi1``) when the low part borrows
            coded, shifted = self._coded(entry.recv), entry.recv[2:7] != 0
            out = {"offset": ts[:len(facts["offset"])] - base[:len(facts["offset"])],
                   "same_mode": entry.recv == f_recv,
                   "quantum_base": ts & ~((Const(1, 65) << entry.recv[2:7]) - 1),
                   "lossy": coded & shifted, "lossless": coded & ~shifted}
            for b, hi1 in base_hi1.items():
                borrow = ts[:b] < base[:b]
                out[f"fits_{b}"] = Mux(borrow, ts[b:] == hi1, ts[b:] == base[b:])
            return out

        take = valid & ready
        push = source.valid & room
        m.d.comb += source.ready.eq(room)
        for i in range(2):
            with m.If(push & (free == i)):
                m.d.sync += ring[i].eq(source.payload)
        with m.If(push):
            m.d.sync += free.eq(~free)
        with m.If(take):
            m.d.sync += first.eq(~first)
        level_next = level + push - take
        m.d.sync += [level.eq(level_next), valid.eq(level_next != 0),
                     room.eq(level_next != 2)]
        # each register's facts, for what it holds in the next clock (the entry arriving
        # or the one it holds: a choice made from registers, not from the take); the
        # head's are those of the register ``first`` points at. The facts of the arriving
        # entry and of each register are formed apart and the choice made after them:
        # with the choice of entry in front, the load's select (``push``, ``free``) went
        # through the subtraction's carry chain (the OPA core's datapath critical path
        # on one placement, ``docs/HARDWARE.md``).
        arriving = facts_of(data.View(layout, source.payload))
        for i in range(2):
            loads = push & (free == i)
            held = facts_of(data.View(layout, ring[i]))
            regs = {key: Signal.like(facts[key], name=f"head_ring{i}_{key}") for key in held}
            m.d.sync += [regs[key].eq(Mux(loads, arriving[key], held[key])) for key in held]
            for key, reg in regs.items():
                with m.If(first == i):
                    m.d.comb += facts[key].eq(reg)
        return SimpleNamespace(valid=valid, ready=ready, payload=payload), facts

    def _sorter(self, m, head, entries, has_end, h_base, h_lossy):
        """Lossy coded records (``mode``: coded, ``shift`` > 0) as the set of each
        quantum ``q = t >> shift``: the head's records counted per group in one of two
        count RAMs (a read, then the write: one record per three clocks); a record of a
        later quantum, or the interval's end, hands the RAM to the scan, which reads
        every group in order (clearing it) and offers its count of records
        ``K = (q << log2 g) | group`` to the coder, in key order. A quantum ends while
        the previous one is still scanned: the head waits (the FIFO holds the
        packets).

        Every RAM's read data is registered before anything looks at it (the block RAM's
        output is slow on ECP5: 4.3 ns from the clock): the scan reads one group a clock
        ahead of the group it checks, and starts again after a group with records."""
        g, gbits = self.config.groups, self.gbits
        cbits = 24
        rams = [Memory(shape=cbits, depth=g, init=[]) for _ in range(2)]
        for i, ram in enumerate(rams):
            m.submodules[f"quantum_counts{i}"] = ram
        wps = [r.write_port() for r in rams]
        rps = [r.read_port() for r in rams]
        read = [Signal(cbits, name=f"quantum_count_read{i}", reset_less=True)
                for i in range(2)]
        m.d.sync += [read[i].eq(rps[i].data) for i in range(2)]
        active = Signal()                    # the RAM that counts
        have = Signal()                      # the active RAM holds records
        cur_base, cur_mode = Signal(64), Signal(MODE_BITS)
        scanning, phase = Signal(), Signal(2)
        s_base, s_q, s_mode = Signal(64), Signal(64), Signal(MODE_BITS)
        s_g, s_left = Signal(range(g + 1)), Signal(cbits)
        emit = Signal()
        # whether the offered record is its group's last (``s_left`` is 1) and the group
        # the last one, as registers beside ``s_left`` and ``s_g``: after the take, each
        # decision of the scan is one LUT
        s_one, s_final = Signal(), Signal()
        key = head.key
        group = (key[len(key) - gbits:] if len(key) == 64 else key[:gbits]) if gbits \
            else Const(0, 1)
        binned_head = Signal()
        m.d.comb += binned_head.eq(entries.valid & ~has_end & h_lossy)
        new_quantum = have & ((h_base != cur_base) | (head.recv != cur_mode))
        start_scan = Signal()
        # counting: clock 0 looks at the head (its group, quantum and whether that is a
        # new one) and reads its group's count, clock 1 waits for the read (or, a new
        # quantum, hands the RAM to the scan), clock 2 writes it + 1 (head taken)
        grp_r, base_r, mode_r, nq_r = (Signal(max(1, gbits)), Signal(64),
                                       Signal(MODE_BITS), Signal())
        with m.If(phase == 0):
            with m.If(binned_head):
                m.d.sync += [phase.eq(1), nq_r.eq(new_quantum), grp_r.eq(group),
                             base_r.eq(h_base), mode_r.eq(head.recv)]
        with m.Elif((phase == 1) & ~nq_r):
            m.d.sync += phase.eq(2)
        with m.Elif(phase == 2):
            m.d.comb += entries.ready.eq(1)
            m.d.sync += [phase.eq(0), have.eq(1), cur_base.eq(base_r), cur_mode.eq(mode_r)]
        for i in range(2):
            with m.If(active == i):
                m.d.comb += rps[i].addr.eq(Mux(phase == 0, group, grp_r))
                with m.If(phase == 2):
                    m.d.comb += [wps[i].en.eq(1), wps[i].addr.eq(grp_r),
                                 wps[i].data.eq(read[i] + 1)]
        # the scan: the RAM not counting. ``ahead``: the next group to read; a read's
        # group and whether it counts travel two stages (``in_ram``: at the RAM's output,
        # ``in_reg``: in ``read``), where the group is checked and cleared.
        s_ram = ~active
        s_data = Mux(s_ram, read[1], read[0])
        ahead = Signal(range(g + 1))
        in_ram, in_reg = Signal(), Signal()
        g_ram, g_reg = Signal.like(ahead), Signal.like(ahead)
        reading = scanning & ~emit & (ahead != g)
        for i in range(2):
            with m.If(scanning & (s_ram == i)):
                m.d.comb += rps[i].addr.eq(ahead)
        with m.If(reading):
            m.d.sync += ahead.eq(ahead + 1)
        m.d.sync += [in_ram.eq(reading), g_ram.eq(ahead), in_reg.eq(in_ram),
                     g_reg.eq(g_ram)]
        # a quantum ends: at a later quantum's record or the interval's end
        with m.If((((phase == 1) & nq_r)
                   | ((phase == 0) & entries.valid & has_end & have)) & ~scanning):
            m.d.comb += start_scan.eq(1)
            m.d.sync += [scanning.eq(1), ahead.eq(0), s_base.eq(cur_base),
                         s_q.eq(cur_base >> cur_mode[2:7]), s_mode.eq(cur_mode),
                         active.eq(~active), have.eq(0), phase.eq(0)]
        take = Signal()
        with m.If(scanning & in_reg & ~emit):
            for i in range(2):
                with m.If(s_ram == i):
                    m.d.comb += [wps[i].en.eq(1), wps[i].addr.eq(g_reg),
                                 wps[i].data.eq(0)]
            with m.If(s_data != 0):
                # a group with records: the reads behind it are dropped and start again
                # after it once its records are taken
                m.d.sync += [s_left.eq(s_data), emit.eq(1), s_g.eq(g_reg),
                             ahead.eq(g_reg + 1), in_ram.eq(0), in_reg.eq(0),
                             s_one.eq(s_data == 1), s_final.eq(g_reg == g - 1)]
            with m.Elif(g_reg == g - 1):
                m.d.sync += scanning.eq(0)
        with m.If(scanning & emit & take):
            with m.If(s_one):
                m.d.sync += emit.eq(0)
                with m.If(s_final):
                    m.d.sync += scanning.eq(0)
            with m.Else():
                m.d.sync += [s_left.eq(s_left - 1), s_one.eq(s_left == 2)]
        out_key = Signal(64)
        m.d.comb += out_key.eq(Cat(s_g[:gbits] if gbits else Const(0, 0), s_q))
        return {"valid": scanning & emit, "key": out_key, "group": s_g[:max(1, gbits)],
                "mode": s_mode, "base": s_base, "take": take, "busy": have | scanning,
                "binned_head": binned_head, "start": start_scan}

    def _coder(self, m, head, count, srt, candidate, clear):
        """The coded records' state and logic (SPEC §8.7 "Coded sender records", "Coded
        receiver records"; :func:`host_sw.contracts.opa.records.code_sender_frames` and
        :func:`~host_sw.contracts.opa.records.code_receiver_frames` are its definition): the
        record's code left-aligned in 64 bits, a 64-bit accumulator of ``fill`` bits
        (MSB first), words written as they fill; the Rice parameter per frame from the
        previous frame's differences. The record is the FIFO's head (lossless: its
        group and tick) or, while the sorter offers one, the sorter's (lossy: its key
        ``K``, the group bits only in a frame's first record). A receiver record is two
        appends: its 64-bit packet hash, then (not in a frame's first record) the Rice
        code of its arrival difference.

        Timing: the code is prepared in four registered steps (the difference; its
        quotient and remainder, with the code's lengths less the unary part; the unary
        part and remainder joined, whether the quotient fits, the code's lengths and the
        room after it; the code left-aligned)
        while ``candidate`` (a coded record waits) holds; ``ready`` says it is prepared for
        the framer's state now, ``clear`` (any take, frame end or state change) starts
        it again; the fit is registered (``settled``). A record takes about six clocks
        (``bench.opa_records_rate``). Returns the signals and actions the framer uses."""
        gbits = self.gbits
        cap_bits = 64 * self.coded_words
        k = Signal(range(RICE_K_MAX + 1), init=RICE_K_INIT, name="coder_k")
        total = Signal(_STAT_BITS, name="coder_total")
        n = Signal(range(MAX_RECORDS + 2), name="coder_n")
        prev_q = Signal(64)
        acc, fill = Signal(64), Signal(6)
        nwords = Signal(range(self.coded_words + 1))
        key = head.key
        h_group = (key[len(key) - gbits:] if len(key) == 64 else key[:gbits]) if gbits \
            else Const(0, 1)
        use_s = srt["valid"] if srt else Const(0, 1)
        q_in = Mux(use_s, srt["key"], head.ts) if srt else head.ts
        g_in = Mux(use_s, srt["group"], h_group) if srt else h_group
        # step 1: the difference
        s1, s2, ready = Signal(), Signal(), Signal()
        q, delta, group = Signal(64), Signal(64), Signal(max(1, gbits))
        first, lossy = Signal(), Signal()
        recv, pkt = Signal(), Signal(64)         # a receiver record: its packet hash
        # step 2: quotient and remainder
        u_wide, rem = Signal(64), Signal(RICE_K_MAX)
        # step 3: the code
        code, length, u_ok = Signal(64), Signal(7), Signal()
        over, space = Signal(), Signal(range(cap_bits + 1))
        # (each step's enable from the step registers only; the steps follow one
        # another, so at most one of them runs)
        s3 = Signal()
        tail = Signal(RICE_UNARY_LIMIT + RICE_K_MAX + 1)
        tail_len, head_bits = Signal(range(RICE_UNARY_LIMIT + RICE_K_MAX + 2)), Signal(6)
        # the bits after the code's tail in its 64, registered with the lengths (the
        # subtraction before the shift was on the streamer's longest path)
        room = Signal(range(65))
        # step 2 also registers what step 3's lengths and fit need besides the unary
        # part ``u`` — ``k + 1``; ``fixed``, the code's length less ``u``; the room after
        # the code and the space left after it, each before ``u`` — so that step 3
        # subtracts or adds ``u`` once (its lengths in one carry chain: summed there,
        # then compared with and subtracted from the capacity, they were four chains in
        # a row, the OPA core's datapath critical path on one seed, ``docs/HARDWARE.md``)
        k1, fixed = Signal(range(RICE_K_MAX + 2)), Signal(range(RICE_K_MAX + 2))
        room0 = Signal(range(65))
        space0 = Signal(signed(cap_bits.bit_length() + 1))
        with m.If(clear):
            m.d.sync += [s1.eq(0), s2.eq(0), s3.eq(0), ready.eq(0)]
        with m.Else():
            # step 1's registers load every clock until a record waits (``s1``), not on
            # ``candidate``: from the head's select through it, the enable of some 200
            # flip-flops was the OPA core's datapath critical path on one seed
            with m.If(~s1):
                m.d.sync += [s1.eq(candidate), q.eq(q_in), group.eq(g_in),
                             first.eq(count == 0), lossy.eq(use_s), delta.eq(q_in - prev_q)]
                if Point.RECEIVER in self.points:
                    m.d.sync += [recv.eq(head.recv[0] & ~use_s), pkt.eq(key)]
            with m.If(s1 & ~s2):
                grouped = first | ~lossy             # the code starts with the group
                h_bits = Mux(recv, 0, Mux(grouped, gbits, 0))

                def less_code(bits, hash_bits):
                    """``bits`` less the code's bits but ``u``'s: the group's (a receiver
                    record's ``hash_bits``), then ``k + 1`` unless first. The constants
                    are chosen by the format, so ``k`` is subtracted once (in one carry
                    chain; the lengths summed first were three in a row)."""
                    wide = signed(cap_bits.bit_length() + 2)

                    def by_format(less):
                        return Mux(recv, Const(bits - hash_bits - less, wide),
                                   Mux(grouped, Const(bits - gbits - less, wide),
                                       Const(bits - less, wide)))
                    return Mux(first, by_format(0), by_format(1) - k)
                m.d.sync += [s2.eq(1), u_wide.eq(delta >> k),
                             rem.eq(delta[:RICE_K_MAX]
                                    & ((Const(1, RICE_K_MAX + 1) << k) - 1)),
                             k1.eq(k + 1), fixed.eq(Mux(first, 0, k + 1)),
                             head_bits.eq(h_bits),
                             room0.eq(less_code(64, 0)),
                             space0.eq(less_code(cap_bits, 64))]
            with m.If(s2 & ~s3):
                u = u_wide[:4]
                # ``u`` ones, bit ``i`` set when ``u > i``: one LUT per bit (as
                # ``(1 << u) - 1``, a 17-bit carry chain in front of the shift by ``k + 1``:
                # 14 logic levels into ``tail``, the coder's deepest)
                thermo = Cat(*(u > i for i in range(RICE_UNARY_LIMIT)))
                # the unary part's share of the code's length (none in a frame's first)
                u_len = Mux(first, 0, u)
                m.d.sync += [s3.eq(1), u_ok.eq(u_wide[4:] == 0),
                             tail.eq((thermo << k1) | rem),
                             tail_len.eq(fixed + u_len), room.eq(room0 - u_len),
                             over.eq(u_len > space0), space.eq(space0 - u_len)]
            with m.If(s3 & ~ready):
                group_la = (group << (64 - gbits)) if gbits else Const(0, 64)
                m.d.sync += [ready.eq(1), length.eq(head_bits + tail_len),
                             code.eq(Mux(recv, Mux(first, 0, tail << room),
                                         Mux(first, group_la,
                                             Mux(lossy, 0, group_la) | (tail << room))))]
        used = Signal(range(cap_bits + 65))
        m.d.comb += used.eq(Cat(fill, nwords))     # nwords·64 + fill
        # the record fits when ``used`` + ``need`` is at most ``cap_bits``: ``space``
        # (``cap_bits`` less ``need``) and ``over`` are registered with the code's lengths,
        # a clock before the code, so that the test is one compare of registers in every
        # clock (summing the lengths and ``used`` in the clock the code was prepared, it
        # was the OPA core's datapath critical path on one seed, ``docs/HARDWARE.md``).
        # The answer is registered: the framer takes it (``settled``) when no append, take
        # or frame end changed what it depends on in the clock it was computed.
        fits, settled = Signal(), Signal()
        total_sat = Signal(_STAT_BITS + 1)
        big = delta[_STAT_BITS:] != 0
        m.d.comb += total_sat.eq(total + delta[:_STAT_BITS])
        new_total = Mux(big | total_sat[_STAT_BITS], (1 << _STAT_BITS) - 1,
                        total_sat[:_STAT_BITS])
        # After a close, from registers only: the record that broke the frame adds its
        # difference to the statistics in the clock after the close (``brk``; on the
        # framer's decision it was the streamer's critical path on ECP5), they are final
        # in the clock after that (``finish``: emptied for the next frame), and the next
        # frame's parameter, the smallest k with n·2**(k+1) > total, is chosen two clocks
        # later (``set_k``) from the comparisons, made in two registered stages every
        # clock: n·2**s > total exactly when n > total >> s, that is when n exceeds the
        # shifted total's bits in n's width (``n_above``) and total has no bit from
        # s + len(n) up; then ``above``, bit j for s = j + 1. In one clock with the
        # choice they were 8–9 LUT levels, the OPA core's datapath critical path on every
        # seed (``docs/HARDWARE.md``); in one clock without it, 8 (ABC chains the 25 tests
        # of total's high bits). "No bit from p up" is therefore taken in pieces of 5
        # bits: the first stage registers, per bit, whether its piece has a bit from it
        # up (``total_from``) and, per piece, whether it has any (``total_pieces``); the
        # second tests p's bit and the pieces above it. (As total's bit length, a chain
        # of 10 LUT and multiplexer levels spread over the die, it was the OPA core's
        # datapath critical path on one seed.) No code reads ``k`` sooner: the coder
        # prepares the frame's first record meanwhile, whose code has no Rice part.
        brk, finish, choosing = Signal(), Signal(), Signal()
        n_above = Signal(RICE_K_MAX + 1, name="coder_n_above")
        above = Signal(RICE_K_MAX + 1, name="coder_above")
        piece = 5
        total_from = Signal(_STAT_BITS, name="coder_total_from")
        total_pieces = Signal(-(-_STAT_BITS // piece), name="coder_total_pieces")
        for g, low in enumerate(range(0, _STAT_BITS, piece)):
            top = min(low + piece, _STAT_BITS)
            m.d.sync += total_pieces[g].eq(total[low:top].any())
            m.d.sync += [total_from[i].eq(total[i:top].any()) for i in range(low, top)]

        def none_from(p):
            """total (as registered) has no bit from ``p`` up."""
            if p >= _STAT_BITS:
                return Const(1, 1)
            return ~(total_from[p] | total_pieces[p // piece + 1:].any())
        for j in range(RICE_K_MAX + 1):
            m.d.sync += [n_above[j].eq(n > total[j + 1:][:len(n)]),
                         above[j].eq(n_above[j] & none_from(j + 1 + len(n)))]
        # ``above`` is a thermometer code (a test that holds for j holds for every larger
        # j): the parameter is where it steps, ``edge`` (one-hot; RICE_K_MAX when it
        # never steps before it), each of its bits an OR of edges (a priority chain over
        # the 25 bits was 8 LUT levels)
        edge = [above[0]] + [above[j] & ~above[j - 1] for j in range(1, RICE_K_MAX)]
        edge.append(~above[RICE_K_MAX - 1])
        k_next = Signal(range(RICE_K_MAX + 1))
        m.d.comb += k_next.eq(Cat(*[
            Cat(*[e for j, e in enumerate(edge) if j >> bit & 1]).any()
            for bit in range(len(k_next))]))
        set_k, k_init = Signal(), Signal()
        with m.If(finish):
            m.d.sync += [finish.eq(0), total.eq(0), n.eq(0), choosing.eq(1)]
        with m.If(choosing):
            m.d.sync += [choosing.eq(0), set_k.eq(1)]
        with m.If(set_k):
            m.d.sync += [set_k.eq(0), k.eq(Mux(k_init, RICE_K_INIT, k_next))]

        # a taken code is appended to the accumulator in the next clock (``pending``:
        # the framer waits for it before it ends a frame); a receiver record's hash
        # first, its code (``pending2``) in the clock after (``second``: that clock, when
        # the next record's code may already be prepared: the coder's state is final)
        pending, p_code, p_len = Signal(), Signal(64), Signal(7)
        pending2, p2_code, p2_len, second = Signal(), Signal(64), Signal(7), Signal()
        preparing = s3 & ~ready
        m.d.sync += [fits.eq(u_ok & (count < MAX_RECORDS) & ~over & (used <= space)),
                     settled.eq((ready | preparing) & ~pending & ~clear)]
        wide = Signal(128)
        m.d.comb += wide.eq(Cat(Const(0, 64), p_code) >> fill)
        hi, lo = acc | wide[64:], wide[:64]

        # A take sets two flags only: the appends' codes follow the prepared record while
        # none is pending, and the previous key and the statistics are updated in the
        # clock after the take (``after_take``; the record's ``q``, ``delta`` and
        # ``first`` hold then, and nothing is decided while a code is pending). As loads
        # on the take they were some 200 register enables on the framer's decision, the
        # OPA core's datapath critical path on ECP5 (``docs/HARDWARE.md``).
        after_take = pending & ~second
        with m.If(~pending):
            m.d.sync += [p_code.eq(Mux(recv, pkt, code)), p_len.eq(Mux(recv, 64, length)),
                         p2_code.eq(code), p2_len.eq(length)]
        with m.If(after_take):
            m.d.sync += prev_q.eq(q)
            with m.If(~first):
                m.d.sync += [total.eq(new_total), n.eq(n + 1)]

        def on_take():
            m.d.sync += [pending.eq(1), pending2.eq(recv & (length != 0))]

        def on_append(wport):
            with m.If(pending):
                m.d.sync += [pending.eq(pending2), pending2.eq(0), p_code.eq(p2_code),
                             p_len.eq(p2_len), second.eq(pending2)]
                with m.If(fill + p_len >= 64):
                    m.d.comb += [wport.en.eq(1), wport.addr.eq(nwords),
                                 wport.data.eq(_big_endian(hi, 8))]
                    m.d.sync += [acc.eq(lo), fill.eq(fill + p_len - 64),
                                 nwords.eq(nwords + 1)]
                with m.Else():
                    m.d.sync += [acc.eq(hi), fill.eq(fill + p_len)]

        def on_break():
            m.d.sync += brk.eq(1)

        def on_done(last, flush, wport):
            # the clock after a close: the closed frame's partial word written (when it
            # was coded), the accumulator emptied, the breaking record's difference
            # counted (the statistics and the parameter follow, above). (In the clock of
            # the close the flush was one more load of ``fill`` and ``nwords`` on the
            # framer's decision, the OPA core's datapath critical path on ECP5.)
            with m.If(flush & (fill != 0)):
                m.d.comb += [wport.en.eq(1), wport.addr.eq(nwords),
                             wport.data.eq(_big_endian(acc, 8))]
            with m.If(brk):
                m.d.sync += [total.eq(new_total), n.eq(n + 1)]
            m.d.sync += [nwords.eq(0), fill.eq(0), acc.eq(0), brk.eq(0), finish.eq(1),
                         k_init.eq(last)]

        flush_words = Signal(16)             # the frame's words once its last is written
        m.d.comb += flush_words.eq(nwords + (fill != 0))
        return {"fits": fits, "ready": ready & settled & ~pending, "pending": pending, "k": k,
                "flush_words": flush_words,
                "restart": after_take,
                "words": nwords, "on_take": on_take, "on_append": on_append,
                "on_break": on_break, "on_done": on_done}

    def _send(self, m, items, header, count, emitting, rport, recv, coding, words, *, bank,
              abits):
        """While ``emitting``: the header's pieces, then ``count`` buffered records (or,
        coded, the coding word and ``words`` buffered words) of frame buffer ``bank``,
        to the tagger; returns the strobe of the frame's last item."""
        piece = Signal(range(_HEADER_PIECES + 2))
        index = Signal(range(max(max(self.per_frames.values()), self.coded_words) + 1))
        fresh = Signal()                     # the read port shows record ``index``
        coded = self._coded(recv)
        # Whether the frame has no item, one, or ``index`` + 1 is its last, as registers:
        # ``count``, ``words`` and ``recv`` hold from the close on, and the first item
        # these are read for is the header's last piece, clocks later; ``is_last`` (the
        # record at ``index`` is the last) is set before the records from ``one_item``
        # and at each record's take from ``index == n_items - 2``. (``n_items - 1`` and
        # its compare with ``index`` in the clock of the take, two carry chains into the
        # counters' enables, was the OPA core's datapath critical path on one seed,
        # ``docs/HARDWARE.md``.)
        assert _HEADER_PIECES >= 2
        n_items = Mux(coded, words, count)
        before_last = Signal.like(index, name="send_before_last")
        no_items, one_item = Signal(name="send_no_items"), Signal(name="send_one_item")
        is_last = Signal(name="send_is_last")
        m.d.sync += [before_last.eq(n_items - 2), no_items.eq(n_items == 0),
                     one_item.eq(n_items == 1)]
        # coded: one more piece, the coding word, after the header's
        pieces = Mux(coded, _HEADER_PIECES + 1, _HEADER_PIECES)
        in_records = piece == pieces
        take = items.valid & items.ready
        m.d.comb += rport.addr.eq(Cat(index[:abits], bank))
        m.d.sync += fresh.eq(~take)
        size = self._by_point(recv, {p: f.record_bytes for p, f in self.formats.items()})
        with m.If(~in_records):
            with m.If(piece == _HEADER_PIECES):
                m.d.comb += [items.valid.eq(emitting),
                             items.payload.data.eq(coding),
                             items.payload.size.eq(CODING_BYTES),
                             items.payload.last.eq(no_items)]
            with m.Else():
                m.d.comb += [items.valid.eq(emitting),
                             items.payload.data.eq(header.word_select(piece, 8 * ITEM_BYTES)),
                             items.payload.size.eq(ITEM_BYTES),
                             items.payload.last.eq((piece == _HEADER_PIECES - 1)
                                                   & no_items & ~coded)]
        with m.Else():
            m.d.comb += [items.valid.eq(emitting & fresh),
                         items.payload.data.eq(rport.data),
                         items.payload.size.eq(Mux(coded, CODED_WORD_BYTES, size)),
                         items.payload.last.eq(is_last)]
        done = take & items.payload.last
        with m.If(~in_records):
            m.d.sync += is_last.eq(one_item)
        with m.Elif(take):
            m.d.sync += is_last.eq(index == before_last)
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

# SPDX-License-Identifier: BSD-2-Clause
"""The exporter: streams the frozen copy out as synopsis chunk frames (EtherType 0x88B5).

Where it sits (``docs/DESIGN.md``, "Data flow of a counter"): "exporter: frozen copy ►
control frames (in-band to the receiver and/or to the host)". When an interval is
frozen, the top pulses ``start``; the exporter reads every counter word through the
counter bank's frozen read port (:func:`hw.counters.bank_layout.frozen_read_signature`,
``CounterBank.READ_LATENCY`` = 5 cycles, one read per clock) and emits the frames of
:func:`host_sw.contracts.frames.control_frame.build_synopsis_frames`, byte for byte: the fixed
header (version, type 2, flags, kind, seq, config ID, chunk index/count, chunks per
word, first word, word count, timestamp; the field table ``HEADER_FIELDS`` imported,
never re-typed), then the frame's words, each as ``layout.chunks`` big-endian 32-bit
chunks, least significant chunk first,
:func:`~host_sw.contracts.frames.frame_format.words_per_frame` words per frame, then the
frame's SipHash-2-4 tag (:class:`hw.inband.siphash.ItemTagger`; under the key when ``auth``,
else under the zero key).

The frames go to the ``inband`` port (into the :class:`hw.frames.frame_merger.FrameMerger`,
towards the receiver), to the ``host`` port (a separate host stream), or to both (each
beat is offered to every enabled port and moves on when all have taken it). With
``auto_release`` the exporter pulses ``release`` after the last frame's last beat.

Timing (ECP5, nextpnr, 250 MHz target): no path is deeper than about three LUT levels and
every handshake or reset that reaches many registers comes from a flip-flop
(``bench/logic_depth.py`` on the exporter alone). Frames leave in a
:class:`hw.inband.control_frame_tx.BytePacker` ring buffer; the reads are paced by
thermometer-coded credit counters into a LUT-RAM word FIFO.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out, connect, flipped

from host_sw.contracts.frames.frame_format import (
    CHUNK_BYTES, MAX_CHUNKS, MTU_PAYLOAD, TYPE_SYNOPSIS, field_by_name, frames_needed,
    words_per_frame,
)
from host_sw.contracts.config import KIND_CODES
from host_sw.contracts.siphash import KEY_BYTES, TAG_BYTES

from hw.inband.control_frame_tx import HEADER_BYTES, BytePacker, control_header
from hw.counters.counter_bank import CounterBank
from hw.counters.bank_layout import frozen_read_signature
from hw.frames.frame import FrameStream, check_data_width
from hw.inband.siphash import ItemTagger

__all__ = ["Exporter"]


class Exporter(wiring.Component):
    """Streams the frozen counter copy as synopsis chunk frames.

    Parameters
    ----------
    config:
        The synopsis configuration (layout, buckets, kind). Its words need at least 3
        chunks (every chunk frame is then ≥ 60 bytes without padding; LDA 3, LDS 4,
        RDA 5).
    data_width:
        Frame stream width in bits.
    mtu:
        Ethernet payload bytes per frame (``host_sw.contracts.frames.frame_format.MTU_PAYLOAD``).
    read_ahead:
        Counter words read ahead: the depth of the word FIFO (LUT RAM); a read is issued
        while fewer words are in flight or held. The default keeps frames gap-free at
        64 bits (a word read to its FIFO slot freed takes about seven clocks).

    Members
    -------
    start: In(1)
        Pulse: export the frozen copy now. Ignored while ``busy``.
    seq, flags, timestamp, config_id, role: In(32), In(8), In(64), In(32), In(8)
        FROZEN_SEQ, FROZEN_FLAGS, FROZEN_TIMESTAMP, FROZEN_CONFIG_ID, FROZEN_ROLE;
        sampled at ``start``.
    src_mac, dst_mac: In(48)
        FROZEN_SRC_MAC (LOCAL_MAC as the interval froze), EXPORT_DST_MAC (byte 0 in bits
        47..40); sampled at ``start``.
    key, auth: In(128), In(1)
        AUTH_KEY and AUTH_MODE.enable; sampled at ``start``: the frames' tags are under
        ``key`` (``auth`` byte 1) when ``auth``, else under the zero key (``auth`` 0).
    to_inband, to_host, auto_release: In(1)
        INTERVAL_MODE.export_inband / export_host / auto_release; sampled at ``start``.
        With neither port enabled nothing is sent (``done``, and ``release`` if asked,
        still pulse).
    frozen: Out(frozen_read_signature(config))
        The counter bank's frozen read port; the exporter drives ``addr``/``en`` only
        while ``busy`` and not ``read_hold``.
    read_hold: In(1)
        Issue no read this cycle: the top shares the frozen port with the bus's counter
        window by giving the bus priority (``read_hold = bus read enable``, the port's
        ``addr``/``en`` from the bus in that cycle) and routing each answer
        ``READ_LATENCY`` cycles later to whoever asked (a shift register of
        owners). The exporter only slows down.
    inband, host: Out(FrameStream(data_width))
        The frames (``error`` 0), each behind a skid buffer (payload and ``valid`` from
        registers). Inside a frame ``valid`` does not drop at data widths up to
        ``8 * 4 * layout.chunks`` bits (96 for LDA) while the ports are ready and the bus
        does not hold the read port, since one word is read per clock; wider streams get
        idle cycles inside frames. The first beat leaves about 11 clocks after
        ``start``; between frames there are at least 4 idle clocks (a ~2 % longer
        export at the default MTU).
    busy: Out(1)
        An export is running (from the cycle after ``start``).
    done: Out(1)
        Pulse: the last frame's last beat was taken by every enabled port and has left
        the port's skid buffer.
    release: Out(1)
        Pulse with ``done`` when ``auto_release`` was set: release the frozen copy.
    frames: Out(32)
        EXPORT_FRAMES: synopsis chunk frames sent (each frame once, whatever the number of
        ports; wrapping).
    read_error: Out(1)
        Sticky until the next ``start``: a frozen read answered with ``error`` (the copy
        was not FROZEN); the frames then carry zero words.

    Attributes
    ----------
    words_per_frame, frame_count: int
        Words in a full frame, and frames per export.
    """

    def __init__(self, *, config, data_width: int, mtu: int = MTU_PAYLOAD,
                 read_ahead: int = CounterBank.READ_LATENCY + 4):
        check_data_width(data_width)
        if getattr(config, "kind", None) not in KIND_CODES:
            raise ValueError(f"config must be an LdaConfig, RdaConfig or LdsConfig, "
                             f"not {config!r}")
        chunks = config.layout.chunks
        if chunks < 3:
            raise ValueError(f"the exporter needs words of at least 3 chunks (frames of at "
                             f"least 60 bytes without padding), not {chunks}")
        if not isinstance(read_ahead, int) or read_ahead < 2:
            raise ValueError(f"read_ahead must be an integer of at least 2, not {read_ahead!r}")
        self.config = config
        self.data_width = data_width
        self.mtu = mtu
        self.read_ahead = read_ahead
        self.words_per_frame = words_per_frame(chunks, mtu)     # validates mtu
        self.frame_count = frames_needed(config.buckets, chunks, mtu)
        if self.frame_count > MAX_CHUNKS:
            raise ValueError(f"the {config.kind} synopsis of {config.buckets} words needs "
                             f"{self.frame_count} frames at an MTU of {mtu} bytes; the chunk "
                             f"count allows {MAX_CHUNKS}")
        self.word_bytes = CHUNK_BYTES * chunks
        super().__init__({
            "start": In(1),
            "seq": In(field_by_name("seq").bits), "flags": In(field_by_name("flags").bits),
            "timestamp": In(field_by_name("timestamp").bits),
            "config_id": In(field_by_name("config_id").bits),
            "role": In(field_by_name("role").bits),
            "src_mac": In(48), "dst_mac": In(48),
            "key": In(8 * KEY_BYTES), "auth": In(1),
            "to_inband": In(1), "to_host": In(1), "auto_release": In(1),
            "frozen": Out(frozen_read_signature(config)), "read_hold": In(1),
            "inband": Out(FrameStream(data_width)),
            "host": Out(FrameStream(data_width)),
            "busy": Out(1), "done": Out(1), "release": Out(1),
            "frames": Out(32), "read_error": Out(1),
        })

    def status_sources(self) -> dict:
        """EXPORT_FRAMES: :func:`hw.bus.core_registers.wire_status`."""
        return {"export_frames": self.frames}

    def elaborate(self, platform):
        # Timing (see the module docstring): every decision that enables many registers
        # comes from a flip-flop. While idle the parameters are sampled every clock and
        # the export's state is held at its initial value, so ``start`` itself only sets
        # ``busy`` and loads the read counter; the reads are paced by thermometer-coded
        # counters (the credit test is one flop); the items go to the packer straight
        # from the word FIFO's LUT RAM or the header registers, taken when
        # ``items.ready`` (a flop) is high, and the packer registers them.
        m = Module()
        P = self.word_bytes                             # item bytes
        header_pieces = -(-HEADER_BYTES // P)
        piece_sizes = [min(P, HEADER_BYTES - h * P) for h in range(header_pieces)]
        m.submodules.packer = packer = BytePacker(
            data_width=self.data_width, item_bytes=P,
            item_sizes={P, *piece_sizes, TAG_BYTES}, ports=2)
        # The items pass the tagger, which appends each frame's tag and hands on a frame
        # once it is tagged (the items are absorbed at about one 32-bit word per clock).
        m.submodules.tagger = tagger = ItemTagger(
            item_bytes=P, frame_items=header_pieces + self.words_per_frame + 1)
        connect(m, tagger.source, packer.items)
        # ``idle`` is ``~busy`` in flops of their own (``busy`` then drives few loads):
        # while idle, the parameters are sampled and the export's state is held at its
        # initial value (enables and synchronous resets straight from these flops).
        # Copies of ``idle`` (same value, each with its own feedback so they are not
        # merged) spread its ~350 loads: no copy drives more than ~40.
        idle = _IdleCopies()
        params = self._sample_parameters(m, idle)
        read_data, held, fifo_pop = self._read_words(m, idle.first)
        m.d.comb += tagger.key.eq(Mux(params.auth, params.key, 0))
        front = SimpleNamespace(items=tagger.sink)
        self._send_items(m, front, idle, params, read_data, held, fifo_pop, piece_sizes)
        finishing = self._ports_and_done(m, packer, idle.first, params)
        starts = self.start & (self.to_inband | self.to_host)
        idle.drive(m, starts, finishing)
        return m

    def _sample_parameters(self, m, idle):
        """The export's parameters, sampled every clock while idle; ``start`` → ``busy``
        (or ``done`` at once when no port is enabled)."""
        p = SimpleNamespace(
            seq=Signal.like(self.seq, name="seq"), flags=Signal.like(self.flags, name="flags"),
            timestamp=Signal.like(self.timestamp, name="timestamp"),
            config_id=Signal.like(self.config_id, name="config_id"),
            role=Signal.like(self.role, name="role"),
            src_mac=Signal(48, name="src_mac"), dst_mac=Signal(48, name="dst_mac"),
            key=Signal(8 * KEY_BYTES, name="key"), auth=Signal(name="auth"),
            to_inband=Signal(name="to_inband"), to_host=Signal(name="to_host"),
            auto_release=Signal(name="auto_release"))
        idle.new("idle")
        pairs = [(p.seq, self.seq), (p.flags, self.flags), (p.timestamp, self.timestamp),
                 (p.config_id, self.config_id), (p.role, self.role),
                 (p.src_mac, self.src_mac),
                 (p.dst_mac, self.dst_mac), (p.key, self.key), (p.auth, self.auth),
                 (p.to_inband, self.to_inband),
                 (p.to_host, self.to_host), (p.auto_release, self.auto_release)]
        bits = [(reg[i], value[i]) for reg, value in pairs for i in range(len(reg))]
        for k in range(0, len(bits), 32):
            sampling = idle.new(f"sampling_{k // 32}")
            with m.If(sampling):
                m.d.sync += [reg.eq(value) for reg, value in bits[k:k + 32]]
        m.d.sync += [self.done.eq(0), self.release.eq(0)]
        with m.If(self.start & ~self.busy):
            m.d.sync += self.read_error.eq(0)
            with m.If(self.to_inband | self.to_host):
                m.d.sync += self.busy.eq(1)
            with m.Else():
                m.d.sync += [self.done.eq(1), self.release.eq(self.auto_release)]
        return p

    def _read_words(self, m, idle):
        """Every word in memory order, read ahead into the word FIFO; returns the FIFO's
        head word (zero-extended to whole chunks), its fill count ``held`` and its pop
        strobe (driven by the item sender)."""
        buckets, depth = self.config.buckets, self.read_ahead
        word_bits = self.config.layout.width
        # ``owed``: words read and not yet taken from the FIFO (in flight or held).
        read_addr = Signal(range(max(buckets, 2)))
        reads_left = Signal(range(-1, buckets), init=-1)    # minus one: no more
        issue, fifo_pop, popped = Signal(), Signal(), Signal()
        m.d.sync += popped.eq(fifo_pop)          # the credit comes back a clock late
        owed = _thermometer(m, "owed", depth, issue, popped, idle)
        m.d.comb += [
            issue.eq(~reads_left[-1] & ~owed[-1] & ~self.read_hold),
            self.frozen.en.eq(issue),
            self.frozen.addr.eq(read_addr),
        ]
        # Loaded one clock after start (minus one, no reads, when idle): ``issue`` needs
        # no ``busy``, and the load's ~25 enables come from a flop.
        starting = Signal()
        m.d.sync += starting.eq(self.start & ~self.busy & (self.to_inband | self.to_host))
        with m.If(starting):
            m.d.sync += [read_addr.eq(0), reads_left.eq(buckets - 1)]
        with m.Elif(issue):
            m.d.sync += [read_addr.eq(read_addr + 1), reads_left.eq(reads_left - 1)]

        # The answers, registered, into a LUT-RAM FIFO.
        answer_valid, answer = Signal(), Signal(word_bits)
        m.d.sync += [answer_valid.eq(self.frozen.valid & self.busy),
                     answer.eq(self.frozen.data.as_value())]
        with m.If(self.frozen.valid & self.frozen.error):
            m.d.sync += self.read_error.eq(1)
        # The FIFO is one LUT RAM per 32-bit chunk, each with its own copy of the read
        # and write pointers (own feedback, so not merged): an address fans out to
        # 8 RAM cells, not to the whole word.
        held = _thermometer(m, "held", depth, answer_valid, fifo_pop, idle)
        chunks = self.config.layout.chunks
        read_data = Signal(32 * chunks)
        for c in range(chunks):
            width = min(32, word_bits - 32 * c)
            memory = Memory(shape=width, depth=depth, init=[])
            m.submodules[f"word_memory_{c}"] = memory
            write, read = memory.write_port(), memory.read_port(domain="comb")
            write_ptr = Signal(range(depth), reset_less=True, name=f"write_ptr_{c}")
            read_ptr = Signal(range(depth), reset_less=True, name=f"read_ptr_{c}")
            m.d.comb += [write.addr.eq(write_ptr), write.en.eq(answer_valid),
                         write.data.eq(answer[32 * c: 32 * c + width]),
                         read.addr.eq(read_ptr), read_data[32 * c: 32 * c + width].eq(read.data)]
            with m.If(idle):                    # reset by idle
                m.d.sync += [write_ptr.eq(0), read_ptr.eq(0)]
            with m.Else():
                with m.If(answer_valid):
                    m.d.sync += write_ptr.eq(_wrapping_increment(write_ptr, depth))
                with m.If(fifo_pop):
                    m.d.sync += read_ptr.eq(_wrapping_increment(read_ptr, depth))
        return read_data, held, fifo_pop

    def _send_items(self, m, packer, idle, params, word, held, fifo_pop, piece_sizes):
        """The packer's items: per frame the header pieces, then its words."""
        config, P, count = self.config, self.word_bytes, self.frame_count
        buckets, per = config.buckets, self.words_per_frame
        last_frame_words = buckets - (count - 1) * per
        header_pieces = len(piece_sizes)
        # Registers reset by ``idle`` are reset_less: ``rst`` sets ``idle``, and their
        # reset then comes from that flop alone (no rst | idle gate fanned out).
        frame_index = Signal(16, reset_less=True)
        first_word = Signal(32, reset_less=True)
        word_count = Signal(16, reset_less=True)
        words_left = Signal(range(-1, per))  # the frame's words after this one, minus one
        last_word = Signal()
        m.d.comb += last_word.eq(words_left[-1])
        piece = Signal(header_pieces, reset_less=True)   # one-hot header piece
        in_words = Signal(reset_less=True)   # header sent, the frame's words follow
        # ``in_header[c]`` is ``~in_words`` in flops of their own (one per 32-bit chunk
        # of the item, each with its own feedback), for the item data multiplexer.
        in_header = [Signal(reset_less=True, init=1, name=f"in_header_{c}")
                     for c in range(config.layout.chunks)]
        # A registered comparison; frame_index changes at most once per frame (> 2 clocks).
        next_last = Signal()
        m.d.sync += next_last.eq(frame_index == count - 2)
        header = control_header(m, {
            "dst_mac": params.dst_mac, "src_mac": params.src_mac, "type": TYPE_SYNOPSIS,
            "flags": params.flags, "kind": KIND_CODES[config.kind], "seq": params.seq,
            "config_id": params.config_id, "chunk_index": frame_index,
            "chunk_count": count, "word_chunks": config.layout.chunks,
            "first_word": first_word, "word_count": word_count,
            "timestamp": params.timestamp, "auth": params.auth, "role": params.role})
        piece_copies = self._item_data(m, packer, header, word, piece, in_header,
                                       in_words, piece_sizes)
        ready = packer.items.ready                      # a register
        advance = Signal()
        m.d.comb += [
            # A frame's header waits for its first word (no gap after the header); after
            # the last word the FIFO stays empty, so nothing follows.
            packer.items.valid.eq(held[0]),
            advance.eq(ready & held[0]),
            fifo_pop.eq(ready & in_words & held[0]),
            packer.items.payload.last.eq(in_words & last_word),
        ]
        first_count = per if count > 1 else last_frame_words
        # ``in_words`` flips at the header's last piece and at the frame's last word.
        boundary = Signal()
        m.d.comb += boundary.eq(Mux(in_words, last_word, piece[-1]))
        with m.If(idle.first):
            m.d.sync += [in_words.eq(0)] + [h.eq(1) for h in in_header]
        with m.Elif(advance & boundary):
            m.d.sync += [in_words.eq(~in_words)] + [h.eq(~h) for h in in_header]
        with m.If(idle.first):
            m.d.sync += [piece.eq(1)] + [copy.eq(1) for copy in piece_copies]
        with m.Elif(advance & ~in_words):
            m.d.sync += [piece.eq(Cat(piece[-1], piece[:-1]))]
            m.d.sync += [copy.eq(Cat(copy[-1], copy[:-1])) for copy in piece_copies]
            with m.If(piece[-1]):
                m.d.sync += words_left.eq(word_count - 2)
        with m.Elif(advance & in_words):
            m.d.sync += words_left.eq(words_left - 1)
        # One clock after the header was taken (from a flop: 64 enables), the header
        # fields move on to the next frame; its header starts two clocks later at the
        # earliest (at least one word in between).
        header_taken = Signal()
        m.d.sync += header_taken.eq(advance & ~in_words & piece[-1])
        idle_fields = [idle.new(f"idle_fields_{k}") for k in range(2)]
        with m.If(idle_fields[0]):
            m.d.sync += [frame_index.eq(0), word_count.eq(first_count)]
        with m.Elif(header_taken):
            m.d.sync += [frame_index.eq(frame_index + 1),
                         word_count.eq(Mux(next_last, last_frame_words, per))]
        with m.If(idle_fields[1]):
            m.d.sync += first_word.eq(0)
        with m.Elif(header_taken):
            m.d.sync += first_word.eq(first_word + per)

    def _item_data(self, m, packer, header, word, piece, in_header, in_words,
                   piece_sizes):
        """The item multiplexer: a header piece or the word's bytes, and the item size.
        Returns the per-chunk copies of the one-hot ``piece``."""
        P, chunks = self.word_bytes, self.config.layout.chunks
        header_pieces = len(piece_sizes)
        # Chunk c (bits 32c..32c+31) goes out big-endian, least significant chunk first.
        word_as_bytes = Cat(*(word[8 * (4 * c + 3 - b): 8 * (4 * c + 4 - b)]
                              for c in range(chunks) for b in range(4)))
        next_data = Signal(8 * P)
        next_size = Signal.like(packer.items.payload.size)
        size_terms = 0
        for h in range(header_pieces):
            size_terms = size_terms | Mux(piece[h], piece_sizes[h], 0)
        # Per 32-bit chunk of the item, a copy of the one-hot piece (own feedback, so
        # not merged) selects the header bytes: ~32 loads per flop.
        piece_copies = []
        for c in range(chunks):
            copy = Signal(header_pieces, reset_less=True, init=1, name=f"piece_{c}")
            piece_copies.append(copy)
            bits = slice(32 * c, 32 * (c + 1))
            header_terms = 0
            for h in range(header_pieces):
                lo, hi = h * P, min((h + 1) * P, HEADER_BYTES)
                piece_bytes = Signal(8 * P, name=f"header_piece_{h}_{c}")
                m.d.comb += piece_bytes.eq(header[8 * lo: 8 * hi])
                header_terms = header_terms | Mux(copy[h], piece_bytes[bits], 0)
            m.d.comb += next_data[bits].eq(Mux(in_header[c], header_terms,
                                               word_as_bytes[bits]))
        m.d.comb += next_size.eq(Mux(in_words, P, size_terms))
        m.d.comb += [packer.items.payload.data.eq(next_data),
                     packer.items.payload.size.eq(next_size)]
        return piece_copies

    def _ports_and_done(self, m, packer, idle, params):
        """Each beat to every enabled port (the packer's fork), each port behind a skid
        buffer whose ``ready`` is a lightly loaded flop; the frame count and the end of
        the export. Returns ``finishing`` (registered: the last beat has left)."""
        count = self.frame_count
        m.submodules.inband_slice = inband_slice = _PortSlice(data_width=self.data_width)
        m.submodules.host_slice = host_slice = _PortSlice(data_width=self.data_width)
        connect(m, inband_slice.source, flipped(self.inband))
        connect(m, host_slice.source, flipped(self.host))
        connect(m, packer.sources[0], inband_slice.sink)
        connect(m, packer.sources[1], host_slice.sink)
        m.d.comb += packer.enable.eq(Cat(params.to_inband, params.to_host))

        frames_this_export = Signal(range(count + 1), reset_less=True)
        last_export_frame = Signal()
        m.d.sync += last_export_frame.eq(frames_this_export == count - 1)
        draining = Signal()       # the last beat is in the port slices
        frame_sent = packer.frame_sent          # a register
        with m.If(idle):
            m.d.sync += frames_this_export.eq(0)
        with m.Elif(frame_sent):
            m.d.sync += frames_this_export.eq(frames_this_export + 1)
        with m.If(frame_sent):
            m.d.sync += self.frames.eq(self.frames + 1)
            with m.If(last_export_frame):
                m.d.sync += draining.eq(1)
        # Done once the last beat has left the port slices too.
        finishing = Signal()            # registered: the ports are empty
        m.d.sync += finishing.eq(draining & ~finishing & ~self.inband.valid
                                 & ~self.host.valid)
        with m.If(finishing):
            m.d.sync += [draining.eq(0), self.busy.eq(0), self.done.eq(1),
                         self.release.eq(params.auto_release)]
        return finishing


class _IdleCopies:
    """Copies of the exporter's ``idle`` flop (``~busy``), each with its own feedback so
    that synthesis does not merge them: each drives a share of ``idle``'s loads."""

    def __init__(self):
        self.copies = []

    @property
    def first(self):
        return self.copies[0]

    def new(self, name):
        copy = Signal(init=1, name=name)
        self.copies.append(copy)
        return copy

    def drive(self, m, starts, finishing):
        """Idle until an export starts, again once it finishes."""
        m.d.sync += [copy.eq(Mux(copy, ~starts, finishing)) for copy in self.copies]


def _thermometer(m, name, depth, up, down, idle):
    """A count 0..depth as a thermometer code (bit i: count > i), +up -down; reset by
    ``idle``."""
    t = Signal(depth, name=name, reset_less=True)     # reset by idle
    steps = []
    for i in range(depth):
        below = t[i - 1] if i > 0 else Const(1)
        above = t[i + 1] if i < depth - 1 else Const(0)
        steps.append(Mux(up & ~down, below, Mux(down & ~up, above, t[i])))
    with m.If(idle):
        m.d.sync += t.eq(0)
    with m.Else():
        m.d.sync += t.eq(Cat(*steps))
    return t


def _wrapping_increment(ptr, depth):
    return Mux(ptr == depth - 1, 0, ptr + 1)


class _PortSlice(wiring.Component):
    """:class:`hw.frames.frame.RegisterSlice` (output register + skid register, full
    throughput) with ``sink.ready`` in a flop of its own: the skid flag drives the
    ~75 enables and the output multiplexer, the ``ready`` flop only the packer's
    handshake."""

    def __init__(self, *, data_width: int):
        check_data_width(data_width)
        self.data_width = data_width
        super().__init__({"sink": In(FrameStream(data_width)),
                          "source": Out(FrameStream(data_width))})

    def elaborate(self, platform):
        m = Module()
        skid_valid = Signal()
        ready = Signal(init=1)                 # always ~skid_valid
        skid = Signal.like(self.sink.payload)
        m.d.comb += self.sink.ready.eq(ready)
        with m.If(~self.source.valid | self.source.ready):
            with m.If(skid_valid):
                m.d.sync += [self.source.payload.eq(skid), self.source.valid.eq(1),
                             skid_valid.eq(0), ready.eq(1)]
            with m.Else():
                m.d.sync += [self.source.payload.eq(self.sink.payload),
                             self.source.valid.eq(self.sink.valid)]
        with m.Elif(self.sink.valid & ready):
            m.d.sync += [skid_valid.eq(1), ready.eq(0)]
        with m.If(~skid_valid):
            m.d.sync += skid.eq(self.sink.payload)
        return m

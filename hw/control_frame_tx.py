# SPDX-License-Identifier: BSD-2-Clause
"""Building control frames (EtherType 0x88B5) in gateware: header, byte packer, markers.

Where it sits (``DESIGN.md``): the "markers / export frames" arrow into the output mux.
The interval control (:mod:`hw.interval_control`) asks :class:`MarkerFrameSource` for a
marker frame at each marker-mode boundary; the exporter (:mod:`hw.exporter`) streams the
frozen copy as synopsis chunk frames through :class:`BytePacker`; both go out through the
frame inserter (:mod:`hw.marker_inserter`).

The byte layout is ``host_sw.control_frame`` (``docs/SPEC.md`` §6), imported, never
re-typed: :func:`control_header` walks :data:`host_sw.control_frame.HEADER_FIELDS` to
place each field big-endian at its offset.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from host_sw.control_frame import HEADER_FIELDS, PAYLOAD_OFFSET, TYPE_MARKER, VERSION
from host_sw.hashing import ETHERTYPE_CONTROL, MIN_FRAME_BYTES
from host_sw.regmap import KIND_CODES

from .frame import FrameStream, RegisterSlice, check_data_width

__all__ = ["HEADER_BYTES", "MARKER_FRAME_BYTES", "control_header", "header_field",
           "marker_request_layout", "BytePacker", "MarkerFrameSource"]

#: Bytes of the fixed control frame header (Ethernet header included).
HEADER_BYTES = PAYLOAD_OFFSET
#: Bytes of a marker frame: the header zero-padded to the Ethernet minimum.
MARKER_FRAME_BYTES = max(PAYLOAD_OFFSET, MIN_FRAME_BYTES)

_FIELDS = {f.name: f for f in HEADER_FIELDS}


def control_header(m: Module, values: dict, *, name: str = "control_header") -> Signal:
    """The ``HEADER_BYTES``-byte control header as a signal driven combinationally in
    ``m``; byte ``i`` of the frame at bits ``8i+7 .. 8i`` (lane order, as on the stream).

    ``values`` maps field names of ``HEADER_FIELDS`` to Amaranth values or ints (each
    truncated/zero-extended to the field's width and placed big-endian); fields not named
    are zero. ``ethertype`` and ``version`` default to 0x88B5 and ``VERSION``.
    """
    values = dict(values)
    unknown = set(values) - set(_FIELDS)
    if unknown:
        raise ValueError(f"no control frame field(s) {sorted(unknown)}")
    values.setdefault("ethertype", ETHERTYPE_CONTROL)
    values.setdefault("version", VERSION)
    header = Signal(8 * HEADER_BYTES, name=name)
    for f in HEADER_FIELDS:
        v = values.get(f.name, 0)
        v = Const(v, f.bits) if isinstance(v, int) else Value.cast(v)
        word = Signal(f.bits, name=f"{name}_{f.name}")
        m.d.comb += word.eq(v)
        # Big-endian: the field's most significant byte at its lowest frame offset.
        for j in range(f.size):
            byte = f.offset + j
            m.d.comb += header[8 * byte: 8 * byte + 8].eq(
                word[8 * (f.size - 1 - j): 8 * (f.size - j)])
    return header


def header_field(header, name: str):
    """Field ``name`` of a captured header (``8 * HEADER_BYTES`` bits, byte ``i`` at
    ``8i``) as an unsigned value, big-endian decoded."""
    f = _FIELDS[name]
    return Cat(*(header[8 * (f.offset + f.size - 1 - j): 8 * (f.offset + f.size - j)]
                 for j in range(f.size)))


def marker_request_layout() -> data.StructLayout:
    """A marker request: ``seq`` (the interval that ends), ``timestamp`` (ticks at the
    boundary), ``flags`` (:class:`host_sw.control_frame.IntervalFlags` of that interval)."""
    fields = {n: unsigned(_FIELDS[n].bits) for n in ("seq", "timestamp", "flags")}
    return data.StructLayout(fields)


class BytePacker(wiring.Component):
    """Packs a stream of byte groups ("items") into frame beats.

    Parameters
    ----------
    data_width:
        Output frame stream width in bits.
    item_bytes:
        Most bytes one item carries.

    Members
    -------
    items: In(stream.Signature({data, size, last}))
        ``data``: ``item_bytes`` bytes, byte ``i`` at bits ``8i`` (bits past ``size``
        bytes must be zero); ``size``: bytes used, 1..``item_bytes``; ``last``: the
        frame's final item. One item per clock is taken while there is room.
    source: Out(FrameStream(data_width))
        The frames, from an output register (``error`` always 0). Between frames there is
        at least one idle cycle; inside a frame ``valid`` never drops as long as items
        arrive at least as fast as beats leave.

    The buffer holds ``2 * lanes + item_bytes`` bytes; an item is taken while the buffer
    holds at most ``2 * lanes`` bytes, so a stream of items of at least ``lanes`` bytes
    per clock keeps ``source`` full.
    """

    def __init__(self, *, data_width: int, item_bytes: int):
        check_data_width(data_width)
        if not isinstance(item_bytes, int) or item_bytes < 1:
            raise ValueError(f"item_bytes must be a positive integer, not {item_bytes!r}")
        self.data_width = data_width
        self.item_bytes = item_bytes
        self.lanes = data_width // 8
        self.buffer_bytes = 2 * self.lanes + item_bytes
        super().__init__({
            "items": In(stream.Signature(data.StructLayout({
                "data": unsigned(8 * item_bytes),
                "size": unsigned((item_bytes + 1).bit_length()),
                "last": unsigned(1)}))),
            "source": Out(FrameStream(data_width)),
        })

    def elaborate(self, platform):
        m = Module()
        lanes, B, P = self.lanes, self.buffer_bytes, self.item_bytes
        buf = Signal(8 * B)
        fill = Signal(range(B + 1))
        ending = Signal()       # the frame's last item is in the buffer

        out_free = ~self.source.valid | self.source.ready
        can_pop = (fill >= lanes) | (ending & (fill != 0))
        pop = Signal()
        m.d.comb += pop.eq(out_free & can_pop)
        last_beat = ending & (fill <= lanes)

        fill_after_pop = Signal.like(fill)
        buf_after_pop = Signal.like(buf)
        with m.If(pop):
            m.d.comb += [fill_after_pop.eq(Mux(fill >= lanes, fill - lanes, 0)),
                         buf_after_pop.eq(buf >> (8 * lanes))]
        with m.Else():
            m.d.comb += [fill_after_pop.eq(fill), buf_after_pop.eq(buf)]

        push = Signal()
        m.d.comb += [self.items.ready.eq(~ending & (fill <= B - P)),
                     push.eq(self.items.valid & self.items.ready)]
        # The item goes in at the fill after this cycle's pop. Both placements (with and
        # without a pop) are built from `fill` alone and `pop` only selects (short path
        # from the output handshake). A push never meets the last (partial) pop.
        placed_no_pop, placed_pop = Signal.like(buf), Signal.like(buf)
        with m.Switch(fill):
            for k in range(B - P + 1):
                with m.Case(k):
                    m.d.comb += placed_no_pop.eq(self.items.payload.data << (8 * k))
                    if k >= lanes:
                        m.d.comb += placed_pop.eq(
                            self.items.payload.data << (8 * (k - lanes)))
        placed = Mux(pop, placed_pop, placed_no_pop)
        with m.If(push):
            m.d.sync += [buf.eq(buf_after_pop | placed),
                         fill.eq(fill_after_pop + self.items.payload.size),
                         ending.eq(self.items.payload.last)]
        with m.Else():
            m.d.sync += [buf.eq(buf_after_pop), fill.eq(fill_after_pop)]
            with m.If(pop & last_beat):
                m.d.sync += ending.eq(0)

        keep = Signal(lanes)
        with m.If(fill >= lanes):
            m.d.comb += keep.eq(-1)
        with m.Else():
            with m.Switch(fill):
                for k in range(lanes):
                    with m.Case(k):
                        m.d.comb += keep.eq((1 << k) - 1)
        with m.If(pop):
            m.d.sync += [self.source.valid.eq(1),
                         self.source.payload.data.eq(buf[:8 * lanes]),
                         self.source.payload.keep.eq(keep),
                         self.source.payload.last.eq(last_beat),
                         self.source.payload.error.eq(0)]
        with m.Elif(self.source.ready):
            m.d.sync += self.source.valid.eq(0)
        return m


class MarkerFrameSource(wiring.Component):
    """Builds one marker frame (``host_sw.control_frame.build_marker``) per request.

    Parameters
    ----------
    config:
        The synopsis configuration (its kind code and ``layout.chunks`` go into the
        frame).
    data_width:
        Frame stream width in bits.

    Members
    -------
    request: In(stream.Signature(marker_request_layout()))
        ``seq``, ``timestamp``, ``flags`` of the marker. Taken (``ready``) when no marker
        is being built.
    src_mac, dst_mac: In(48)
        LOCAL_MAC and EXPORT_DST_MAC (byte 0 of the address in bits 47..40), sampled with
        the request.
    config_id: In(32)
        CONFIG_ID, sampled with the request.
    source: Out(FrameStream(data_width))
        The marker frame: ``MARKER_FRAME_BYTES`` (60) bytes, ``valid`` high for all its
        beats until each transfers (no gaps inside the frame), through a skid buffer
        (``ready`` is only registered logic inside; the frame starts 2 cycles after the
        request is taken).
    """

    def __init__(self, *, config, data_width: int):
        check_data_width(data_width)
        if not getattr(config, "kind", None) in KIND_CODES:
            raise ValueError(f"config must be an LdaConfig, RdaConfig or LdsConfig, "
                             f"not {config!r}")
        self.config = config
        self.data_width = data_width
        self.beats = -(-MARKER_FRAME_BYTES // (data_width // 8))
        super().__init__({
            "request": In(stream.Signature(marker_request_layout())),
            "src_mac": In(48), "dst_mac": In(48), "config_id": In(32),
            "source": Out(FrameStream(data_width)),
        })

    def elaborate(self, platform):
        m = Module()
        w, lanes = self.data_width, self.data_width // 8
        req = self.request.payload
        header = control_header(m, {
            "dst_mac": self.dst_mac, "src_mac": self.src_mac, "type": TYPE_MARKER,
            "flags": req.flags, "kind": KIND_CODES[self.config.kind], "seq": req.seq,
            "config_id": self.config_id, "word_chunks": self.config.layout.chunks,
            "timestamp": req.timestamp})
        total_bits = 8 * lanes * self.beats
        frame = Signal(total_bits)          # the rest of the frame, next beat at bit 0
        remaining = Signal(range(self.beats + 1))
        last_keep = (1 << (MARKER_FRAME_BYTES - lanes * (self.beats - 1))) - 1

        # The frame register shifts behind a skid buffer: its wide enable sees a
        # registered ready, not the inserters' combinational one.
        m.submodules.slice = out = RegisterSlice(data_width=w)
        connect(m, out.source, flipped(self.source))
        m.d.comb += self.request.ready.eq(remaining == 0)
        with m.If(self.request.valid & self.request.ready):
            m.d.sync += [frame.eq(header), remaining.eq(self.beats)]
        with m.Elif(out.sink.valid & out.sink.ready):
            m.d.sync += [frame.eq(frame >> w), remaining.eq(remaining - 1)]
        m.d.comb += [
            out.sink.valid.eq(remaining != 0),
            out.sink.payload.data.eq(frame[:w]),
            out.sink.payload.last.eq(remaining == 1),
            out.sink.payload.keep.eq(Mux(remaining == 1, last_keep, (1 << lanes) - 1)),
            out.sink.payload.error.eq(0),
        ]
        return m


# SPDX-License-Identifier: BSD-2-Clause
"""The sender's marker frames (EtherType 0x88B5, type 1) in gateware, with their tag.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): the "markers" arrow into
the output mux. The interval control (:mod:`hw.interval.interval_control`, mode 2) requests a
marker at each boundary; :class:`MarkerFrameSource` builds the frame of
``host_sw.contracts.frames.control_frame.build_marker`` byte for byte (the header through
:func:`hw.inband.control_frame_tx.control_header`, the SipHash-2-4 tag through
:class:`hw.inband.siphash.SipHash`) and offers it to the frame merger (:mod:`hw.frames.frame_merger`).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, connect, flipped

from host_sw.contracts.config import KIND_CODES
from host_sw.contracts.frames.frame_format import TYPE_MARKER
from host_sw.contracts.siphash import KEY_BYTES, TAG_BYTES

from hw.inband.control_frame_tx import HEADER_BYTES, MARKER_FRAME_BYTES, control_header, marker_request_layout
from hw.frames.frame import FrameStream, RegisterSlice, check_data_width
from hw.inband.siphash import SipHash, header_feed

__all__ = ["MarkerFrameSource"]


class MarkerFrameSource(wiring.Component):
    """Builds one marker frame (``host_sw.contracts.frames.control_frame.build_marker``) per request.

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
    key, auth: In(128), In(1)
        AUTH_KEY and AUTH_MODE.enable, sampled with the request: the tag is under ``key``
        (``auth`` byte 1) when ``auth``, else under the zero key.
    source: Out(FrameStream(data_width))
        The marker frame: ``MARKER_FRAME_BYTES`` (60) bytes (header, tag, zero padding),
        ``valid`` high for all its beats until each transfers (no gaps inside the frame),
        through a skid buffer (``ready`` is only registered logic inside). The header's
        tag is computed first (:class:`hw.inband.siphash.SipHash`, 12 words): the frame starts
        :data:`TAG_LATENCY` + 2 cycles after the request is taken.
    """

    #: Cycles the tag of the 48-byte header takes, from the request to the tag.
    TAG_LATENCY = 43

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
            "key": In(8 * KEY_BYTES), "auth": In(1),
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
            "timestamp": req.timestamp, "auth": self.auth})
        total_bits = 8 * lanes * self.beats
        # the rest of the frame, next beat at bit 0 (data: read while `remaining`)
        frame = Signal(total_bits, reset_less=True)
        remaining = Signal(range(self.beats + 1))
        last_keep = (1 << (MARKER_FRAME_BYTES - lanes * (self.beats - 1))) - 1

        # The frame register shifts behind a skid buffer: its wide enable sees a
        # registered ready, not the inserters' combinational one. While no frame is
        # being sent (`idle`, a register equal to ``remaining == 0``) it follows the
        # header every cycle, so it holds the request's header after the transfer
        # without the request's valid in its load select (through three LUT levels to
        # ~250 flip-flops, that select would be the core's critical path).
        # The register is in slices of whole beats (64 bits or one beat), each steered by
        # its own copies of `idle` and `tagging` (each copy with its own feedback, so
        # synthesis keeps them apart): one enable net from the skid buffer's state
        # through those two flops to all 480 bits was the two-clock RDA core's
        # control-clock path on two of three seeds (4.1 and 4.7 ns of routing on that
        # net, ``docs/HARDWARE.md``).
        m.submodules.slice = out = RegisterSlice(data_width=w)
        connect(m, out.source, flipped(self.source))
        step = w * max(1, 64 // w)
        slices = [range(lo, min(lo + step, total_bits)) for lo in range(0, total_bits, step)]
        idles = [Signal(init=1, name=f"idle{k}" if k else "idle") for k in range(len(slices))]
        taggings = [Signal(name=f"tagging{k}" if k else "tagging")
                    for k in range(len(slices))]  # header held in ``frame``, tag computing
        idle, tagging = idles[0], taggings[0]
        m.submodules.engine = engine = SipHash()
        m.d.comb += [
            self.request.ready.eq(idle),
            engine.key.eq(Mux(self.auth, self.key, 0)),
            engine.start.eq(idle & self.request.valid),
        ]
        # The header's words, loaded whenever ``frame`` follows the header.
        header_feed(m, engine, header[:8 * HEADER_BYTES], load=idle, start=engine.start,
                    name="header")
        with m.If(idle):
            with m.If(self.request.valid):
                m.d.sync += remaining.eq(self.beats)
        with m.Elif(~tagging & out.sink.ready):
            m.d.sync += remaining.eq(remaining - 1)
        tag_bits = range(8 * HEADER_BYTES, 8 * (HEADER_BYTES + TAG_BYTES))
        shifted = frame >> w
        for bits, idle_k, tagging_k in zip(slices, idles, taggings):
            part = slice(bits.start, bits.stop)
            with m.If(idle_k):
                m.d.sync += frame[part].eq(header[part])
                with m.If(self.request.valid):
                    m.d.sync += [idle_k.eq(0), tagging_k.eq(1)]
            with m.Elif(tagging_k):
                with m.If(engine.done):
                    m.d.sync += tagging_k.eq(0)
                    lo, hi = max(bits.start, tag_bits.start), min(bits.stop, tag_bits.stop)
                    if lo < hi:
                        m.d.sync += frame[lo:hi].eq(
                            engine.tag[lo - tag_bits.start: hi - tag_bits.start])
            with m.Elif(out.sink.ready):
                m.d.sync += [frame[part].eq(shifted[part]), idle_k.eq(remaining == 1)]
        m.d.comb += [
            out.sink.valid.eq(~idle & ~tagging),
            out.sink.payload.data.eq(frame[:w]),
            out.sink.payload.last.eq(remaining == 1),
            out.sink.payload.keep.eq(Mux(remaining == 1, last_keep, (1 << lanes) - 1)),
            out.sink.payload.error.eq(0),
        ]
        return m


# SPDX-License-Identifier: BSD-2-Clause
"""A small 1000 Mb/s RGMII Ethernet MAC for the board targets: DDR pins ↔ frame streams of
the measurement core's domain.

Where it sits (``DESIGN.md``, "Parts and how data flows"): this is what turns a board's
Ethernet PHY into the "frames in" / "frames out" of the core. Receive: RGMII DDR inputs
(``amaranth.lib.io.DDRBuffer``, IDDRX1F on ECP5) → :class:`RGMIIReceiver` (preamble/SFD
strip, FCS check and strip; a bad FCS, an ``RX_ER`` or a frame shorter than its FCS sets
the frame ``error`` flag of the last beat) → :class:`BytePacker` (bytes → beats of the
core's data width, :func:`hw.frames.frame.frame_beat_layout`) → ``AsyncFIFO`` into the core
domain. Transmit: core domain → ``AsyncFIFO`` → :class:`ByteUnpacker` (beats →
bytes; starts a frame only with a few beats buffered, so it never runs dry mid-frame) →
a byte register slice → :class:`RGMIITransmitter` (preamble + SFD, padding to 60 bytes, FCS append — inverted
when the frame's ``error`` flag is set, so the next hop drops it — and the 12-byte
inter-frame gap) → DDR outputs (ODDRX1F). :class:`RGMIIPort` puts it together.

Limits (documented in ``docs/HARDWARE.md``): 1000 Mb/s only (no 10/100 nibble mode, no
MDIO management); the RGMII clock-to-data skew (≈ 2 ns) must come from the PHY's internal
delays (RGMII-ID), as the pins use plain DDR registers.

No published Amaranth RGMII MAC fits (PyPI has LiteEth, for Migen/LiteX), so this is
hand-written; it only does what the tap needs.
"""

from amaranth.hdl import Cat, Const, DomainRenamer, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from hw.frames.frame import FrameStream, RegisterSlice, check_data_width, frame_beat_layout

__all__ = ["CRC32_RESIDUE", "crc32_byte_update", "ByteBeat", "ByteStream",
           "RGMIIReceiver", "RGMIITransmitter", "BytePacker", "ByteUnpacker", "RGMIIPort"]

#: Ethernet CRC-32 (reflected polynomial), register preset to all ones.
CRC32_POLY = 0xEDB88320
#: Register value after running the CRC over a frame *and* its correct FCS.
CRC32_RESIDUE = 0xDEBB20E3

PREAMBLE = 0x55
SFD = 0xD5
MIN_PAYLOAD_BYTES = 60          # a frame without FCS is padded to this on transmit
IFG_BYTES = 12


def _crc32_matrix():
    """For each bit of the next CRC register: (mask over the 32 CRC bits, mask over the 8
    data bits) whose XOR it is (the byte-wise CRC-32 step is linear)."""
    state = [(1 << i, 0) for i in range(32)]
    for i in range(8):
        fb = (state[0][0], state[0][1] ^ (1 << i))
        state = state[1:] + [(0, 0)]
        state = [(c ^ fb[0], d ^ fb[1]) if (CRC32_POLY >> k) & 1 else (c, d)
                 for k, (c, d) in enumerate(state)]
    return state


_CRC32_MATRIX = _crc32_matrix()


def crc32_byte_update(crc, byte):
    """The CRC-32 register after one more byte (LSB first), as an Amaranth expression."""
    bits = []
    for crc_mask, data_mask in _CRC32_MATRIX:
        terms = [crc[i] for i in range(32) if crc_mask >> i & 1]
        terms += [byte[i] for i in range(8) if data_mask >> i & 1]
        value = terms[0]
        for term in terms[1:]:
            value = value ^ term
        bits.append(value)
    return Cat(*bits)


#: One byte of a frame on the MAC side: the byte, end of frame, and (with ``last``) error.
ByteBeat = data.StructLayout({"data": 8, "last": 1, "error": 1})


def ByteStream() -> stream.Signature:
    """A stream of :data:`ByteBeat` (frames one byte per transfer)."""
    return stream.Signature(ByteBeat)


class RGMIIReceiver(wiring.Component):
    """RGMII receive side at 1000 Mb/s: DDR pin samples → frame bytes without preamble,
    SFD and FCS.

    Members
    -------
    rx_ctl: In(2)
        ``RX_CTL`` sampled at the rising (bit 0: RX_DV) and falling edge (bit 1:
        RX_DV xor RX_ER) of ``RX_CLK``.
    rx_data: In(data.ArrayLayout(4, 2))
        ``RXD[3:0]`` at the rising edge (element 0, the low nibble) and falling edge.
    source: Out(ByteStream())
        Frame bytes; no back-pressure (``ready`` is ignored: the line cannot wait). A
        frame's last byte carries ``error`` = bad FCS, RX_ER seen, or shorter than 5 bytes
        (nothing is sent for a frame of 4 bytes or less).

    A byte leaves two clocks after the last of the next five bytes arrived (the four
    bytes held back are the FCS candidates).
    """

    rx_ctl: In(2)
    rx_data: In(data.ArrayLayout(4, 2))
    source: Out(ByteStream())

    def elaborate(self, platform):
        m = Module()
        # Register the pin samples (decouples the IDDR outputs from the logic).
        dv = Signal()
        er = Signal()
        byte = Signal(8)
        m.d.sync += [dv.eq(self.rx_ctl[0]), er.eq(self.rx_ctl[0] ^ self.rx_ctl[1]),
                     byte.eq(Cat(self.rx_data[0], self.rx_data[1]))]

        in_frame = Signal()
        held = Signal(data.ArrayLayout(8, 4))    # the last four bytes (FCS candidates)
        held_count = Signal(range(5))
        pending = Signal(8)                      # the byte before them, not yet sent
        pending_valid = Signal()
        crc = Signal(32, init=0xFFFFFFFF)
        saw_error = Signal()

        m.d.sync += self.source.valid.eq(0)
        with m.If(~in_frame):
            with m.If(dv & (byte == SFD)):
                m.d.sync += [in_frame.eq(1), held_count.eq(0), pending_valid.eq(0),
                             crc.eq(0xFFFFFFFF), saw_error.eq(er)]
        with m.Elif(dv):
            # One more frame byte: shift it into the hold line.
            m.d.sync += [crc.eq(crc32_byte_update(crc, byte)),
                         held[0].eq(byte), held[1].eq(held[0]), held[2].eq(held[1]),
                         held[3].eq(held[2]), saw_error.eq(saw_error | er)]
            with m.If(held_count == 4):
                m.d.sync += [pending.eq(held[3]), pending_valid.eq(1)]
                with m.If(pending_valid):
                    m.d.sync += [self.source.payload.data.eq(pending),
                                 self.source.payload.last.eq(0),
                                 self.source.payload.error.eq(0),
                                 self.source.valid.eq(1)]
            with m.Else():
                m.d.sync += held_count.eq(held_count + 1)
        with m.Else():
            # End of frame: the pending byte is the last one before the FCS.
            m.d.sync += in_frame.eq(0)
            with m.If(pending_valid):
                m.d.sync += [self.source.payload.data.eq(pending),
                             self.source.payload.last.eq(1),
                             self.source.payload.error.eq(saw_error | (crc != CRC32_RESIDUE)),
                             self.source.valid.eq(1)]
        return m


class RGMIITransmitter(wiring.Component):
    """RGMII transmit side at 1000 Mb/s: frame bytes → preamble, SFD, bytes, padding,
    FCS, inter-frame gap on DDR pin values.

    Members
    -------
    sink: In(ByteStream())
        Frame bytes. A frame starts when its first byte is valid; during the frame the
        sender must keep a byte valid every clock (a missing byte is sent as an RGMII
        transmit error and the frame's FCS is inverted).
    tx_ctl: Out(2)
        ``TX_CTL`` for the rising (TX_EN) and falling (TX_EN xor TX_ER) edge.
    tx_data: Out(data.ArrayLayout(4, 2))
        ``TXD[3:0]``: low nibble at the rising edge, high nibble at the falling edge.
    """

    sink: In(ByteStream())
    tx_ctl: Out(2)
    tx_data: Out(data.ArrayLayout(4, 2))

    def elaborate(self, platform):
        m = Module()
        en = Signal()
        err = Signal()
        byte = Signal(8)
        m.d.comb += [self.tx_ctl.eq(Cat(en, en ^ err)),
                     self.tx_data[0].eq(byte[:4]), self.tx_data[1].eq(byte[4:])]

        count = Signal(range(64))
        crc = Signal(32, init=0xFFFFFFFF)
        bad = Signal()
        fcs = Signal(32)

        m.d.sync += [en.eq(0), err.eq(0), byte.eq(0)]
        with m.FSM(name="rgmii_tx"):
            with m.State("IDLE"):
                with m.If(self.sink.valid):
                    m.d.sync += [count.eq(0), crc.eq(0xFFFFFFFF), bad.eq(0)]
                    m.next = "PREAMBLE"
            with m.State("PREAMBLE"):
                m.d.sync += [en.eq(1), byte.eq(PREAMBLE), count.eq(count + 1)]
                with m.If(count == 6):
                    m.next = "SFD"
            with m.State("SFD"):
                m.d.sync += [en.eq(1), byte.eq(SFD), count.eq(0)]
                m.next = "DATA"
            with m.State("DATA"):
                m.d.comb += self.sink.ready.eq(1)
                with m.If(count != MIN_PAYLOAD_BYTES):
                    m.d.sync += count.eq(count + 1)
                with m.If(self.sink.valid):
                    m.d.sync += [en.eq(1), byte.eq(self.sink.payload.data),
                                 crc.eq(crc32_byte_update(crc, self.sink.payload.data))]
                    with m.If(self.sink.payload.last):
                        m.d.sync += bad.eq(bad | self.sink.payload.error)
                        with m.If(count >= MIN_PAYLOAD_BYTES - 1):
                            m.next = "FCS"
                        with m.Else():
                            m.next = "PAD"
                with m.Else():
                    # Ran dry mid-frame: signal a transmit error, spoil the FCS.
                    m.d.sync += [en.eq(1), err.eq(1), bad.eq(1)]
            with m.State("PAD"):
                m.d.sync += [en.eq(1), byte.eq(0), crc.eq(crc32_byte_update(crc, Const(0, 8))),
                             count.eq(count + 1)]
                with m.If(count == MIN_PAYLOAD_BYTES - 1):
                    m.next = "FCS"
            with m.State("FCS"):
                # FCS = complement of the register, LSB byte first; inverted again when bad.
                value = ~crc ^ bad.replicate(32)
                m.d.sync += [en.eq(1), byte.eq(value[:8]), fcs.eq(value[8:]), count.eq(1)]
                m.next = "FCS_REST"
            with m.State("FCS_REST"):
                m.d.sync += [en.eq(1), byte.eq(fcs[:8]), fcs.eq(fcs >> 8), count.eq(count + 1)]
                with m.If(count == 3):
                    m.d.sync += count.eq(0)
                    m.next = "GAP"
            with m.State("GAP"):
                m.d.sync += count.eq(count + 1)
                with m.If(count == IFG_BYTES - 2):
                    m.next = "IDLE"
        return m


class BytePacker(wiring.Component):
    """Frame bytes → beats of ``data_width`` bits (:func:`hw.frames.frame.frame_beat_layout`,
    lane 0 = earliest byte, ``keep`` contiguous from lane 0).

    Members
    -------
    sink: In(ByteStream())
        Bytes (``ready`` is always 1).
    source: Out(stream.Signature(frame_beat_layout(data_width)))
        Beats; no back-pressure (``ready`` is ignored). A beat leaves one clock after its
        last byte.
    """

    def __init__(self, *, data_width: int):
        check_data_width(data_width)
        self.data_width = data_width
        super().__init__({"sink": In(ByteStream()),
                          "source": Out(stream.Signature(frame_beat_layout(data_width)))})

    def elaborate(self, platform):
        m = Module()
        lanes = self.data_width // 8
        lane = Signal(range(lanes))
        beat = Signal(frame_beat_layout(self.data_width))
        m.d.comb += self.sink.ready.eq(1)
        m.d.sync += self.source.valid.eq(0)
        with m.If(self.sink.valid):
            payload = self.sink.payload
            # Lane 0 starts a beat: the other lanes are cleared (zero past the frame end).
            for k in range(lanes):
                with m.If(lane == k):
                    if k == 0:
                        m.d.sync += [beat.data.eq(payload.data), beat.keep.eq(1)]
                    else:
                        m.d.sync += [beat.data.word_select(k, 8).eq(payload.data),
                                     beat.keep[k].eq(1)]
            done = payload.last | (lane == lanes - 1)
            m.d.sync += lane.eq(0 if lanes == 1 else lane + 1)
            with m.If(done):
                m.d.sync += [lane.eq(0), self.source.valid.eq(1),
                             self.source.payload.eq(beat),
                             self.source.payload.last.eq(payload.last),
                             self.source.payload.error.eq(payload.error & payload.last)]
                # The byte arriving now goes straight into the outgoing beat.
                for k in range(lanes):
                    with m.If(lane == k):
                        if k == 0:
                            m.d.sync += self.source.payload.data.eq(payload.data)
                        else:
                            m.d.sync += self.source.payload.data.word_select(k, 8).eq(
                                payload.data)
                        m.d.sync += self.source.payload.keep.eq((1 << (k + 1)) - 1)
        return m


class ByteUnpacker(wiring.Component):
    """Beats of ``data_width`` bits → frame bytes, starting a frame only when it cannot
    run dry.

    A frame starts when ``level`` (beats buffered in front of this block, including the
    one offered on ``sink``) reaches ``start_beats``, or when the offered first beat is
    the frame's last, or when the first beat has waited ``start_timeout`` clocks (a short
    frame whose beats have all arrived). Once started, it takes one byte per clock.

    Members
    -------
    sink: In(stream.Signature(frame_beat_layout(data_width)))
    level: In(16)
        Beats buffered (the FIFO's read level).
    source: Out(ByteStream())
    """

    def __init__(self, *, data_width: int, start_beats: int = 3, start_timeout: int = 64):
        check_data_width(data_width)
        if start_beats < 1:
            raise ValueError(f"start_beats must be at least 1, not {start_beats}")
        self.data_width = data_width
        self.start_beats = start_beats
        self.start_timeout = start_timeout
        super().__init__({"sink": In(stream.Signature(frame_beat_layout(data_width))),
                          "level": In(16),
                          "source": Out(ByteStream())})

    def elaborate(self, platform):
        m = Module()
        lanes = self.data_width // 8
        lane = Signal(range(lanes))
        in_frame = Signal()
        wait = Signal(range(self.start_timeout + 1))
        beat = self.sink.payload

        # The level compare is registered: the FIFO's level subtractor → compare →
        # r_en → read pointer was the 125 MHz critical path on ECP5. One clock stale is
        # harmless: the level only grows while a frame waits, and after a frame the
        # transmitter's FCS and gap leave many clocks before the next start.
        level_ok = Signal()
        m.d.sync += level_ok.eq(self.level >= self.start_beats)
        start = self.sink.valid & (level_ok | beat.last | (wait == self.start_timeout))
        with m.If(~in_frame & self.sink.valid & (wait != self.start_timeout)):
            m.d.sync += wait.eq(wait + 1)
        active = in_frame | start
        lane_last = Signal()
        keep_next = Signal()
        m.d.comb += keep_next.eq(beat.keep.bit_select(lane + 1, 1) if lanes > 1 else 0)
        m.d.comb += lane_last.eq((lane == lanes - 1) | ~keep_next)
        with m.If(active):
            m.d.comb += [self.source.valid.eq(self.sink.valid),
                         self.source.payload.data.eq(beat.data.word_select(lane, 8)),
                         self.source.payload.last.eq(beat.last & lane_last),
                         self.source.payload.error.eq(beat.error)]
            with m.If(self.sink.valid & self.source.ready):
                m.d.sync += [in_frame.eq(1), lane.eq(lane + 1)]
                with m.If(lane_last):
                    m.d.comb += self.sink.ready.eq(1)
                    m.d.sync += lane.eq(0)
                    with m.If(beat.last):
                        m.d.sync += [in_frame.eq(0), wait.eq(0)]
        return m


class RGMIIPort(wiring.Component):
    """One RGMII port between its pins and the core domain ``sync``.

    Parameters
    ----------
    data_width:
        Beat width of the core side.
    rx_domain:
        Clock domain of the port's receive clock (``RX_CLK``), created by the caller.
    tx_domain:
        Clock domain the transmit side runs in (125 MHz; ``None``: receive only). Its
        clock also drives ``TX_CLK``.
    fifo_depth:
        Beats of each ``AsyncFIFO``.

    Members
    -------
    rx_ctl, rx_data: In
        DDR samples of the receive pins (``rx_domain``), see :class:`RGMIIReceiver`.
    tx_ctl, tx_data: Out
        DDR values of the transmit pins (``tx_domain``), see :class:`RGMIITransmitter`.
    rx: Out(FrameStream(data_width))
        Received frames in ``sync``.
    tx: In(FrameStream(data_width))
        Frames to transmit, from ``sync`` (absent without ``tx_domain``).
    rx_overflow: Out(1)
        Sticky (in ``rx_domain``): a received beat found the FIFO full and was dropped.
    """

    def __init__(self, *, data_width: int, rx_domain: str, tx_domain: str | None = None,
                 fifo_depth: int = 16):
        check_data_width(data_width)
        if fifo_depth < 4 or fifo_depth & (fifo_depth - 1):
            raise ValueError(f"fifo_depth must be a power of two of at least 4, "
                             f"not {fifo_depth}")
        self.data_width = data_width
        self.rx_domain = rx_domain
        self.tx_domain = tx_domain
        self.fifo_depth = fifo_depth
        members = {"rx_ctl": In(2), "rx_data": In(data.ArrayLayout(4, 2)),
                   "rx": Out(FrameStream(data_width)), "rx_overflow": Out(1)}
        if tx_domain is not None:
            members |= {"tx_ctl": Out(2), "tx_data": Out(data.ArrayLayout(4, 2)),
                        "tx": In(FrameStream(data_width))}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        width = frame_beat_layout(self.data_width).size

        # -- receive: pins → bytes → beats → FIFO → sync -----------------------------------
        rename_rx = DomainRenamer({"sync": self.rx_domain})
        m.submodules.receiver = receiver = rename_rx(RGMIIReceiver())
        m.submodules.packer = packer = rename_rx(BytePacker(data_width=self.data_width))
        m.d.comb += [receiver.rx_ctl.eq(self.rx_ctl), receiver.rx_data.eq(self.rx_data)]
        wiring.connect(m, receiver.source, packer.sink)
        m.submodules.rx_fifo = rx_fifo = AsyncFIFO(width=width, depth=self.fifo_depth,
                                                   w_domain=self.rx_domain, r_domain="sync")
        m.d.comb += [rx_fifo.w_data.eq(packer.source.payload),
                     rx_fifo.w_en.eq(packer.source.valid),
                     self.rx.valid.eq(rx_fifo.r_rdy), self.rx.payload.eq(rx_fifo.r_data),
                     rx_fifo.r_en.eq(self.rx.ready)]
        with m.If(packer.source.valid & ~rx_fifo.w_rdy):
            m.d[self.rx_domain] += self.rx_overflow.eq(1)

        # -- transmit: sync → FIFO → beats → bytes → pins ----------------------------------
        if self.tx_domain is not None:
            rename_tx = DomainRenamer({"sync": self.tx_domain})
            # The FIFO's read data comes from its memory's registered read port; a beat
            # register slice behind it (the FIFO's read enable is then a register) and a
            # byte register slice before the transmitter: the FIFO's pointer logic, the
            # unpacker's decisions and lane multiplexer, and the transmitter's CRC are
            # separate register-to-register steps (125 MHz on a speed-6 ECP5; unregistered,
            # the Colorlight's LFE5U-25F closed at 80 MHz, with the byte slice alone at
            # 105). Not `AsyncFIFOBuffered`: its output register's enable is one more LUT
            # in front of the read pointer's increment, which was the Versa's 125 MHz
            # critical path (two 2.5 ns nets, `docs/HARDWARE.md`). The beats in the slice
            # are not counted in `level`: the unpacker then waits a little longer, never
            # less.
            m.submodules.tx_fifo = tx_fifo = AsyncFIFO(
                width=width, depth=self.fifo_depth, w_domain="sync", r_domain=self.tx_domain)
            m.submodules.tx_beats = tx_beats = rename_tx(
                RegisterSlice(shape=frame_beat_layout(self.data_width)))
            m.submodules.unpacker = unpacker = rename_tx(
                ByteUnpacker(data_width=self.data_width))
            m.submodules.tx_slice = tx_slice = rename_tx(RegisterSlice(shape=ByteBeat))
            m.submodules.transmitter = transmitter = rename_tx(RGMIITransmitter())
            m.d.comb += [tx_fifo.w_data.eq(self.tx.payload), tx_fifo.w_en.eq(self.tx.valid),
                         self.tx.ready.eq(tx_fifo.w_rdy),
                         tx_beats.sink.valid.eq(tx_fifo.r_rdy),
                         tx_beats.sink.payload.eq(tx_fifo.r_data),
                         tx_fifo.r_en.eq(tx_beats.sink.ready),
                         unpacker.level.eq(tx_fifo.r_level)]
            wiring.connect(m, tx_beats.source, unpacker.sink)
            wiring.connect(m, unpacker.source, tx_slice.sink)
            wiring.connect(m, tx_slice.source, transmitter.sink)
            m.d.comb += [self.tx_ctl.eq(transmitter.tx_ctl),
                         self.tx_data.eq(transmitter.tx_data)]
        return m

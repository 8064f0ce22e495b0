# SPDX-License-Identifier: BSD-2-Clause
"""Building control frames (EtherType 0x88B5) in gateware: header, byte packer, markers.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): the "markers / export
frames" arrow into the output mux.
The interval control (:mod:`hw.interval.interval_control`) asks
:class:`hw.inband.marker_source.MarkerFrameSource` for a marker frame at each marker-mode
boundary; the exporter (:mod:`hw.inband.exporter`) streams the
frozen copy as synopsis chunk frames through :class:`BytePacker`; both go out through the
frame merger (:mod:`hw.frames.frame_merger`).

The byte layout is ``host_sw.contracts.frames.control_frame`` (``docs/SPEC.md`` §6), imported, never
re-typed: :func:`control_header` walks :data:`host_sw.contracts.frames.frame_format.HEADER_FIELDS` to
place each field big-endian at its offset.
"""

import math
from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.frames.frame_format import HEADER_FIELDS, PAYLOAD_OFFSET, VERSION
from host_sw.contracts.hashing import ETHERTYPE_CONTROL, MIN_FRAME_BYTES
from host_sw.contracts.siphash import TAG_BYTES

from hw.frames.frame import FrameStream, check_data_width, frame_beat_layout

__all__ = ["HEADER_BYTES", "MARKER_FRAME_BYTES", "control_header", "header_field",
           "marker_request_layout", "BytePacker"]

#: Bytes of the fixed control frame header (Ethernet header included).
HEADER_BYTES = PAYLOAD_OFFSET
#: Bytes of a marker frame: the header and its tag zero-padded to the Ethernet minimum.
MARKER_FRAME_BYTES = max(PAYLOAD_OFFSET + TAG_BYTES, MIN_FRAME_BYTES)

_FIELDS = {f.name: f for f in HEADER_FIELDS}
#: Copies of the byte packer's write position (and of the write enables loaded from it),
#: each serving every ``_WRITE_COPIES``-th group of four ring bytes.
_WRITE_COPIES = 4


def control_header(m: Module, values: dict, *, name: str = "control_header",
                   fields=HEADER_FIELDS) -> Signal:
    """The ``HEADER_BYTES``-byte control header as a signal driven combinationally in
    ``m``; byte ``i`` of the frame at bits ``8i+7 .. 8i`` (lane order, as on the stream).

    ``values`` maps field names of ``fields`` (the control header's, or a frame type's
    own layout of the same 48 bytes: OPA's record frames) to Amaranth values or ints (each
    truncated/zero-extended to the field's width and placed big-endian); fields not named
    are zero. ``ethertype`` and ``version`` default to 0x88B5 and ``VERSION``.
    """
    values = dict(values)
    unknown = set(values) - {f.name for f in fields}
    if unknown:
        raise ValueError(f"no control frame field(s) {sorted(unknown)}")
    values.setdefault("ethertype", ETHERTYPE_CONTROL)
    values.setdefault("version", VERSION)
    header = Signal(8 * HEADER_BYTES, name=name)
    for f in fields:
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
    boundary), ``flags`` (:class:`host_sw.contracts.frames.frame_format.IntervalFlags` of that interval)."""
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
    item_sizes:
        The sizes (bytes) items may have (default: every size from 1 to ``item_bytes``).
        Fewer, coarser sizes make a cheaper, shallower packer: an item lands at a ring
        position that is a multiple of their greatest common divisor.

    Members
    -------
    items: In(stream.Signature({data, size, last}))
        ``data``: ``item_bytes`` bytes, byte ``i`` at bits ``8i``; ``size``: bytes used,
        one of ``item_sizes``; ``last``: the frame's final item. ``ready`` is a register
        (it does not look at ``valid``); one item per clock is taken while there is room.
    sources: Out(FrameStream(data_width)).array(ports)
        The frames, each beat offered to every port whose ``enable`` bit is set; the
        packer moves on when all of them have taken it. ``valid`` of each port is a
        flop, ``payload`` one 2:1 multiplexer away from flops (``error`` always 0; lanes
        past ``keep`` carry arbitrary data). Between frames there are at least three idle
        cycles; inside a frame ``valid`` never drops as long as items of at least
        ``lanes`` bytes arrive one per clock and the ports are ready.
    enable: In(ports)
        The ports that take the frames; hold it steady while beats flow, with at least
        one bit set (beats nobody takes stay).
    frame_sent: Out(1)
        Pulse (a register), one clock after a frame's last beat was taken by every
        enabled port.

    How (timing, ECP5 at 250 MHz): the bytes go into a ring of ``ring_bytes`` bytes, never
    shifted: an item is written (one clock after it is taken, from registers) at the ring
    position after the previous one, a one-hot register selecting the position, so each
    ring byte chooses among ``ceil(item_bytes / granule)`` item bytes (one for the
    exporter's LDA and LDS items); beats are read at a one-hot slot pointer into two
    output registers, from which the ports are served. A frame always starts at ring
    position 0: its last beat empties the ring. ``items.ready``, the pop condition and
    every port's ``valid`` are registers computed one clock ahead (the fill is counted
    conservatively, without this clock's push), so every handshake that enables many
    registers comes from a flip-flop and no path is deeper than about three LUT levels;
    the flops that steer whole beats are duplicated per two lanes.
    """

    def __init__(self, *, data_width: int, item_bytes: int, item_sizes=None,
                 ports: int = 1):
        check_data_width(data_width)
        if not isinstance(ports, int) or ports < 1:
            raise ValueError(f"ports must be a positive integer, not {ports!r}")
        if not isinstance(item_bytes, int) or item_bytes < 1:
            raise ValueError(f"item_bytes must be a positive integer, not {item_bytes!r}")
        if item_sizes is None:
            item_sizes = range(1, item_bytes + 1)
        sizes = tuple(sorted(set(item_sizes)))
        if not sizes or any(not isinstance(s, int) or not 1 <= s <= item_bytes
                            for s in sizes):
            raise ValueError(f"item_sizes must be integers from 1 to item_bytes "
                             f"({item_bytes}), not {item_sizes!r}")
        self.data_width = data_width
        self.item_bytes = item_bytes
        self.item_sizes = sizes
        self.lanes = data_width // 8
        self.granule = math.gcd(*sizes)
        unit = self.lanes * self.granule // math.gcd(self.lanes, self.granule)
        # Room for the beats read ahead and the items not yet counted (see elaborate).
        need = (3 * self.lanes + 2 * item_bytes if len(sizes) == 1
                else 4 * self.lanes + 3 * item_bytes)
        #: Bytes of the ring buffer.
        self.ring_bytes = unit * -(-need // unit)
        self.ports = ports
        super().__init__({
            "items": In(stream.Signature(data.StructLayout({
                "data": unsigned(8 * item_bytes),
                "size": unsigned((item_bytes + 1).bit_length()),
                "last": unsigned(1)}))),
            "sources": Out(FrameStream(data_width)).array(ports),
            "enable": In(ports),
            "frame_sent": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        s = self._shared(m)
        self._output_registers(m, s)
        self._ring_writes(m, s)
        pushed_last, frame_out = self._pointers_and_fill(m, s)
        self._handshakes(m, s, pushed_last, frame_out)
        self._read_slot(m, s)
        return m

    def _shared(self, m):
        """The ring, its pointers and fill, and the item handshake, shared by the parts."""
        lanes, N, g = self.lanes, self.ring_bytes, self.granule
        s = SimpleNamespace(positions=N // g, slots=N // lanes)
        s.ring = Signal(8 * N, reset_less=True, name="ring")  # read only at valid positions
        # one-hot: the next item goes at g * index. A copy per group of ring bytes (each
        # with its own feedback, so Yosys keeps the copies apart): the registered write
        # enables loaded from one copy drove every ring byte an item can cover, one net of
        # up to 6.5 ns in the control clock (RLI's three placements).
        s.wpos = [Signal(s.positions, init=1, name=f"wpos_{c}")
                  for c in range(min(_WRITE_COPIES, -(-N // 4)))]
        # one-hot: the next beat is this slot (a copy per lane group, see below)
        s.rpos = [Signal(s.slots, init=1, name=f"rpos_{q}")
                  for q in range(max(1, lanes // 2))]
        # Fill (bytes written and not yet popped) in units of u bytes: item sizes and
        # lanes are multiples of u.
        s.u = u = math.gcd(g, lanes)
        s.fill = Signal(range(N // u + 1), name="fill")
        s.ending = Signal(name="ending")     # the frame's last item is in the ring
        s.can_push = Signal(init=1, name="can_push")
        # ``full`` is ``~can_push`` in a flop of its own: ``items.ready`` (the item
        # source's handshake) and the packer's own push do not share one loaded flop.
        s.full = Signal(name="full")
        s.can_pop = Signal(name="can_pop")
        # The flops that steer a whole beat are duplicated per group of two lanes.
        groups = max(1, lanes // 2)
        s.bounds = [(8 * (q * lanes // groups), 8 * ((q + 1) * lanes // groups))
                    for q in range(groups)]
        s.beat_now = Signal(frame_beat_layout(self.data_width), name="beat_now")
        s.push, s.pop = Signal(name="push"), Signal(name="pop")
        s.push_last = Signal(name="push_last")
        s.last_beat = Signal(name="last_beat")
        item = self.items.payload
        m.d.comb += [
            self.items.ready.eq(~s.full),
            s.push.eq(self.items.valid & s.can_push),
            s.push_last.eq(self.items.valid & s.can_push & item.last),
            s.last_beat.eq(s.ending & (s.fill <= lanes // u)),
        ]
        return s

    def _output_registers(self, m, s):
        """The output: two beat registers in FIFO order, serving the ports.

        A register that holds no beat loads the beat at the read slot every clock (its
        enable, ``free_j``, is a flop of its own); a pop marks the one at ``put`` as
        holding. ``room`` (not both holding) is a register. ``need[k]``: the head beat is
        there and port k has still to take it (port k's ``valid``): the head is taken
        when every needing port is ready, a function of four flops. The flops that steer
        the whole beat (read slot, head select, load enables) are duplicated per group of
        two lanes, each copy with its own feedback (so the copies are not merged): no
        such flop drives more than ~20 loads."""
        bounds, beat_now, pop = s.bounds, s.beat_now, s.pop
        beat_layout = frame_beat_layout(self.data_width)
        held = [Signal(name=f"held_{j}") for j in range(2)]
        beats = [Signal(beat_layout, name=f"beat_{j}", reset_less=True)     # with held
                 for j in range(2)]
        put = Signal(name="put")              # the register a pop fills
        take_at = [Signal(name=f"take_at_{q}") for q in range(len(bounds))]    # the head
        room = Signal(init=1, name="room")
        need = Signal(self.ports, name="need")
        head = Signal(beat_layout, name="head")
        take = Signal(name="take")
        taken = 1
        for k in range(self.ports):
            taken = taken & (~need[k] | self.sources[k].ready)
        m.d.comb += [pop.eq(s.can_pop & room), take.eq(need.any() & taken)]
        for q, (lo, hi) in enumerate(bounds):
            m.d.comb += head.data[lo:hi].eq(Mux(take_at[q], beats[1].data[lo:hi],
                                                beats[0].data[lo:hi]))
            with m.If(take):
                m.d.sync += take_at[q].eq(~take_at[q])
        m.d.comb += [head.keep.eq(Mux(take_at[0], beats[1].keep, beats[0].keep)),
                     head.last.eq(Mux(take_at[0], beats[1].last, beats[0].last))]
        for k in range(self.ports):
            m.d.comb += [self.sources[k].valid.eq(need[k]),
                         self.sources[k].payload.eq(head)]
        for j in range(2):
            with m.If(take & (take_at[0] == j)):
                m.d.sync += held[j].eq(0)
            with m.Elif(pop & (put == j)):
                m.d.sync += held[j].eq(1)
            for q, (lo, hi) in enumerate(bounds):
                free = Signal(init=1, name=f"free_{j}_{q}")
                with m.If(take & (take_at[q] == j)):
                    m.d.sync += free.eq(1)
                with m.Elif(pop & (put == j)):
                    m.d.sync += free.eq(0)
                with m.If(free):
                    m.d.sync += beats[j].data[lo:hi].eq(beat_now.data[lo:hi])
                    if q == 0:
                        m.d.sync += [beats[j].keep.eq(beat_now.keep),
                                     beats[j].last.eq(beat_now.last)]
        # Both hold a beat after this clock (a pop needs room, so never both now and a pop).
        m.d.sync += room.eq(take | ~((held[0] & held[1]) | (pop & (held[0] | held[1]))))
        with m.If(pop):
            m.d.sync += put.eq(~put)
        # The head after this clock: the other register's beat or the one popped now.
        with m.If(take):
            m.d.sync += need.eq(Mux((held[0] & held[1]) | pop, self.enable, 0))
        with m.Elif(held[0] | held[1]):
            for k in range(self.ports):
                with m.If(self.sources[k].ready):
                    m.d.sync += need[k].eq(0)
        with m.Else():
            m.d.sync += need.eq(Mux(pop, self.enable, 0))
        m.d.sync += self.frame_sent.eq(take & head.last)

    def _ring_writes(self, m, s):
        """Writes, one clock after the push: per position a registered write enable, the
        item's data registered every clock; each ring byte takes the item byte its
        covering positions select."""
        P, N, g, positions = self.item_bytes, self.ring_bytes, self.granule, s.positions
        item = self.items.payload
        write_at = [Signal(positions, name=f"write_at_{c}") for c in range(len(s.wpos))]
        written = Signal.like(item.data, name="written")
        m.d.sync += [w.eq(Mux(s.push, p, 0)) for w, p in zip(write_at, s.wpos)]
        m.d.sync += written.eq(item.data)
        for k in range(N):
            write_at_k = write_at[(k // 4) % len(write_at)]
            cover = [p for p in range(positions) if (k - p * g) % N < P]
            byte = [written.word_select((k - p * g) % N, 8) for p in cover]
            if len(cover) == 1:
                value = byte[0]
            else:
                value = 0
                for p, b in zip(cover, byte):
                    value = value | Mux(write_at_k[p], b, 0)
            with m.If(Cat(*(write_at_k[p] for p in cover)).any()):
                m.d.sync += s.ring.word_select(k, 8).eq(value)

    def _pointers_and_fill(self, m, s):
        """The write and read pointers and the fill. Returns ``pushed_last`` (the frame's
        last item counted now) and ``frame_out`` (the frame has left the ring)."""
        lanes, P, g, u = self.lanes, self.item_bytes, self.granule, s.u
        item, wpos, push, pop = self.items.payload, s.wpos, s.push, s.pop
        # With one item size the fill adds a constant; with several, the pushed size is
        # registered first and counted one clock late (``late``): the size's decoding
        # stays off the fill's adder; ``ending`` follows the count, and the push limit
        # leaves room for one more item in flight.
        late = len(self.item_sizes) > 1
        lanes_u = lanes // u
        delta_shape = signed((P // u + lanes_u).bit_length() + 1)
        if not late:
            wpos_next = [_rotated(w, self.item_sizes[0] // g) for w in wpos]
            size = Const(self.item_sizes[0] // u, delta_shape)
            size_less_beat = Const(self.item_sizes[0] // u - lanes_u, delta_shape)
        else:
            # Both fill steps of the pushed size, registered (constants selected by it).
            wpos_next, size_now, less_now = [0] * len(wpos), 0, 0
            for size_k in self.item_sizes:
                wpos_next = [n | Mux(item.size == size_k, _rotated(w, size_k // g), 0)
                             for n, w in zip(wpos_next, wpos)]
                size_now = size_now | Mux(item.size == size_k,
                                          Const(size_k // u, delta_shape), 0)
                less_now = less_now | Mux(item.size == size_k,
                                          Const(size_k // u - lanes_u, delta_shape), 0)
            size = Signal(delta_shape, name="size")
            size_less_beat = Signal(delta_shape, name="size_less_beat")
            m.d.sync += [size.eq(size_now), size_less_beat.eq(less_now)]
        # counted now / the frame's last item
        pushed, pushed_last = Signal(name="pushed"), Signal(name="pushed_last")
        if late:
            m.d.sync += [pushed.eq(push), pushed_last.eq(s.push_last)]
        else:
            m.d.comb += [pushed.eq(push), pushed_last.eq(s.push_last)]
        delta = Signal(delta_shape)
        with m.If(pushed & pop):
            m.d.comb += delta.eq(size_less_beat)
        with m.Elif(pushed):
            m.d.comb += delta.eq(size)
        with m.Elif(pop):
            m.d.comb += delta.eq(-lanes_u)

        # The frame's last beat empties the ring; one clock later (from a flop, the
        # reset reaches many registers) the next frame is set to start at position 0.
        frame_out = Signal()
        m.d.sync += frame_out.eq(pop & s.last_beat)
        with m.If(frame_out):
            m.d.sync += [s.fill.eq(0), s.ending.eq(0)] + [w.eq(1) for w in wpos]
            m.d.sync += [r.eq(1) for r in s.rpos]
        with m.Else():
            m.d.sync += s.fill.eq(s.fill + delta)
            with m.If(push):
                m.d.sync += [w.eq(n) for w, n in zip(wpos, wpos_next)]
            with m.If(pop):
                m.d.sync += [r.eq(_rotated(r, 1)) for r in s.rpos]
            with m.If(pushed_last):
                m.d.sync += s.ending.eq(1)
        return pushed_last, frame_out

    def _handshakes(self, m, s, pushed_last, frame_out):
        """Next clock's handshakes, from this clock's fill, which counts the items pushed
        until the previous clock (two clocks with several item sizes; written into the
        ring by the end of this one): conservative, the pushes not yet counted leave
        room."""
        lanes_u, fill, ending = self.lanes // s.u, s.fill, s.ending
        after_pop = Mux(ending, fill > lanes_u, fill >= 2 * lanes_u)
        no_pop = Mux(ending, fill != 0, fill >= lanes_u)
        in_flight = 3 if len(self.item_sizes) > 1 else 2
        with m.If(frame_out):
            m.d.sync += s.can_pop.eq(0)
        with m.Elif(s.pop):
            m.d.sync += s.can_pop.eq(after_pop)
        with m.Else():
            m.d.sync += s.can_pop.eq(no_pop)
        push_next = (~s.push_last & ~pushed_last & ~ending
                     & (fill <= (self.ring_bytes - in_flight * self.item_bytes) // s.u))
        m.d.sync += [s.can_push.eq(push_next), s.full.eq(~push_next)]

    def _read_slot(self, m, s):
        """The beat at the read slot, and its ``keep`` from the fill."""
        lanes, u = self.lanes, s.u
        lanes_u = lanes // u
        beat = Signal(8 * lanes)
        for q, (lo, hi) in enumerate(s.bounds):
            part = 0
            for slot in range(s.slots):
                part = part | Mux(s.rpos[q][slot],
                                  s.ring[8 * lanes * slot + lo: 8 * lanes * slot + hi], 0)
            m.d.comb += beat[lo:hi].eq(part)
        keep = Signal(lanes)
        with m.If(s.fill >= lanes_u):
            m.d.comb += keep.eq(-1)
        with m.Else():
            with m.Switch(s.fill):
                for k in range(lanes_u):
                    with m.Case(k):
                        m.d.comb += keep.eq((1 << (k * u)) - 1)
        m.d.comb += [
            s.beat_now.data.eq(beat),
            s.beat_now.keep.eq(keep),
            s.beat_now.last.eq(s.last_beat),
            s.beat_now.error.eq(0),
        ]


def _rotated(onehot, by):
    n = len(onehot)
    return Cat(*(onehot[(i - by) % n] for i in range(n)))

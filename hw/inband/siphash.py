# SPDX-License-Identifier: BSD-2-Clause
"""SipHash-2-4 in gateware: the tag of marker and export frames (docs/SPEC.md §6, "Tag").

Where it sits (``docs/DESIGN.md``, "Data flow of a counter"): the sender's marker source
(:class:`hw.inband.marker_source.MarkerFrameSource`) and exporter (:class:`hw.inband.exporter.Exporter`)
tag their frames with it, and the receiver's marker watch
(:class:`hw.inband.marker_watch.MarkerWatch`) checks markers with it. The host's definition is
:func:`host_sw.contracts.siphash.siphash_tag` (the ``siphash24`` package); the tests compare
the two on the paper's vector and on random messages.

Half a SipRound per clock (the rounds are sequential: markers are rare, and an export
frame is absorbed while it is built, 2 bytes per clock at best), each half in a register
set of its own, so a path is one 64-bit add between flip-flops and one LUT (the engine
was the LDA and RLI cores' critical path on ECP5 when both halves and the block XORs
shared one register set; ``docs/HARDWARE.md``). The message is a sequence of
32-bit **words**, byte ``i`` of the word at bits ``8i .. 8i+7`` (the frame's lane order):
every message this project tags is a multiple of 4 bytes (the 48-byte header and 4-byte
counter chunks).
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from host_sw.contracts.siphash import KEY_BYTES, TAG_BYTES
from hw.frames.frame import RegisterSlice

__all__ = ["SipHash", "sipround", "key_halves", "header_feed"]

_MASK = (1 << 64) - 1
_INIT = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)


def _rotl(v, n):
    return v.rotate_left(n)


def half_round_a(v0, v1, v2, v3):
    """The first half of a SipRound: one 64-bit add on each side, then the mixing."""
    a = (v0 + v1)[:64]
    c = (v2 + v3)[:64]
    return _rotl(a, 32), _rotl(v1, 13) ^ a, c, _rotl(v3, 16) ^ c


def half_round_b(v0, v1, v2, v3):
    """The second half of a SipRound."""
    a = (v0 + v3)[:64]
    c = (v2 + v1)[:64]
    return a, _rotl(v1, 17) ^ c, _rotl(c, 32), _rotl(v3, 21) ^ a


def sipround(v0, v1, v2, v3):
    """One SipRound on four 64-bit values (the two halves, combinational)."""
    return half_round_b(*half_round_a(v0, v1, v2, v3))


def key_halves(key):
    """``(k0, k1)`` of a 128-bit key value whose most significant byte is ``K[0]``
    (the AUTH_KEY register, :func:`host_sw.contracts.siphash.key_to_int`)."""
    octets = [key[8 * (KEY_BYTES - 1 - i): 8 * (KEY_BYTES - i)] for i in range(KEY_BYTES)]
    return Cat(*octets[:8]), Cat(*octets[8:])


def header_feed(m, engine, value, *, load, start, name: str, slices: int = 4):
    """Feed ``value``'s 32-bit words to ``engine`` as one message: from ``start`` (the
    cycle the caller starts the engine) until it takes the last, ``engine.words.valid`` is
    high, ``last`` marks the final word, and the word it takes next is bits 0..31 of a
    register (``<name>_words``) that loads ``value`` while ``load`` and shifts by one word
    each time the engine takes one. ``load`` must be low while the engine takes words.

    Why this shape (each was a datapath critical path of the two-clock LDA and RDA cores
    on ECP5, ``docs/HARDWARE.md``):

    - a shift register, not ``value.word_select(counter, 32)``: for the 12 words of a
      header that is a 12:1 multiplexer of 32 bits between the word counter and the
      engine's block register (the marker source's engine, 8.3 ns, 86 % of it routing);
    - ``valid`` a register of its own (``<name>_feeding``), not decoded from a state bit
      and the word counter (two LUT levels behind five flip-flops to the shift enable);
    - the register in ``slices`` slices, each shifting on its own copy of ``valid`` (each
      copy with its own feedback, so synthesis keeps them apart): one enable net to all
      384 flip-flops of a header was the marker check's path on one placement (3.9 ns of
      routing on that net alone); ``load`` may likewise be a sequence, one copy of the
      value per slice (the marker check's load select, a LUT of two flip-flops to all
      384, was the LDA datapath's path on another: a 4.9 ns net)."""
    words = len(value) // 32
    if len(value) != 32 * words or words < 1:
        raise ValueError(f"a message of whole 32-bit words, not {len(value)} bits")
    slices = max(1, min(slices, words))
    loads = list(load) if isinstance(load, (list, tuple)) else [load] * slices
    if len(loads) != slices:
        raise ValueError(f"one load per slice ({slices}), not {len(loads)}")
    word = Signal(range(words + 1), name=f"{name}_word")
    feeding = [Signal(name=f"{name}_feeding" + (f"{k}" if k else "")) for k in range(slices)]
    take = engine.words.valid & engine.words.ready
    with m.If(start):
        m.d.sync += word.eq(0)
    with m.Elif(take):
        m.d.sync += word.eq(word + 1)
    # Each copy's next value reads the copy itself, not through an enable: with an
    # enable, the copies are the same flip-flop to Yosys, which merges them.
    ends = take & (word == words - 1)
    m.d.sync += [f.eq(start | (f & ~ends)) for f in feeding]
    feed = Signal(len(value), name=f"{name}_words", reset_less=True)
    shifted = feed >> 32
    per = -(-words // slices)
    for k, (copy, load_k) in enumerate(zip(feeding, loads)):
        part = slice(32 * per * k, min(len(value), 32 * per * (k + 1)))
        if part.start >= part.stop:
            break
        with m.If(load_k):
            m.d.sync += feed[part].eq(value[part])
        with m.Elif(copy & engine.words.ready):
            m.d.sync += feed[part].eq(shifted[part])
    m.d.comb += [engine.words.valid.eq(feeding[0]),
                 engine.words.payload.last.eq(word == words - 1),
                 engine.words.payload.data.eq(feed[:32])]
    return feed


class SipHash(wiring.Component):
    """SipHash-2-4 of a message of 32-bit words, 64-bit tag.

    Members
    -------
    key: In(128)
        The key, ``K[0]`` in bits 127..120; sampled every clock while the engine is
        idle (not ``busy``), so the key of a message is its value at ``start``.
    start: In(1)
        Pulse: begin a new message (a message in progress is dropped, and the new one
        keeps the key sampled when the engine was last idle).
    words: In(stream.Signature({data: 32, last: 1}))
        The message's words; ``last`` on its final word. ``ready`` is a function of
        registers (it does not look at ``valid``): a block (two words) is taken while the
        previous one is compressed, so words may come one per clock and the engine
        absorbs a block every 4 clocks (2 bytes per clock).
    tag: Out(64)
        The tag, byte ``i`` of the frame's tag at bits ``8i`` (the little-endian output of
        SipHash), valid from ``done`` until the next ``start``.
    done: Out(1)
        Pulse: ``tag`` is ready (:data:`LATENCY` clocks after the last word was taken, at
        most).
    busy: Out(1)
        A message is being absorbed or finalised (from ``start`` to ``done``).

    How (timing, ECP5): the state lives in two register sets, ``v`` and ``w``. ``w``
    loads the first half-round of ``v`` every clock; ``v`` loads, when enabled, the
    second half-round of ``w`` XORed with an operand register ``x``. So every 64-bit
    add takes its operands straight from flip-flops and its sum goes through one LUT
    (the XOR with a rotated state bit, the operand and the load select) to a flip-flop,
    whichever half it is: no multiplexer chooses between the halves. A SipRound is two
    clocks (``v`` → ``w`` → ``v``), a block four. ``x`` (the block XORed into ``v3``
    before its rounds and into ``v0`` after them, the finalisation's ``0xff``, the key's
    initial state, which replaces ``v`` instead) loads every clock the operand of the
    *next* operation, a function of the sequencer's state registers and the block
    registers only: the decision to go (a few LUTs) reaches only the write enables of
    ``v``, registered. Those enables and the load selects, which go to 256 flip-flops
    each, are one register per 64-bit word (each copy with its own feedback, so
    synthesis keeps them apart). The tag is the XOR of ``v``'s four words, registered
    the clock after their last write.
    """

    #: Most clocks from taking the last word to ``done``.
    LATENCY = 21

    key: In(8 * KEY_BYTES)
    start: In(1)
    words: In(stream.Signature(data.StructLayout({"data": 32, "last": 1})))
    tag: Out(8 * TAG_BYTES)
    done: Out(1)
    busy: Out(1)

    def elaborate(self, platform):
        m = Module()
        v = [Signal(64, name=f"v{i}", reset_less=True) for i in range(4)]
        w = [Signal(64, name=f"w{i}", reset_less=True) for i in range(4)]
        key = Signal(8 * KEY_BYTES, reset_less=True)
        # Sampled while idle (the enable a flop): ``start`` drives no 128-bit enable.
        with m.If(~self.busy):
            m.d.sync += key.eq(self.key)
        m.d.sync += [wi.eq(h) for wi, h in zip(w, half_round_a(*v))]
        second = half_round_b(*w)
        # ``start`` registered (``restart``) is the state's synchronous reset: ``start``
        # comes from the caller's logic, and as the reset of some twenty flip-flops it
        # was the control clock's critical path of the OPA and RLI cores (the caller's
        # handshake, then the route to every flip-flop's LSR). The engine takes no word
        # in ``restart``'s clock, so a message's words are absorbed as before, a clock
        # later at most.
        restart = Signal()
        m.d.sync += restart.eq(self.start)
        tag_late = Signal()             # the clock after the last write: ``v`` is final
        seq = self._sequencer(m, restart, tag_late)
        x = self._operands(m, seq, key)
        for i in range(4):
            with m.If(seq.v_en[i]):
                m.d.sync += v[i].eq(x[i] ^ Mux(seq.v_load[i], 0, second[i]))
        # The tag: v0 ^ v1 ^ v2 ^ v3 after the last write (whose operand is zero), one
        # LUT per bit a clock later. Computed from ``w`` with the last write, it needed
        # a 64-bit add of its own (``w2 + w1``) and was the two-clock LDA core's control
        # clock critical path on one placement (``docs/HARDWARE.md``).
        # The tag register has no reset: it is read only after ``done``, and a reset would
        # load the reset net with 64 more flip-flops (the LDA two-clock core's datapath
        # critical path on one placement was the reset's route to a tag bit).
        tag = Signal(8 * TAG_BYTES, name="tag_value", reset_less=True)
        # (a message dropped by ``start`` in its last clocks, or cut by a reset, ends no
        # later message)
        m.d.sync += [tag_late.eq(seq.tag_now & self.busy & ~self.start & ~restart),
                     self.done.eq(tag_late)]
        with m.If(tag_late):
            m.d.sync += tag.eq(v[0] ^ v[1] ^ v[2] ^ v[3])
        m.d.comb += self.tag.eq(tag)
        with m.If(self.start):
            m.d.sync += self.busy.eq(1)
        with m.Elif(tag_late):
            m.d.sync += self.busy.eq(0)
        return m

    def _operands(self, m, seq, key):
        """``x``: the operand of the next operation, from state registers (``seq``)."""
        x = [Signal(64, name=f"x{i}", reset_less=True) for i in range(4)]
        k0, k1 = key_halves(key)
        init = [k0 ^ _INIT[0], k1 ^ _INIT[1], k0 ^ _INIT[2], k1 ^ _INIT[3]]
        fin = Cat(seq.end_final.replicate(8), Const(0, 56))
        m.d.sync += [
            x[0].eq(Mux(seq.first, init[0], Mux(seq.end, seq.cur, 0))),
            x[1].eq(Mux(seq.first, init[1], 0)),
            x[2].eq(Mux(seq.first, init[2], fin)),
            x[3].eq(Mux(seq.first, init[3] ^ seq.block,
                        Mux(seq.end_next, seq.block, 0))),
        ]
        return x

    def _sequencer(self, m, restart, tag_late):
        """The words into blocks (and the final length block), and the operations on
        ``v``, one every other clock: load the initial state with the first block,
        the middle of a block, the end of a block with the next block, the end of the
        final block, and the four finalisation rounds. The next operation is held in
        one-hot state registers (``first``, ``mid``, ``end``) that ``x`` reads; the
        decision to perform it sets the write enables. Returns a namespace of them."""
        low = Signal(32, reset_less=True)
        # The sequencer's state has no reset: ``restart`` sets it at every message, and
        # until then ``busy`` (reset) keeps words out and ``done`` low; the reset net
        # reaches only ``busy``, ``restart``, ``tag_late``, ``done`` and ``accepting``.
        half = Signal(reset_less=True)  # ``low`` holds a block's first word
        block = Signal(64, reset_less=True)
        pending = Signal(reset_less=True)         # ``block`` waits to be absorbed
        block_open = Signal(init=1, reset_less=True)  # ``~pending``: ``block``'s enable
        final = Signal(reset_less=True)           # ... and it is the final block
        length_next = Signal(reset_less=True)     # after ``block``, the length-only block
        length_pending = Signal(reset_less=True)  # ... which is in ``block`` and waits
        ended = Signal(reset_less=True)           # the last word was taken
        length = Signal(8, reset_less=True)       # message bytes mod 256
        word = self.words.payload
        # ``ready`` is ``busy & ~restart & ~pending & ~ended``, with the three-register
        # part a register of its own (``accepting``, loaded below from their next values):
        # as a LUT of four registers, it took two more LUT levels on the way to a header
        # feed's shift enables (``header_feed``), the two-clock LDA core's datapath
        # critical path on one placement (``docs/HARDWARE.md``).
        accepting = Signal()
        m.d.comb += self.words.ready.eq(accepting & ~restart)
        take = self.words.valid & self.words.ready
        new_length = (length + 4)[:8]
        # ``low`` and ``block`` load whenever they may (enables from registers only);
        # what they hold counts once ``half`` / ``pending`` say so. After the last word
        # (and once its block is absorbed) ``block`` holds the length-only block.
        with m.If(~half):
            m.d.sync += low.eq(word.data)
        with m.If(block_open):
            m.d.sync += block.eq(Mux(ended, Cat(Const(0, 56), length),
                                     Mux(half, Cat(low, word.data),
                                         Cat(word.data, Const(0, 24), new_length))))
        with m.If(take):
            m.d.sync += [length.eq(new_length), ended.eq(word.last)]
            with m.If(half | word.last):
                m.d.sync += [pending.eq(1), block_open.eq(0), half.eq(0), final.eq(~half),
                             length_next.eq(half & word.last)]
            with m.Else():
                m.d.sync += half.eq(1)
        s = self._operations(m, pending, length_pending, restart)
        with m.If(s.absorb):
            m.d.sync += [s.cur_final.eq(final | length_pending), pending.eq(0),
                         block_open.eq(1),
                         length_pending.eq(pending & length_next), length_next.eq(0)]
        # ``cur`` (the block being absorbed) follows ``block`` a clock after its absorb,
        # while ``block`` still holds it; its enable is a register.
        absorbed = Signal(reset_less=True)
        m.d.sync += absorbed.eq(s.absorb)
        with m.If(absorbed):
            m.d.sync += s.cur.eq(block)
        s.block = block
        with m.If(restart):
            m.d.sync += [half.eq(0), pending.eq(0), block_open.eq(1), final.eq(0),
                         length_next.eq(0), length_pending.eq(0), ended.eq(0),
                         length.eq(0)]
        # ``accepting``: ``busy & ~pending & ~ended`` of the next clock, as the statements
        # above set them. ``start`` is left out: it sets ``restart`` for the next clock,
        # which masks ``ready`` then; in ``restart``'s clock the next values are busy, not
        # pending and not ended.
        pending_next = ~s.absorb & (pending | (take & (half | word.last)))
        ended_next = Mux(take, word.last, ended)
        m.d.sync += accepting.eq(restart | (self.busy & ~tag_late & ~pending_next
                                            & ~ended_next))
        return s

    def _operations(self, m, pending, length_pending, restart):
        """The one-hot next operation and the decision to perform it (at most every
        other clock: ``w`` must hold the first half-round of the last write). The
        decision is two LUT levels from registers: ``waiting`` (the next operation
        absorbs a block: it waits for one) and ``free`` (it waits for nothing)."""
        s = SimpleNamespace(
            # (no reset: ``_sequencer``)
            first=Signal(reset_less=True),     # next: load the initial state, first block
            mid=Signal(reset_less=True),       # next: a block's middle
            end=Signal(reset_less=True),       # next: a block's end
            end_next=Signal(reset_less=True),  # ... with the next block
            end_final=Signal(reset_less=True),  # ... of the final block
            cur=Signal(64, name="cur", reset_less=True), cur_final=Signal(reset_less=True),
            v_en=[Signal(name=f"v_en{i}", reset_less=True) for i in range(4)],
            v_load=[Signal(name=f"v_load{i}", reset_less=True) for i in range(4)],
            tag_now=Signal(reset_less=True))
        cool = Signal(reset_less=True)
        waiting, free = Signal(reset_less=True), Signal(reset_less=True)
        rounds = Signal(range(5), reset_less=True)   # finalisation rounds still to do
        go = ~cool & ((waiting & (pending | length_pending)) | free)
        load = go & s.first
        s.absorb = go & waiting
        middle = go & s.mid
        finish = go & s.end_final
        final_round = go & (rounds != 0)
        # Each copy of a fanned-out control has its own feedback (a copy is never set
        # two clocks running, so ``& ~copy`` changes nothing but keeps it apart).
        m.d.sync += [*(e.eq(go & ~e) for e in s.v_en),
                     *(ld.eq(load & ~ld) for ld in s.v_load),
                     cool.eq(go), s.tag_now.eq(final_round & (rounds == 1))]
        with m.If(s.absorb):
            m.d.sync += [s.first.eq(0), s.mid.eq(1), s.end.eq(0), s.end_next.eq(0),
                         waiting.eq(0), free.eq(1)]
        with m.If(middle):
            m.d.sync += [s.mid.eq(0), s.end.eq(1), s.end_next.eq(~s.cur_final),
                         s.end_final.eq(s.cur_final), waiting.eq(~s.cur_final),
                         free.eq(s.cur_final)]
        with m.If(finish):
            m.d.sync += [s.end.eq(0), s.end_final.eq(0), rounds.eq(4)]
        with m.If(final_round):
            m.d.sync += rounds.eq(rounds - 1)
            with m.If(rounds == 1):
                m.d.sync += free.eq(0)
        with m.If(restart):
            m.d.sync += [s.first.eq(1), s.mid.eq(0), s.end.eq(0), s.end_next.eq(0),
                         s.end_final.eq(0), rounds.eq(0), s.tag_now.eq(0),
                         waiting.eq(1), free.eq(0)]
        return s


class ItemTagger(wiring.Component):
    """Appends the tag to frames made of byte items (the exporter's header pieces and
    counter words, before its :class:`hw.inband.control_frame_tx.BytePacker`).

    Each item passes unchanged while its bytes (a multiple of 4, in 32-bit words) are
    absorbed by a :class:`SipHash`; after a frame's last item (passed on with ``last``
    cleared) comes one more item of :data:`TAG_BYTES` bytes, the tag of everything the
    frame's items held, with ``last`` set. A frame's first item starts a new message under
    ``key``.

    The engine absorbs about 2 bytes per clock, slower than the exporter makes items, and
    a frame must leave without gaps (a MAC behind the port cannot pause inside a frame):
    so the items of a frame are stored (a FIFO of ``frame_items + 1`` items, block RAM)
    and offered on ``source`` only once the frame's tag is in the store; they then leave
    one per clock. The next frame is absorbed while one leaves.

    Parameters
    ----------
    item_bytes:
        Bytes of an item's ``data`` (at least :data:`TAG_BYTES`).
    frame_items:
        Most items of one frame, its tag included.

    Members
    -------
    key: In(128)
        The key (``K[0]`` in bits 127..120), sampled while the engine is idle, so
        the value it has at each frame's first item.
    sink: In(stream.Signature({data, size, last}))
        Items: ``data`` byte ``i`` at bits ``8i``, ``size`` bytes used (a multiple of 4),
        ``last`` on a frame's final item. One item is held at a time (``ready`` is a
        register): an item of ``n`` words takes about ``2n`` clocks (the engine).
    source: Out(stream.Signature({data, size, last}))
        The items, then each frame's tag item, from the store: ``valid`` while a whole
        tagged frame (or the rest of one) is there; ``valid`` and ``payload`` are
        flip-flops (a register slice after the store).
    """

    def __init__(self, *, item_bytes: int, frame_items: int):
        if not isinstance(item_bytes, int) or item_bytes < TAG_BYTES:
            raise ValueError(f"item_bytes must be an integer of at least {TAG_BYTES} (the "
                             f"tag is one item), not {item_bytes!r}")
        if not isinstance(frame_items, int) or frame_items < 2:
            raise ValueError(f"frame_items must be an integer of at least 2, not "
                             f"{frame_items!r}")
        self.item_bytes = item_bytes
        self.frame_items = frame_items
        layout = data.StructLayout({"data": 8 * item_bytes,
                                    "size": (item_bytes + 1).bit_length(), "last": 1})
        super().__init__({"key": In(8 * KEY_BYTES), "sink": In(stream.Signature(layout)),
                          "source": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = engine = SipHash()
        layout = self.sink.payload.shape()
        m.submodules.store = store = SyncFIFOBuffered(width=layout.size,
                                                      depth=self.frame_items + 1)
        out = SimpleNamespace(valid=store.w_en, ready=store.w_rdy,
                              payload=Signal(layout, name="tagged"))
        m.d.comb += store.w_data.eq(out.payload.as_value())
        self._store_output(m, store, layout, out)
        item = Signal.like(self.sink.payload)
        held = Signal()                  # ``item`` holds an item
        passed = Signal()                # ... already taken by ``source``
        word = Signal(range(self.item_bytes // 4 + 1))      # its words absorbed
        in_frame = Signal()              # the frame's first item was taken
        tagging = Signal()               # the frame's items went; the tag item is next
        words = item.size[2:]
        absorbed = word == words
        m.d.comb += [
            self.sink.ready.eq(~held & ~tagging),
            engine.key.eq(self.key),
            engine.start.eq(self.sink.valid & self.sink.ready & ~in_frame),
            engine.words.valid.eq(held & ~absorbed),
            engine.words.payload.data.eq(item.data.word_select(word, 32)),
            engine.words.payload.last.eq(item.last & (word == words - 1)),
        ]
        with m.If(self.sink.valid & self.sink.ready):
            m.d.sync += [item.eq(self.sink.payload), held.eq(1), passed.eq(0), word.eq(0),
                         in_frame.eq(~self.sink.payload.last)]
        with m.If(engine.words.valid & engine.words.ready):
            m.d.sync += word.eq(word + 1)
        with m.If(tagging):
            m.d.comb += [out.valid.eq(~engine.busy),
                         out.payload.data.eq(engine.tag),
                         out.payload.size.eq(TAG_BYTES),
                         out.payload.last.eq(1)]
            with m.If(out.ready & ~engine.busy):
                m.d.sync += tagging.eq(0)
        with m.Else():
            m.d.comb += [out.valid.eq(held & ~passed),
                         out.payload.data.eq(item.data),
                         out.payload.size.eq(item.size),
                         out.payload.last.eq(0)]
            with m.If(out.valid & out.ready):
                m.d.sync += passed.eq(1)
            # Done with the item when it has gone and its words are absorbed.
            gone = passed | (out.valid & out.ready)
            finished = held & gone & (absorbed | ((word == words - 1) & engine.words.ready))
            with m.If(finished):
                m.d.sync += [held.eq(0), tagging.eq(item.last)]
        return m

    def _store_output(self, m, store, layout, out):
        """``source`` from the store, while it holds a frame's last item, through a
        register slice: the store's read data is a block RAM's output (slow out of the
        RAM, and placed where the RAM is), and the packer behind fans ``valid``, ``size``
        and ``last`` out to its ring's write enables; straight from the RAM, that path was
        the longest of RDA's control clock on every placement measured."""
        frames = Signal(range(self.frame_items + 2))       # frames ends in the store
        head = Signal(layout)
        m.submodules.source_slice = source_slice = RegisterSlice(shape=layout)
        m.d.comb += [head.eq(store.r_data), source_slice.sink.payload.eq(head),
                     source_slice.sink.valid.eq(store.r_rdy & (frames != 0)),
                     store.r_en.eq(source_slice.sink.valid & source_slice.sink.ready)]
        wiring.connect(m, source_slice.source, wiring.flipped(self.source))
        put = out.valid & out.ready & out.payload.last
        took = store.r_en & head.last
        m.d.sync += frames.eq(frames + put - took)

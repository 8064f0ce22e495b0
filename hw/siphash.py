# SPDX-License-Identifier: BSD-2-Clause
"""SipHash-2-4 in gateware: the tag of marker and export frames (docs/SPEC.md §6, "Tag").

Where it sits (``docs/DESIGN.md``, "Data flow of a counter"): the sender's marker source
(:class:`hw.control_frame_tx.MarkerFrameSource`) and exporter (:class:`hw.exporter.Exporter`)
tag their frames with it, and the receiver's marker watch
(:class:`hw.interval_control.MarkerWatch`) checks markers with it. The host's definition is
:func:`host_sw.contracts.siphash.siphash_tag` (the ``siphash24`` package); the tests compare
the two on the paper's vector and on random messages.

One SipRound per clock (the rounds are sequential: markers are rare, and an export frame
is absorbed while it is built, 4 bytes per clock at best). The message is a sequence of
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

__all__ = ["SipHash", "sipround", "key_halves"]

_MASK = (1 << 64) - 1
_INIT = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)


def _rotl(v, n):
    return v.rotate_left(n)


def sipround(v0, v1, v2, v3):
    """One SipRound on four 64-bit values; returns the four new values (combinational)."""
    v0 = (v0 + v1)[:64]
    v1 = _rotl(v1, 13) ^ v0
    v0 = _rotl(v0, 32)
    v2 = (v2 + v3)[:64]
    v3 = _rotl(v3, 16) ^ v2
    v0 = (v0 + v3)[:64]
    v3 = _rotl(v3, 21) ^ v0
    v2 = (v2 + v1)[:64]
    v1 = _rotl(v1, 17) ^ v2
    v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def key_halves(key):
    """``(k0, k1)`` of a 128-bit key value whose most significant byte is ``K[0]``
    (the AUTH_KEY register, :func:`host_sw.contracts.siphash.key_to_int`)."""
    octets = [key[8 * (KEY_BYTES - 1 - i): 8 * (KEY_BYTES - i)] for i in range(KEY_BYTES)]
    return Cat(*octets[:8]), Cat(*octets[8:])


class SipHash(wiring.Component):
    """SipHash-2-4 of a message of 32-bit words, 64-bit tag.

    Members
    -------
    key: In(128)
        The key, ``K[0]`` in bits 127..120; sampled at ``start``.
    start: In(1)
        Pulse: begin a new message (any message in progress is dropped).
    words: In(stream.Signature({data: 32, last: 1}))
        The message's words; ``last`` on its final word. A word is taken (``ready``)
        while the engine can absorb it: the first word of a block at any time but during
        the finalisation, the second when the previous block's rounds end (so a block
        every two clocks when words come one per clock).
    tag: Out(64)
        The tag, byte ``i`` of the frame's tag at bits ``8i`` (the little-endian output of
        SipHash), valid from ``done`` until the next ``start``.
    done: Out(1)
        Pulse: ``tag`` is ready, 7 clocks after the last word was taken (6 when it is
        the second word of a block).
    busy: Out(1)
        A message is being absorbed or finalised (from ``start`` to ``done``).
    """

    key: In(8 * KEY_BYTES)
    start: In(1)
    words: In(stream.Signature(data.StructLayout({"data": 32, "last": 1})))
    tag: Out(8 * TAG_BYTES)
    done: Out(1)
    busy: Out(1)

    def elaborate(self, platform):
        m = Module()
        v = [Signal(64, name=f"v{i}") for i in range(4)]
        block = Signal(64)              # the block being compressed (xored into v0 after)
        low = Signal(32)                # the first word of the next block
        half = Signal()                 # ``low`` holds a word
        length = Signal(8)              # message bytes mod 256
        rounds = Signal(range(5))       # rounds left in this phase
        absorbing, last_block, final = Signal(), Signal(), Signal()
        ending = Signal()               # the block now compressing holds the last word

        r = sipround(*v)
        rounding = rounds != 0
        cur = [Signal(64, name=f"cur{i}") for i in range(4)]    # v after this clock's round
        m.d.comb += [c.eq(Mux(rounding, x, y)) for c, x, y in zip(cur, r, v)]
        block_ends = absorbing & (rounds == 1)
        free = ~rounding | (block_ends & ~ending)     # v is free for the next block
        word = self.words.payload
        takes_low = ~half & ~word.last & ~(last_block | final | ending) & self.busy
        takes_high = (half | word.last) & free & self.busy
        m.d.comb += self.words.ready.eq(takes_low | takes_high)
        take = self.words.valid & self.words.ready
        new_block = Signal(64)
        new_length = (length + 4)[:8]
        # A last word that is the first of its block forms the final block with the
        # length byte; a last word that completes a block is followed by the length block.
        m.d.comb += new_block.eq(Mux(half, Cat(low, word.data),
                                      Cat(word.data, Const(0, 24), new_length)))
        v0_after = Mux(block_ends, cur[0] ^ block, cur[0])
        m.d.sync += self.done.eq(0)
        with m.If(self.start):
            k0, k1 = key_halves(self.key)
            m.d.sync += [v[0].eq(k0 ^ _INIT[0]), v[1].eq(k1 ^ _INIT[1]),
                         v[2].eq(k0 ^ _INIT[2]), v[3].eq(k1 ^ _INIT[3]),
                         half.eq(0), length.eq(0), rounds.eq(0), absorbing.eq(0),
                         last_block.eq(0), final.eq(0), ending.eq(0), self.busy.eq(1)]
        with m.Elif(take & ~(half | word.last)):
            m.d.sync += [low.eq(word.data), half.eq(1), length.eq(new_length)]
            self._step(m, v, cur, v0_after, rounds, block_ends, absorbing, last_block,
                       final, ending, block, length)
        with m.Elif(take):
            # A new block: xor into v3, two rounds, then into v0.
            m.d.sync += [v[0].eq(v0_after), v[1].eq(cur[1]), v[2].eq(cur[2]),
                         v[3].eq(cur[3] ^ new_block), block.eq(new_block), rounds.eq(2),
                         half.eq(0), length.eq(new_length)]
            with m.If(half):
                m.d.sync += [absorbing.eq(1), last_block.eq(0), ending.eq(word.last)]
            with m.Else():
                m.d.sync += [absorbing.eq(0), last_block.eq(1), ending.eq(0)]
        with m.Else():
            self._step(m, v, cur, v0_after, rounds, block_ends, absorbing, last_block,
                       final, ending, block, length)
        return m

    def _step(self, m, v, cur, v0_after, rounds, block_ends, absorbing, last_block, final,
              ending, block, length):
        """A clock without a new block: the current phase's round, and what follows."""
        with m.If(rounds != 0):
            m.d.sync += [v[0].eq(v0_after), v[1].eq(cur[1]), v[2].eq(cur[2]),
                         v[3].eq(cur[3]), rounds.eq(rounds - 1)]
            with m.If(block_ends):
                m.d.sync += absorbing.eq(0)
                with m.If(ending):
                    # The length block (no message bytes left): b = length << 56.
                    b = Cat(Const(0, 56), length)
                    m.d.sync += [v[3].eq(cur[3] ^ b), block.eq(b), rounds.eq(2),
                                 last_block.eq(1), ending.eq(0)]
            with m.If(last_block & (rounds == 1)):
                m.d.sync += [v[0].eq(cur[0] ^ block), v[2].eq(cur[2] ^ 0xFF),
                             rounds.eq(4), last_block.eq(0), final.eq(1)]
            with m.If(final & (rounds == 1)):
                m.d.sync += [final.eq(0), self.done.eq(1), self.busy.eq(0),
                             self.tag.eq(cur[0] ^ cur[1] ^ cur[2] ^ cur[3])]



class ItemTagger(wiring.Component):
    """Appends the tag to frames made of byte items (the exporter's header pieces and
    counter words, before its :class:`hw.control_frame_tx.BytePacker`).

    Each item passes unchanged while its bytes (a multiple of 4, in 32-bit words) are
    absorbed by a :class:`SipHash`; after a frame's last item (passed on with ``last``
    cleared) comes one more item of :data:`TAG_BYTES` bytes, the tag of everything the
    frame's items held, with ``last`` set. A frame's first item starts a new message under
    ``key``.

    The engine absorbs about 4 bytes per clock, slower than the exporter makes items, and
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
        The key (``K[0]`` in bits 127..120), sampled at each frame's first item.
    sink: In(stream.Signature({data, size, last}))
        Items: ``data`` byte ``i`` at bits ``8i``, ``size`` bytes used (a multiple of 4),
        ``last`` on a frame's final item. One item is held at a time (``ready`` is a
        register): an item of ``n`` words takes about ``n + 1`` clocks.
    source: Out(stream.Signature({data, size, last}))
        The items, then each frame's tag item, from the store: ``valid`` while a whole
        tagged frame (or the rest of one) is there.
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
        """``source`` from the store, while it holds a frame's last item."""
        frames = Signal(range(self.frame_items + 2))       # frames ends in the store
        head = Signal(layout)
        m.d.comb += [head.eq(store.r_data), self.source.payload.eq(head),
                     self.source.valid.eq(store.r_rdy & (frames != 0)),
                     store.r_en.eq(self.source.valid & self.source.ready)]
        put = out.valid & out.ready & out.payload.last
        took = store.r_en & head.last
        m.d.sync += frames.eq(frames + put - took)

# SPDX-License-Identifier: BSD-2-Clause
"""The check value of a counter copy, computed while the copy freezes.

Where it sits (docs/DESIGN.md, "Data flow of a counter"): inside the counter bank
(:class:`hw.counters.counter_bank.CounterBank`), between the end of a copy's drain and its FROZEN
state. Once the last update of the interval is written, :class:`FreezeCheck` reads every
word of the copy through the bank's frozen read path, in memory order, and feeds it to
:class:`Crc32Words`; the copy becomes FROZEN when the CRC is complete, so FROZEN_CHECK
always describes the words the bus will read. Reading the RAM after the last write (not
following the update pipeline) makes the value independent of the read-modify-write
forwarding: it is what the memory holds. The function is the one of
:mod:`host_sw.contracts.check_value` (CRC-32 of zlib over each word's little-endian
bytes), evaluated one word per clock.

Why not a library CRC: LiteX's ``LiteEthMACCRCEngine`` does the same derivation for
8..64-bit Ethernet data paths; here a step is a whole counter word (72..136 bits and
more), the data's share of the step is computed in two registered levels before it meets
the state (so the state's feedback loop XORs at most 22 inputs: 21 state bits and the
share), and the matrix comes from the contract's bit-serial definition, so that it cannot
drift from what the host computes.

:class:`RecordCheck` folds the interval's header (sequence number, flags, packets,
configuration ID, timestamp, role, source MAC; RLI's frozen counts) into that CRC, so that
FROZEN_CHECK covers the whole interval record (``docs/SPEC.md`` §4.4): the header is final
once the copy has drained, and the CRC is continued over its bytes, a byte a clock.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.check_value import CRC32_INIT, CRC32_XOROUT, HEADER_BITS, crc32_bits

from hw.arith.stages import kept_copies

__all__ = ["Crc32Words", "FreezeCheck", "RecordCheck", "crc32_matrix"]


def crc32_matrix(data_bits: int) -> tuple[list[int], list[int]]:
    """The linear map of one CRC step over ``data_bits`` bits (a whole number of bytes):
    ``(state_columns, data_columns)``, column ``i`` being the new register for input bit
    ``i`` alone (:func:`host_sw.contracts.check_value.crc32_bits` is linear)."""
    if data_bits < 8 or data_bits % 8:
        raise ValueError(f"a CRC step takes whole bytes, not {data_bits} bits")
    zeros = [0] * data_bits
    state_cols = [crc32_bits(1 << i, zeros) for i in range(32)]
    data_cols = [crc32_bits(0, [int(j == i) for j in range(data_bits)])
                 for i in range(data_bits)]
    return state_cols, data_cols


def _check_positive(**values):
    for name, v in values.items():
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive integer, not {v!r}")


def _xor_tree(taps):
    """XOR of ``taps`` as a balanced tree of 4-input XORs (one LUT4 each), so that the
    mapper starts from ``ceil(log4(n))`` levels rather than a chain."""
    while len(taps) > 1:
        taps = [Cat(*taps[i:i + 4]).xor() if len(taps[i:i + 4]) > 1 else taps[i]
                for i in range(0, len(taps), 4)]
    return taps[0]


def _xor_of(inputs, columns, bit, extra=()):
    """XOR of the ``inputs`` whose column has ``bit`` set, and of ``extra`` (0 when none)."""
    taps = [inputs[i] for i, col in enumerate(columns) if (col >> bit) & 1] + list(extra)
    return _xor_tree(taps) if taps else Const(0, 1)


class Crc32Words(wiring.Component):
    """CRC-32 (zlib) over a sequence of ``width``-bit words, one word per clock.

    Each word counts as ``ceil(width / 8)`` bytes, least significant byte first (its bits
    enter from bit 0; the padding bits are zero), as
    :func:`host_sw.contracts.check_value.check_value` defines.

    Parameters
    ----------
    width : int
        Word width in bits.

    Members
    -------
    start : In(1)
        Begin a new sequence (the register takes the initial value; a word presented in
        the same cycle is ignored, as are words still in the pipeline).
    valid : In(1)
        ``data`` is the next word.
    data : In(width)
    value : Out(32)
        The CRC of the words so far, :attr:`LATENCY` cycles after the last one.
    """

    #: Cycles from a word's ``valid`` to its effect on ``value``.
    LATENCY = 4
    #: Data taps XORed in the first pipeline level (16: two LUT4 levels).
    GROUP = 16

    def __new__(cls, *args, src_loc_at=0, **kwargs):
        # checked before the object exists: a rejected unit is no unused elaboratable
        _check_positive(**kwargs)
        return super().__new__(cls, *args, src_loc_at=src_loc_at + 1, **kwargs)

    def __init__(self, *, width: int):
        self.width = width
        super().__init__({"start": In(1), "valid": In(1), "data": In(width),
                          "value": Out(32)})

    def elaborate(self, platform):
        m = Module()
        step_bits = 8 * ((self.width + 7) // 8)
        state_cols, data_cols = crc32_matrix(step_bits)
        data_cols = data_cols[:self.width]              # the padding bits are zero
        # Stages 1a, 1b: the data's share of the step, registered. The initial register's share
        # (its step with zero data, a constant) rides in with the first word, so the state
        # starts from 0: a synchronous reset and a clock enable, no multiplexer in the
        # state's feedback loop.
        init_share = crc32_bits(CRC32_INIT, [0] * step_bits)
        first = Signal(init=1)                 # no word taken since start
        share = Signal(32)
        share_valid = Signal()
        taken = Signal()                       # a word reached the state since start
        # Stage 0: the word registered as it comes. Each data bit feeds some 16 partial
        # registers; from the counter bank's check register by its RAMs, that net (6.3 ns)
        # was the two-clock RDA core's datapath critical path on one placement
        # (``docs/HARDWARE.md``). ``first`` travels with the word.
        data = Signal(self.width, reset_less=True)
        word, word_first = Signal(), Signal()
        m.d.sync += [data.eq(self.data), word.eq(self.valid & ~self.start),
                     word_first.eq(first)]
        data_bits = [data[i] for i in range(self.width)]
        # The data's share is split in two registered levels (feed-forward): groups of up to
        # GROUP taps, then the XOR of the groups.
        partial_valid = Signal()
        partials = []
        for b in range(32):
            taps = [data_bits[i] for i, col in enumerate(data_cols) if (col >> b) & 1]
            taps += [word_first] if (init_share >> b) & 1 else []
            groups = [taps[i:i + self.GROUP] for i in range(0, len(taps), self.GROUP)]
            regs = [Signal(name=f"share{b}_part{g}") for g in range(len(groups))]
            m.d.sync += [r.eq(_xor_tree(group)) for r, group in zip(regs, groups)]
            partials.append(regs)
        m.d.sync += [partial_valid.eq(word & ~self.start),
                     share.eq(Cat(*[_xor_tree(regs) if regs else Const(0, 1)
                                    for regs in partials])),
                     share_valid.eq(partial_valid & ~self.start)]
        with m.If(self.start):
            m.d.sync += first.eq(1)
        with m.Elif(self.valid):
            m.d.sync += first.eq(0)
        # Stage 2: the state's share, XORed with it.
        state = Signal(32)
        state_bits = [state[i] for i in range(32)]
        stepped = Cat(*[_xor_of(state_bits, state_cols, b, [share[b]]) for b in range(32)])
        with m.If(self.start):
            m.d.sync += [state.eq(0), taken.eq(0)]
        with m.Elif(share_valid):
            m.d.sync += [state.eq(stepped), taken.eq(1)]
        # no word yet: the CRC of nothing, 0
        m.d.comb += self.value.eq(Mux(taken, state ^ CRC32_XOROUT, 0))
        return m


class FreezeCheck(wiring.Component):
    """Read ``words`` words in order through a read port and CRC them.

    Parameters
    ----------
    words : int
        Words to read (the copy's ``lanes * depth``), flat indices ``0 .. words-1``.
    width : int
        Word width.

    Members
    -------
    start : In(1)
        Begin a sweep (ignored while one runs).
    addr : Out(range(words))
    en : Out(1)
        Read request for ``addr`` (one per clock, ``words`` in a row).
    word : In(width)
    word_valid : In(1)
        The answers, in request order, at any fixed latency.
    done : Out(1)
        One cycle: the CRC of all ``words`` words is in ``value``.
    value : Out(32)
        The check value; held until the next ``start``.
    """

    def __new__(cls, *args, src_loc_at=0, **kwargs):
        _check_positive(**kwargs)
        return super().__new__(cls, *args, src_loc_at=src_loc_at + 1, **kwargs)

    def __init__(self, *, words: int, width: int):
        self.words, self.width = words, width
        super().__init__({"start": In(1), "addr": Out(range(words)), "en": Out(1),
                          "word": In(width), "word_valid": In(1), "done": Out(1),
                          "value": Out(32)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.crc = crc = Crc32Words(width=self.width)
        last = self.words - 1
        issuing = Signal()
        running = Signal()
        received = Signal(range(self.words))
        tail = Signal(Crc32Words.LATENCY)          # the last word travelling through the CRC
        m.d.comb += [self.en.eq(issuing), crc.start.eq(self.start & ~running),
                     crc.valid.eq(self.word_valid & running), crc.data.eq(self.word),
                     self.value.eq(crc.value), self.done.eq(tail[-1])]
        m.d.sync += tail.eq(Cat(self.word_valid & running & (received == last), tail[:-1]))
        with m.If(self.start & ~running):
            m.d.sync += [running.eq(1), issuing.eq(1), self.addr.eq(0), received.eq(0)]
        with m.If(issuing):
            m.d.sync += self.addr.eq(self.addr + 1)
            with m.If(self.addr == last):
                m.d.sync += [issuing.eq(0), self.addr.eq(0)]
        with m.If(self.word_valid & running):
            m.d.sync += received.eq(received + 1)
            with m.If(received == last):
                m.d.sync += running.eq(0)
        return m


class RecordCheck(wiring.Component):
    """The check value of the whole interval record: the words' CRC (:class:`FreezeCheck`'s
    ``value``) continued over the interval's header bytes
    (:func:`host_sw.contracts.check_value.extend_check`), for FROZEN_CHECK.

    The continuation runs a byte a clock. A clock after ``frozen_ready`` rises, the words'
    CRC and the header (both final by then, and held while the copy is frozen) are loaded;
    each clock then takes one CRC step over the next header byte (32 XORs of register and
    byte bits, 3 to 14 taps each), and ``value`` is loaded once the last byte is in.
    ``ready`` follows ``frozen_ready`` from then on (:attr:`latency` cycles after its
    rise), so STATUS.frozen_ready never shows a check value still on its way.

    Why not the whole header in one step: that XOR matrix (32 outputs of 113 to 142 taps
    at 224 header bits, every header bit fanning out to some 16 registers) was a datapath
    critical path of the two-clock LDA and RDA cores on ECP5 (one 6.8–10.8 ns net from a
    header bit); the value is read over the bus long after the copy freezes, so a few
    dozen clocks cost nothing.

    Parameters
    ----------
    header_bits : int
        Bits of the header: :func:`host_sw.contracts.check_value.header_bits` of the
        core's kind (:data:`~host_sw.contracts.check_value.HEADER_BITS` but on RLI).

    Members
    -------
    words_check : In(32)
        The CRC of the frozen copy's words (the bank's ``frozen_check``).
    header : In(header_bits)
        The frozen interval's header, fields in
        :func:`~host_sw.contracts.check_value.header_fields` order from bit 0.
    frozen_ready : In(1)
        The copy is frozen (its words' CRC is final; the header was final earlier).
    value : Out(32)
        The check value, :attr:`latency` cycles after ``frozen_ready`` rose (loaded only
        then: 0 from reset, then held until the next frozen copy's).
    ready : Out(1)
        ``frozen_ready`` held back until ``value`` is the frozen record's.

    Attributes
    ----------
    latency : int
        Cycles from ``frozen_ready``'s rise to ``ready``: the load's decision, the load, a
        step per header byte, the value's register.
    """

    def __init__(self, *, header_bits: int = HEADER_BITS):
        if (isinstance(header_bits, bool) or not isinstance(header_bits, int)
                or header_bits < 8 or header_bits % 8):
            raise ValueError(f"header_bits must be a positive whole number of bytes in "
                             f"bits, not {header_bits!r}")
        self.header_bits = header_bits
        self.latency = header_bits // 8 + 3
        super().__init__({"words_check": In(32), "header": In(header_bits),
                          "frozen_ready": In(1), "value": Out(32), "ready": Out(1)})

    def elaborate(self, platform):
        m = Module()
        nbytes = self.header_bits // 8
        state_cols, data_cols = crc32_matrix(8)
        # zlib.crc32(header, c): the raw register c ^ XOROUT, a step per byte, ^ XOROUT.
        # ``state`` and ``rest`` have no enable: they load while ``loading`` (a register,
        # in copies of 32 loads each) and step on every clock they do not load, and
        # ``value`` takes ``state`` after exactly ``nbytes`` steps. With an enable from
        # ``left != 0`` and ``frozen_ready`` on all 256 flip-flops, that net (4.0 ns) was
        # the two-clock LDA core's datapath critical path on two of three seeds
        # (``docs/HARDWARE.md``).
        # ``words_check`` is registered first (it is final from ``frozen_ready`` on).
        state = Signal(32, reset_less=True)
        rest = Signal(self.header_bits, reset_less=True)   # the bytes still to go, next first
        words_check = Signal(32, reset_less=True)
        left = Signal(range(nbytes + 1))
        started, done, loading = Signal(), Signal(), Signal()
        inputs = [state[i] for i in range(32)] + [rest[i] for i in range(8)]
        columns = state_cols + data_cols
        step = Cat(*[_xor_of(inputs, columns, b) for b in range(32)])
        load_next = self.frozen_ready & ~started & ~loading
        m.d.sync += [words_check.eq(self.words_check), loading.eq(load_next)]
        pieces = [(state, 0, 32, words_check ^ CRC32_XOROUT, step)]
        for lo in range(0, self.header_bits, 32):
            hi = min(lo + 32, self.header_bits)
            pieces.append((rest, lo, hi, self.header, rest >> 8))
        copies = kept_copies(m, load_next, len(pieces), name="loading")
        for (target, lo, hi, loaded, stepped), load in zip(pieces, copies):
            m.d.sync += target[lo:hi].eq(Mux(load, loaded[lo:hi], stepped[lo:hi]))
        with m.If(~self.frozen_ready):
            m.d.sync += [started.eq(0), done.eq(0)]
        with m.Elif(loading):
            m.d.sync += [started.eq(1), left.eq(nbytes)]
        with m.Elif(started):
            with m.If(left != 0):
                m.d.sync += left.eq(left - 1)
            with m.Elif(~done):
                # loaded only once a copy is frozen: 0 from reset (FROZEN_CHECK's declared
                # reset), then the last frozen record's value until the next one
                m.d.sync += [self.value.eq(state ^ CRC32_XOROUT), done.eq(1)]
        m.d.comb += self.ready.eq(self.frozen_ready & done)
        return m

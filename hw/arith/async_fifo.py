# SPDX-License-Identifier: BSD-2-Clause
"""A clock-crossing FIFO whose ready flags are registers and whose pointers' next values
are kept ready ahead of each transfer.

Where it sits (``docs/DESIGN.md``, "Clock domains"): under the frame crossings
(:func:`hw.frames.frame_crossing.store_and_forward`) and the exporter's read requests
(:class:`hw.inband.exporter_crossing.ExporterCrossing`), where the datapath reads what the
control domain writes.

Why not :class:`amaranth.lib.fifo.AsyncFIFO` there: its ``r_rdy`` is the comparison of
the synchronised write pointer with the read pointer, and a read adds ``r_rdy & r_en`` to
the read pointer and Gray-encodes the sum into a register and the memory's address, all
in one clock: compare, enable, carry chain, encoding (6–12 LUT levels with the reader's
own handshake). That path, in the frame crossings' beat and token FIFOs, was the datapath
critical path of the two-clock LDA, RDA and LDS cores on ECP5 in seven of nine routed
seeds (177–196 MHz with router1; ``docs/CHANGES.md``). Here each side keeps its pointer
and the pointer one ahead (binary and Gray) in registers, a transfer selects the one
ahead (one LUT after the enable), and the ready flag is registered from comparisons of both
with the last synchronised pointer of the other side: a flag is a clock more
conservative than :class:`~amaranth.lib.fifo.AsyncFIFO`'s, never optimistic, and a run of
transfers still moves one entry a clock.

The rest is :class:`~amaranth.lib.fifo.AsyncFIFO`'s design (Cummings' "style #2"): Gray
pointers crossing through :class:`amaranth.lib.cdc.FFSynchronizer`, the write domain's
reset reaching the read side through an :class:`amaranth.lib.cdc.AsyncFFSynchronizer`,
where it empties the FIFO by copying the synchronised write pointer. ``r_data`` is the
memory's read register: valid while ``r_rdy`` is high, as
:class:`~amaranth.lib.fifo.AsyncFIFO`'s. Hand-written: no published Amaranth FIFO
registers its flags.
"""

from amaranth.hdl import Cat, Elaboratable, Module, Mux, ResetSignal, Signal
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.memory import Memory

__all__ = ["RegisteredAsyncFIFO", "gray_decode", "gray_encode"]


def gray_encode(value):
    """The Gray code of the binary ``value``."""
    return value ^ value[1:]


def gray_decode(code):
    """The binary value of the Gray code ``code``."""
    bits = [code[-1]]
    for k in reversed(range(len(code) - 1)):
        bits.insert(0, bits[0] ^ code[k])
    return Cat(*bits)


class RegisteredAsyncFIFO(Elaboratable):
    """An asynchronous FIFO of ``depth`` (a power of two, at least 2) entries of ``width``
    bits, written in ``w_domain`` and read in ``r_domain``, with registered ready flags.

    Members (as :class:`amaranth.lib.fifo.AsyncFIFO`'s): ``w_data``, ``w_en``, ``w_rdy``
    (``w_domain``); ``r_data``, ``r_en``, ``r_rdy`` (``r_domain``). An entry is written
    where ``w_en & w_rdy`` and read where ``r_en & r_rdy``; ``w_rdy`` is low while the
    write domain is reset. A reset of the write domain empties the FIFO; a reset of the
    read domain alone leaves its entries in place.
    """

    def __init__(self, *, width: int, depth: int, w_domain: str, r_domain: str):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"depth must be a power of two, at least 2, not {depth}")
        self.width = width
        self.depth = depth
        self.w_domain = w_domain
        self.r_domain = r_domain
        self.w_data = Signal(width)
        self.w_en = Signal()
        self.w_rdy = Signal()
        self.r_data = Signal(width)
        self.r_en = Signal()
        self.r_rdy = Signal(reset_less=True)

    def elaborate(self, platform):
        m = Module()
        w, r = self.w_domain, self.r_domain
        bits = (self.depth - 1).bit_length() + 1
        m.submodules.storage = storage = Memory(shape=self.width, depth=self.depth, init=[])
        consume_gry = Signal(bits, reset_less=True)
        produce_gry = self._write_side(m, storage, bits, consume_gry)
        produce_r_gry = Signal(bits)
        m.submodules.produce_cdc = FFSynchronizer(produce_gry, produce_r_gry, o_domain=r)

        # The read side's registers have no reset of their own: the write domain's reset
        # empties the FIFO through ``r_rst`` (:class:`~amaranth.lib.fifo.AsyncFIFO`'s rule),
        # and its pointers are Gray-consistent copies of the write side's.
        consume_bin = Signal(bits, reset_less=True)
        ahead_bin = Signal(bits, init=1, reset_less=True)
        ahead_gry = Signal(bits, init=1, reset_less=True)
        r_rst = Signal()
        m.submodules.rst_cdc = AsyncFFSynchronizer(
            ResetSignal(w, allow_reset_less=True), r_rst, o_domain=r)
        reset_ended = Signal(reset_less=True)
        m.d[r] += reset_ended.eq(r_rst)
        do_read = Signal()
        m.d.comb += do_read.eq(self.r_rdy & self.r_en)
        with m.If(r_rst):
            m.d[r] += [consume_gry.eq(produce_r_gry), consume_bin.eq(gray_decode(produce_r_gry)),
                       self.r_rdy.eq(0)]
        with m.Elif(do_read):
            m.d[r] += [consume_bin.eq(ahead_bin), consume_gry.eq(ahead_gry),
                       self.r_rdy.eq(ahead_gry != produce_r_gry)]
        with m.Else():
            m.d[r] += self.r_rdy.eq(consume_gry != produce_r_gry)
        # The pointer one ahead moves with a read, its increment from registers (the read
        # selects it, it does not feed the adder); the clock after ``r_rst`` (``r_rdy``
        # still low) it is set from the copied pointer.
        with m.If(reset_ended):
            m.d[r] += [ahead_bin.eq(consume_bin + 1),
                       ahead_gry.eq(gray_encode((consume_bin + 1)[:bits]))]
        with m.Elif(do_read):
            m.d[r] += [ahead_bin.eq(ahead_bin + 1),
                       ahead_gry.eq(gray_encode((ahead_bin + 1)[:bits]))]
        read = storage.read_port(domain=r)
        m.d.comb += [read.addr.eq(Mux(do_read, ahead_bin, consume_bin)[:-1]),
                     self.r_data.eq(read.data)]
        return m

    def _write_side(self, m, storage, bits, consume_gry):
        """The write pointer, ``w_rdy`` and the memory's write port, against the read
        pointer ``consume_gry`` (a register of the read side); returns the registered Gray
        write pointer that crosses."""
        w = self.w_domain
        produce_bin = Signal(bits)
        produce_gry = Signal(bits)
        ahead_bin = Signal(bits, init=1)
        ahead_gry = Signal(bits, init=1)
        consume_w_gry = Signal(bits)
        m.submodules.consume_cdc = FFSynchronizer(consume_gry, consume_w_gry, o_domain=w)

        def full(pointer):
            return ((pointer[-1] != consume_w_gry[-1]) & (pointer[-2] != consume_w_gry[-2])
                    & (pointer[:-2] == consume_w_gry[:-2]))

        do_write = Signal()
        m.d.comb += do_write.eq(self.w_rdy & self.w_en)
        with m.If(do_write):
            m.d[w] += [produce_bin.eq(ahead_bin), produce_gry.eq(ahead_gry),
                       ahead_bin.eq(ahead_bin + 1),
                       ahead_gry.eq(gray_encode((ahead_bin + 1)[:bits])),
                       self.w_rdy.eq(~full(ahead_gry))]
        with m.Else():
            m.d[w] += self.w_rdy.eq(~full(produce_gry))
        write = storage.write_port(domain=w)
        m.d.comb += [write.addr.eq(produce_bin[:-1]), write.data.eq(self.w_data),
                     write.en.eq(do_write)]
        return produce_gry

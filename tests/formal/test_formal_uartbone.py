# SPDX-License-Identifier: BSD-2-Clause
"""Proofs (SymbiYosys) on the bus bridge :class:`hw.bus.uartbone.UARTBoneBridge`, which drives
the core's ``bus_tx`` port.

* ``bus_tx`` keeps the stream rule (k-induction, every input free).
* A read command's reply carries the data of its own bus reads, and only those: each
  reply byte is the next byte (most significant first) of the word of the last acknowledged
  read, no byte is sent without a read owing it, the i-th read of the command is at its
  address (+ i when incrementing), a read command never writes, and when the bridge
  takes the next command it has made exactly ``length`` reads and sent ``length × 4``
  bytes (bounded, 20 cycles from reset: the host's command bytes back to back, every
  timing of the bus's answers and of ``tx.ready``, read data with a free part in every
  byte, both read commands, lengths 1 and 2, every address).

Each proof has a planted bug that the same proof must refute.
"""

import pytest
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Array, Assert, Assume, Cat, Const, Mux, Signal

from formal_util import Harness, assert_proved, assert_refuted, assert_stream_holds, free_inputs
from host_sw.contracts.uartbone import CMD_READ_FIXED, CMD_READ_INCR
from hw.bus.uartbone import UARTBoneBridge

pytestmark = pytest.mark.formal

#: Lengths of the scripted read command: 1..MAX_LENGTH words.
MAX_LENGTH = 2
#: Cycles of the bounded proof: the 6 command bytes, then per word a read and 4 bytes,
#: with room for the solver's stalls.
BMC_DEPTH = 20


class BlindBridge(UARTBoneBridge):
    """Planted bug: the bridge's state machine sees ``tx.ready`` always high (it ignores
    the host's backpressure)."""

    def elaborate(self, platform):
        real, self.tx.ready = self.tx.ready, Const(1)
        try:
            return super().elaborate(platform)
        finally:
            self.tx.ready = real


class StaleDataBridge(UARTBoneBridge):
    """Planted bug: the bridge takes the bus's read data one clock late (the data of the
    cycle before the acknowledgement, as if a read answered with the previous one's
    word)."""

    def elaborate(self, platform):
        real = self.bus.r_data
        stale = Signal(len(real), name="stale_r_data")
        self.bus.r_data = stale
        try:
            m = super().elaborate(platform)
        finally:
            self.bus.r_data = real
        m.d.sync += stale.eq(real)
        return m


class TxHarness(Harness):
    def __init__(self, bridge):
        super().__init__()
        self.dut = bridge

    def build(self, m, platform):
        m.submodules.dut = self.dut
        free_inputs(m, self.dut)
        assert_stream_holds(m, self.dut.tx, "bus_tx")


class ReplyHarness(Harness):
    """One read command from the host (its bytes back to back), a free CSR slave, a free
    ``tx.ready``; the reply checked against a shadow of the reads."""

    def __init__(self, bridge):
        super().__init__()
        self.dut = bridge

    def build(self, m, platform):
        m.submodules.dut = dut = self.dut
        rx, tx, bus = dut.rx, dut.tx, dut.bus
        # (each AnyConst in a signal of its own: one value for every use)
        incrementing, length, address = Signal(), Signal(8), Signal(32)
        m.d.comb += [incrementing.eq(AnyConst(1)), length.eq(AnyConst(8)),
                     address.eq(AnyConst(32))]
        m.d.comb += Assume((length >= 1) & (length <= MAX_LENGTH))
        command = Array([Mux(incrementing, CMD_READ_INCR, CMD_READ_FIXED), length,
                         address[24:32], address[16:24], address[8:16], address[0:8]])
        sent = Signal(range(len(command) + 1))          # command bytes taken by the bridge
        script_done = sent == len(command)
        # The host's bytes back to back (free gaps between them make the problem too hard
        # for the solver within the time budget; the timeout has its own tests).
        m.d.comb += [rx.valid.eq(~script_done),
                     rx.payload.eq(command[sent])]
        with m.If(rx.valid & rx.ready):
            m.d.sync += sent.eq(sent + 1)
        # The CSR slave answers any time, but only a pending request, with any data.
        # Each data byte carries its position (bits 0..1) and two free bits (a word read
        # in another cycle differs): narrow enough for the solver, wide enough that a
        # byte out of place or from another read shows.
        r_data = Cat(*(Cat(Const(3 - i, 2), AnySeq(2), Const(0, 4)) for i in range(4)))
        m.d.comb += [bus.ack.eq(AnySeq(1)), bus.r_data.eq(r_data),
                     tx.ready.eq(AnySeq(1)),
                     Assume(~bus.ack | bus.r_stb | bus.w_stb)]
        # Shadow of the reply: the word of the last read and the bytes it still owes.
        reads = Signal(8)
        # the address of the next read, counted like the bridge does (an adder chain of
        # the same shape: a sum A + i would be hard for the solver to match)
        next_addr = Signal(32)
        with m.If(sent == 2):
            m.d.sync += next_addr.eq(address)
        replied = Signal(11)
        word = Signal(32)
        owed = Signal(3)
        read_done = bus.r_stb & bus.ack
        m.d.comb += Assert(~bus.w_stb, "a read command never writes")
        with m.If(read_done):
            m.d.comb += [
                Assert(owed == 0, "a read before the previous word's 4 bytes were sent"),
                Assert(reads < length, "more reads than the command's length"),
                Assert(bus.addr == next_addr, "a read at another address than the command's"),
            ]
            m.d.sync += [word.eq(bus.r_data), owed.eq(4), reads.eq(reads + 1),
                         next_addr.eq(Mux(incrementing, next_addr + 1, next_addr))]
        with m.If(tx.valid & tx.ready):
            m.d.comb += [
                Assert(owed != 0, "a reply byte that no read owes"),
                Assert(tx.payload == word[24:32], "a reply byte that is not the read's data"),
            ]
            m.d.sync += [word.eq(word << 8), owed.eq(owed - 1), replied.eq(replied + 1)]
        # The next command is taken (rx.ready after the whole command): all of it answered.
        with m.If(script_done & rx.ready):
            m.d.comb += [Assert(reads == length, "fewer reads than the command's length"),
                         Assert(replied == length * 4, "not length x 4 reply bytes")]
        assert_stream_holds(m, tx, "bus_tx")


def bridge(cls=UARTBoneBridge):
    # a timeout longer than the bounded proof: the command is never dropped
    return cls(timeout_cycles=2 * BMC_DEPTH)


def test_bus_tx_holds(tmp_path):
    assert_proved(TxHarness(UARTBoneBridge(timeout_cycles=4)), tmp_path, mode="prove",
                  depth=3)


def test_bus_tx_holds_refutes_planted_bug(tmp_path):
    # from reset, a command takes 8 cycles to reach the reply: a bounded run finds it
    assert_refuted(TxHarness(BlindBridge(timeout_cycles=4)), tmp_path, mode="bmc",
                   depth=12, expect="before the transfer")


def test_read_reply_is_the_reads_data(tmp_path):
    assert_proved(ReplyHarness(bridge()), tmp_path, mode="bmc", depth=BMC_DEPTH)


def test_read_reply_is_the_reads_data_refutes_planted_bug(tmp_path):
    assert_refuted(ReplyHarness(bridge(StaleDataBridge)), tmp_path, mode="bmc",
                   depth=BMC_DEPTH, expect="not the read's data")

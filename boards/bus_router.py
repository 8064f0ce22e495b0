# SPDX-License-Identifier: BSD-2-Clause
"""One UARTBone host byte stream shared by several measurement cores.

Where it sits (``DESIGN.md``: "CSR register bank ◄── bus bridge ◄── UART (board)"): a
board with two measurement cores (the inline tap measures each direction with its own
:class:`hw.lda_pipeline.MeasurementCore`) has one UART. This router sits between the UART PHY
(:class:`hw.bus.uart.UART`) and the cores' own UARTBone byte ports (``bus_rx`` / ``bus_tx``):
it reads each command's 6-byte header (STYLE.md §5: command, length, 32-bit big-endian
word address), picks the core from word-address bit ``select_bit`` (core ``k`` at word
base ``k << select_bit``, byte base ``k << (select_bit + 2)``), clears that bit, passes the
header and a write's ``length × 4`` data bytes to that core, and then, for a read, passes
exactly ``length × 4`` answer bytes back before it takes the next command — so answers of
different cores never interleave. A checked command (``host_sw.contracts.uartbone``'s
checked framing) is passed on unchanged — its CRC covers the address, and the core ignores
the select bits — with its tag, data and CRC bytes; then its answer (``tag | words | CRC``,
or a write's ``tag | CRC``) goes back, or nothing when the core ignored a garbled request:
the router stops waiting for an answer after ``timeout_cycles`` clocks without a byte
either way. A command left half-received for ``timeout_cycles``
clocks is dropped (the core's bridge drops its part by its own timeout; the board tops
give the router the bridges' timeout, 100 ms of the clock).
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.uartbone import (CMD_CHECKED_WRITE, CHECKED_COMMANDS,
                                        COMMAND_HEADER_BYTES, CRC_BYTES, MAX_BURST,
                                        READ_COMMANDS, ROUTER_SELECT_BIT, WRITE_COMMANDS,
                                        checked_reply_length)

__all__ = ["UARTBoneRouter"]


class UARTBoneRouter(wiring.Component):
    """Route UARTBone commands to one of ``targets`` byte ports by an address bit.

    Parameters
    ----------
    targets:
        Number of cores (2 or 4).
    select_bit:
        Lowest word-address bit that selects the core (the bits used must lie in one
        address byte); the boards and the host use
        :data:`host_sw.contracts.uartbone.ROUTER_SELECT_BIT`.
    timeout_cycles:
        Clocks without a byte after which a half-received command is dropped.

    Members
    -------
    host_rx: In(stream.Signature(8))
        Bytes from the host (UART receiver).
    host_tx: Out(stream.Signature(8))
        Bytes to the host (UART transmitter).
    target_rx: Out(stream.Signature(8)).array(targets)
        Bytes to each core's ``bus_rx``.
    target_tx: In(stream.Signature(8)).array(targets)
        Bytes from each core's ``bus_tx``.
    """

    def __init__(self, *, targets: int = 2, select_bit: int = ROUTER_SELECT_BIT,
                 timeout_cycles: int = 100_000):
        if targets not in (2, 4):
            raise ValueError(f"targets must be 2 or 4, not {targets}")
        sel_bits = targets.bit_length() - 1
        if not 0 <= select_bit <= 31 - sel_bits + 1 or \
                select_bit // 8 != (select_bit + sel_bits - 1) // 8:
            raise ValueError(f"select_bit must leave the {sel_bits} select bit(s) in one "
                             f"address byte, not {select_bit}")
        if timeout_cycles < 1:
            raise ValueError(f"timeout_cycles must be positive, not {timeout_cycles}")
        self.targets = targets
        self.select_bit = select_bit
        self.select_bits = sel_bits
        self.timeout_cycles = timeout_cycles
        super().__init__({
            "host_rx": In(stream.Signature(8)),
            "host_tx": Out(stream.Signature(8)),
            "target_rx": Out(stream.Signature(8)).array(targets),
            "target_tx": In(stream.Signature(8)).array(targets),
        })

    def elaborate(self, platform):
        m = Module()
        r = SimpleNamespace(
            header=Signal(data.ArrayLayout(8, COMMAND_HEADER_BYTES)),
            index=Signal(range(COMMAND_HEADER_BYTES + 1)),
            select=Signal(self.select_bits),
            remaining=Signal(range(checked_reply_length(MAX_BURST) + 1)),
            answer=Signal(range(checked_reply_length(MAX_BURST) + 1)),
            checked=Signal(),
            idle=Signal(range(self.timeout_cycles + 1)),
            timed_out=Signal(),
            command=Signal(8))
        m.d.comb += r.timed_out.eq(r.idle == self.timeout_cycles)
        with m.If((self.host_rx.valid & self.host_rx.ready) |
                  (self.host_tx.valid & self.host_tx.ready)):
            m.d.sync += r.idle.eq(0)
        with m.Elif(~r.timed_out):
            m.d.sync += r.idle.eq(r.idle + 1)

        with m.FSM(name="router"):
            with m.State("HEADER"):
                self._take_header(m, r)
            with m.State("SELECT"):
                self._select_target(m, r)
            with m.State("SEND_HEADER"):
                self._send_header(m, r)
            with m.State("DATA"):
                self._forward_data(m, r)
            with m.State("ANSWER"):
                self._forward_answer(m, r)
        return m

    def _take_header(self, m, r):
        """Shift the command header in from the host; a pause resets a half header."""
        m.d.comb += self.host_rx.ready.eq(1)
        with m.If(self.host_rx.valid):
            m.d.sync += [r.header[COMMAND_HEADER_BYTES - 1].eq(self.host_rx.payload),
                         r.index.eq(r.index + 1)]
            for k in range(COMMAND_HEADER_BYTES - 1):
                m.d.sync += r.header[k].eq(r.header[k + 1])
            with m.If(r.index == COMMAND_HEADER_BYTES - 1):
                m.d.sync += r.index.eq(0)
                m.next = "SELECT"
        with m.Elif(r.timed_out):
            m.d.sync += r.index.eq(0)

    def _select_target(self, m, r):
        """Take the select bits out of the address (header byte 2 = address bits 31..24
        onwards), clear them for the target, and count the data or answer bytes."""
        sel_byte = 2 + (3 - self.select_bit // 8)
        sel_lsb = self.select_bit % 8
        select_field = r.header[sel_byte][sel_lsb:sel_lsb + self.select_bits]
        m.d.sync += [r.select.eq(select_field), r.remaining.eq(Cat(0, 0, r.header[1])),
                     r.command.eq(r.header[0]), r.checked.eq(0)]
        is_checked = 0
        for code in CHECKED_COMMANDS:
            is_checked = is_checked | (r.header[0] == code)
        length = r.header[1]
        with m.If(is_checked):
            # tag, a write's data, CRC on; then the answer back
            with m.If(r.header[0] == CMD_CHECKED_WRITE):
                m.d.sync += [r.remaining.eq(1 + Cat(0, 0, length) + CRC_BYTES),
                             r.answer.eq(checked_reply_length(0))]
            with m.Else():
                m.d.sync += [r.remaining.eq(1 + CRC_BYTES),
                             r.answer.eq(1 + Cat(0, 0, length) + CRC_BYTES)]
            m.d.sync += r.checked.eq(1)
        with m.Else():
            m.d.sync += select_field.eq(0)
        m.next = "SEND_HEADER"

    def _send_header(self, m, r):
        """Replay the header to the selected target, then forward its data or answer."""
        for k in range(self.targets):
            target_rx = self.target_rx[k]
            with m.If(r.select == k):
                m.d.comb += [target_rx.valid.eq(1), target_rx.payload.eq(r.header[0])]
                with m.If(target_rx.ready):
                    for j in range(COMMAND_HEADER_BYTES - 1):
                        m.d.sync += r.header[j].eq(r.header[j + 1])
                    m.d.sync += [r.header[COMMAND_HEADER_BYTES - 1].eq(r.header[0]),
                                 r.index.eq(r.index + 1)]
                    with m.If(r.index == COMMAND_HEADER_BYTES - 1):
                        m.d.sync += r.index.eq(0)
                        with m.If(r.checked | (r.command == WRITE_COMMANDS[0]) |
                                  (r.command == WRITE_COMMANDS[1])):
                            m.next = "DATA"
                        with m.Elif((r.command == READ_COMMANDS[0]) |
                                    (r.command == READ_COMMANDS[1])):
                            m.next = "ANSWER"
                        with m.Else():
                            m.next = "HEADER"

    def _forward_data(self, m, r):
        """The write data bytes go to the selected target; a pause drops the rest."""
        for k in range(self.targets):
            with m.If(r.select == k):
                m.d.comb += [self.target_rx[k].valid.eq(self.host_rx.valid),
                             self.target_rx[k].payload.eq(self.host_rx.payload),
                             self.host_rx.ready.eq(self.target_rx[k].ready)]
        with m.If(self.host_rx.valid & self.host_rx.ready):
            m.d.sync += r.remaining.eq(r.remaining - 1)
            with m.If((r.remaining == 1) & r.checked):
                m.d.sync += r.remaining.eq(r.answer)
                m.next = "ANSWER"
            with m.Elif(r.remaining == 1):
                m.next = "HEADER"
        with m.Elif(r.timed_out):
            m.next = "HEADER"

    def _forward_answer(self, m, r):
        """The selected target's answer bytes go back to the host."""
        for k in range(self.targets):
            with m.If(r.select == k):
                m.d.comb += [self.host_tx.valid.eq(self.target_tx[k].valid),
                             self.host_tx.payload.eq(self.target_tx[k].payload),
                             self.target_tx[k].ready.eq(self.host_tx.ready)]
        with m.If(self.host_tx.valid & self.host_tx.ready):
            m.d.sync += r.remaining.eq(r.remaining - 1)
            with m.If(r.remaining == 1):
                m.next = "HEADER"
        with m.Elif(r.checked & r.timed_out):
            m.next = "HEADER"           # the core ignored a garbled request: no answer

# SPDX-License-Identifier: BSD-2-Clause
"""One UARTBone host byte stream shared by several measurement cores.

Where it sits (``DESIGN.md``: "CSR register bank ◄── bus bridge ◄── UART (board)"): a
board with two measurement cores (the inline tap measures each direction with its own
:class:`hw.lda_pipeline.LdaCore`) has one UART. This router sits between the UART PHY
(:class:`hw.uart.UART`) and the cores' own UARTBone byte ports (``bus_rx`` / ``bus_tx``):
it reads each command's 6-byte header (STYLE.md §5: command, length, 32-bit big-endian
word address), picks the core from word-address bit ``select_bit`` (core ``k`` at word
base ``k << select_bit``, byte base ``k << (select_bit + 2)``), clears that bit, passes the
header and a write's ``length × 4`` data bytes to that core, and then, for a read, passes
exactly ``length × 4`` answer bytes back before it takes the next command — so answers of
different cores never interleave. A command left half-received for ``timeout_cycles``
clocks is dropped (the core's bridge drops its part by its own timeout).
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.uartbone import (COMMAND_HEADER_BYTES, MAX_BURST, READ_COMMANDS,
                                        ROUTER_SELECT_BIT, WRITE_COMMANDS)

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
        header = Signal(data.ArrayLayout(8, COMMAND_HEADER_BYTES))
        index = Signal(range(COMMAND_HEADER_BYTES + 1))
        select = Signal(self.select_bits)
        remaining = Signal(range(MAX_BURST * 4 + 1))
        idle = Signal(range(self.timeout_cycles + 1))
        timed_out = Signal()
        m.d.comb += timed_out.eq(idle == self.timeout_cycles)

        # Address byte holding the select bits (header byte 2 = address bits 31..24).
        sel_byte = 2 + (3 - self.select_bit // 8)
        sel_lsb = self.select_bit % 8
        command = Signal(8)
        length = header[1]

        with m.If(self.host_rx.valid & self.host_rx.ready):
            m.d.sync += idle.eq(0)
        with m.Elif(~timed_out):
            m.d.sync += idle.eq(idle + 1)

        target_rx = self.target_rx
        target_tx = self.target_tx
        with m.FSM(name="router"):
            with m.State("HEADER"):
                m.d.comb += self.host_rx.ready.eq(1)
                with m.If(self.host_rx.valid):
                    m.d.sync += [header[COMMAND_HEADER_BYTES - 1].eq(self.host_rx.payload),
                                 index.eq(index + 1)]
                    for k in range(COMMAND_HEADER_BYTES - 1):
                        m.d.sync += header[k].eq(header[k + 1])
                    with m.If(index == COMMAND_HEADER_BYTES - 1):
                        m.d.sync += index.eq(0)
                        m.next = "SELECT"
                with m.Elif(timed_out):
                    m.d.sync += index.eq(0)
            with m.State("SELECT"):
                m.d.sync += [
                    select.eq(header[sel_byte][sel_lsb:sel_lsb + self.select_bits]),
                    header[sel_byte][sel_lsb:sel_lsb + self.select_bits].eq(0),
                    remaining.eq(Cat(0, 0, length)),
                    command.eq(header[0]),
                ]
                m.next = "SEND_HEADER"
            with m.State("SEND_HEADER"):
                for k in range(self.targets):
                    with m.If(select == k):
                        m.d.comb += [target_rx[k].valid.eq(1),
                                     target_rx[k].payload.eq(header[0])]
                        with m.If(target_rx[k].ready):
                            for j in range(COMMAND_HEADER_BYTES - 1):
                                m.d.sync += header[j].eq(header[j + 1])
                            m.d.sync += [header[COMMAND_HEADER_BYTES - 1].eq(header[0]),
                                         index.eq(index + 1)]
                            with m.If(index == COMMAND_HEADER_BYTES - 1):
                                m.d.sync += index.eq(0)
                                with m.If((command == WRITE_COMMANDS[0]) |
                                          (command == WRITE_COMMANDS[1])):
                                    m.next = "DATA"
                                with m.Elif((command == READ_COMMANDS[0]) |
                                            (command == READ_COMMANDS[1])):
                                    m.next = "ANSWER"
                                with m.Else():
                                    m.next = "HEADER"
            with m.State("DATA"):
                for k in range(self.targets):
                    with m.If(select == k):
                        m.d.comb += [target_rx[k].valid.eq(self.host_rx.valid),
                                     target_rx[k].payload.eq(self.host_rx.payload),
                                     self.host_rx.ready.eq(target_rx[k].ready)]
                with m.If(self.host_rx.valid & self.host_rx.ready):
                    m.d.sync += remaining.eq(remaining - 1)
                    with m.If(remaining == 1):
                        m.next = "HEADER"
                with m.Elif(timed_out):
                    m.next = "HEADER"
            with m.State("ANSWER"):
                for k in range(self.targets):
                    with m.If(select == k):
                        m.d.comb += [self.host_tx.valid.eq(target_tx[k].valid),
                                     self.host_tx.payload.eq(target_tx[k].payload),
                                     target_tx[k].ready.eq(self.host_tx.ready)]
                with m.If(self.host_tx.valid & self.host_tx.ready):
                    m.d.sync += remaining.eq(remaining - 1)
                    with m.If(remaining == 1):
                        m.next = "HEADER"
        return m

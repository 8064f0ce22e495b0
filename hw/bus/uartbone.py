# SPDX-License-Identifier: BSD-2-Clause
"""UARTBone bridge: host bytes in, CSR bus accesses, reply bytes out.

In the data flow of ``docs/DESIGN.md`` ("Data flow of a counter": how the host reads it)
this is the "bus bridge ◄── UART (board) / byte stream (simulation) ◄── host" box: it
turns the UARTBone byte protocol (LiteX's ``Stream2Wishbone``; host side and exact
framing in :mod:`host_sw.contracts.uartbone`) into accesses on the CSR bus of ``hw.bus.csr``
(``hw.bus.csr.csr_bus_signature``). On a board ``rx``/``tx`` come from the UART PHY
(``hw.bus.uart.UART``); in the exported Verilog they are the ``bus_rx_*``/``bus_tx_*`` byte
streams.

Protocol (all multi-byte values big-endian)::

    cmd | length (words) | word address (4 bytes) | [length × data word (4 bytes)]

* ``0x01`` write, incrementing address; ``0x02`` read, incrementing; ``0x03`` write, fixed
  address; ``0x04`` read, fixed address.
* A read answers exactly ``length × 4`` bytes, each word most significant byte first, in
  access order; a write answers nothing.
* A length of 0 (outside the protocol's 1..255) is accepted as a no-op: the address bytes
  are consumed, nothing is accessed and nothing answered.
* Unknown command bytes are dropped (so are bytes arriving while the bridge waits for a
  command, whatever they are, if they are not a command).
* If the next byte of a command does not arrive within the timeout (``timeout_cycles``
  clocks; by default :data:`DEFAULT_TIMEOUT` = 100 ms of the clock, LiteX's UARTBone
  figure) of the previous one, the half-received command is dropped and the bridge waits
  for a new command. A host resynchronises by pausing longer than that. The timeout is
  long because a USB-serial adapter delivers a command in pieces, milliseconds apart: a
  short one would drop real commands and then execute their tails as commands.
* ``rx`` is not ready while the bridge performs bus accesses or sends a reply (hosts wait
  for a read's reply before sending more; the UART PHY flags an overrun otherwise).

Checked framing (``0x65`` read incrementing, ``0x3C`` read fixed, ``0x5A`` one-word write;
:mod:`host_sw.contracts.uartbone`, ``docs/SPEC.md`` §7): after the address a tag byte, a
write's data word, then a CRC-32 of the request (least significant byte first), checked as
the bytes arrive by :class:`hw.bus.crc.Crc32Byte`. A request whose CRC is wrong (or a
checked write whose length is not 1) is consumed by its length and ignored: nothing
accessed, nothing answered. A right one is answered ``tag | words | CRC`` (read) or ``tag |
CRC`` (write, after the bus write), the CRC computed as the bytes leave. Checked commands
access the address's low ``ROUTER_SELECT_BIT`` bits (the bits above select the core behind
a board's router). Plain commands answer as before.
"""

from types import SimpleNamespace

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.uartbone import CMD_READ_FIXED, CMD_READ_INCR, CMD_WRITE_FIXED, CMD_WRITE_INCR
from host_sw.contracts.uartbone import (ADDRESS_MASK_CHECKED, CMD_CHECKED_READ_FIXED,
                                        CMD_CHECKED_READ_INCR, CMD_CHECKED_WRITE)

from hw.bus.crc import Crc32Byte
from hw.bus.csr import csr_bus_signature

__all__ = ["DEFAULT_TIMEOUT", "UARTBoneBridge", "check_timeout_cycles",
           "timeout_to_cycles"]

#: Seconds without a byte after which a half-received command is dropped: LiteX's
#: UARTBone (``Stream2Wishbone``: ``WaitTimer(100e-3*clk_freq)``).
DEFAULT_TIMEOUT = 100e-3


def timeout_to_cycles(clk_freq: float, timeout: float = DEFAULT_TIMEOUT) -> int:
    """Clocks of ``timeout`` seconds at ``clk_freq`` Hz (at least 1)."""
    if not clk_freq > 0:
        raise ValueError(f"clk_freq must be a positive frequency in Hz, not {clk_freq}")
    if not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, not {timeout}")
    return max(1, round(timeout * clk_freq))


def check_timeout_cycles(timeout_cycles) -> None:
    """Raise ValueError unless ``timeout_cycles`` is a positive integer."""
    if isinstance(timeout_cycles, bool) or not isinstance(timeout_cycles, int) \
            or timeout_cycles < 1:
        raise ValueError(f"timeout_cycles must be a positive integer, not {timeout_cycles}")


class UARTBoneBridge(wiring.Component):
    """Byte streams ↔ CSR bus master.

    Parameters
    ----------
    timeout_cycles : int
        Clocks without a byte after which a half-received command is dropped (≥ 1);
        :func:`timeout_to_cycles` converts seconds at a clock frequency (the default of a
        core is :data:`DEFAULT_TIMEOUT`).

    Members
    -------
    rx : In(stream.Signature(8))
        Bytes from the host.
    tx : Out(stream.Signature(8))
        Bytes to the host (read replies).
    bus : Out(hw.bus.csr.csr_bus_signature())
        CSR bus master port.
    """

    def __init__(self, *, timeout_cycles: int):
        check_timeout_cycles(timeout_cycles)
        self.timeout_cycles = timeout_cycles
        super().__init__({
            "rx": In(stream.Signature(8)),
            "tx": Out(stream.Signature(8)),
            "bus": Out(csr_bus_signature()),
        })

    def elaborate(self, platform):
        m = Module()
        s = SimpleNamespace(
            is_write=Signal(name="is_write"),
            incrementing=Signal(name="incrementing"),
            # words left in the command, including the current one
            remaining=Signal(8, name="remaining"),
            address=Signal(32, name="address"),
            word=Signal(32, name="word"),       # data being received (write) or sent (read)
            byte_count=Signal(2, name="byte_count"),  # bytes of the current address/data word
            # in the middle of a command, waiting for its next byte
            receiving=Signal(name="receiving"),
            timed_out=Signal(name="timed_out"),
            # The bus strobes are registers (the CSR bank's request latch is enabled from
            # them): set with the move into BUS_READ / BUS_WRITE, cleared with `ack`.
            r_stb=Signal(name="r_stb"), w_stb=Signal(name="w_stb"),
            # checked framing: the command is checked, its tag, length 0 / 1
            checked=Signal(name="checked"), tag=Signal(8, name="tag"),
            empty=Signal(name="empty"), single=Signal(name="single"))
        m.submodules.crc = s.crc = Crc32Byte()
        bus = self.bus
        m.d.comb += [bus.addr.eq(Mux(s.checked, s.address & ADDRESS_MASK_CHECKED, s.address)),
                     bus.w_data.eq(s.word), bus.r_stb.eq(s.r_stb), bus.w_stb.eq(s.w_stb)]
        with m.If(bus.ack):
            m.d.sync += [s.r_stb.eq(0), s.w_stb.eq(0)]
        self._timeout(m, s)
        with m.FSM(name="uartbone"):
            self._command_states(m, s)
            self._checked_states(m, s)
            self._access_states(m, s)
        return m

    def _timeout(self, m, s):
        """``timed_out``: no byte for ``timeout_cycles`` clocks in the middle of a
        command (``expired`` is the registered ``timer == timeout_cycles``)."""
        rx = self.rx
        timer = Signal(range(self.timeout_cycles + 1))
        expired = Signal()
        m.d.comb += s.timed_out.eq(s.receiving & expired)
        with m.If(~s.receiving | (rx.valid & rx.ready)):
            m.d.sync += [timer.eq(0), expired.eq(0)]
        with m.Elif(~expired):
            m.d.sync += [timer.eq(timer + 1), expired.eq(timer == self.timeout_cycles - 1)]

    def _take_crc(self, m, s, *, start=False):
        """The received byte (if any) enters the request's CRC."""
        m.d.comb += [s.crc.data.eq(self.rx.payload), s.crc.en.eq(self.rx.valid),
                     s.crc.start.eq(start)]

    def _command_states(self, m, s):
        """The FSM states that receive a command: its byte, length and address."""
        rx = self.rx
        with m.State("COMMAND"):
            m.d.comb += rx.ready.eq(1)
            self._take_crc(m, s, start=True)
            with m.If(rx.valid):
                with m.Switch(rx.payload):
                    for cmd in (CMD_WRITE_INCR, CMD_READ_INCR, CMD_WRITE_FIXED,
                                CMD_READ_FIXED):
                        with m.Case(cmd):
                            m.d.sync += [
                                s.is_write.eq(cmd in (CMD_WRITE_INCR, CMD_WRITE_FIXED)),
                                s.incrementing.eq(cmd in (CMD_WRITE_INCR, CMD_READ_INCR)),
                                s.checked.eq(0),
                            ]
                            m.next = "LENGTH"
                    for cmd in (CMD_CHECKED_READ_INCR, CMD_CHECKED_READ_FIXED,
                                CMD_CHECKED_WRITE):
                        with m.Case(cmd):
                            m.d.sync += [
                                s.is_write.eq(cmd == CMD_CHECKED_WRITE),
                                s.incrementing.eq(cmd != CMD_CHECKED_READ_FIXED),
                                s.checked.eq(1),
                            ]
                            m.next = "LENGTH"
                    # Default: unknown command byte, dropped.

        with m.State("LENGTH"):
            m.d.comb += [s.receiving.eq(1), rx.ready.eq(1)]
            with m.If(s.timed_out):
                m.next = "COMMAND"
            with m.Elif(rx.valid):
                self._take_crc(m, s)
                m.d.sync += [s.remaining.eq(rx.payload), s.byte_count.eq(0),
                             s.empty.eq(rx.payload == 0), s.single.eq(rx.payload == 1)]
                m.next = "ADDRESS"

        with m.State("ADDRESS"):
            m.d.comb += [s.receiving.eq(1), rx.ready.eq(1)]
            with m.If(s.timed_out):
                m.next = "COMMAND"
            with m.Elif(rx.valid):
                self._take_crc(m, s)
                m.d.sync += [s.address.eq((s.address << 8) | rx.payload),
                             s.byte_count.eq(s.byte_count + 1)]
                with m.If(s.byte_count == 3):
                    with m.If(s.checked):
                        m.next = "TAG"
                    with m.Elif(s.remaining == 0):
                        m.next = "COMMAND"
                    with m.Elif(s.is_write):
                        m.next = "DATA"
                    with m.Else():
                        m.d.sync += s.r_stb.eq(1)
                        m.next = "BUS_READ"

    def _checked_states(self, m, s):
        """The FSM states of the checked framing: tag and CRC in, the check, tag and CRC
        out."""
        rx, tx = self.rx, self.tx
        with m.State("TAG"):
            m.d.comb += [s.receiving.eq(1), rx.ready.eq(1)]
            with m.If(s.timed_out):
                m.next = "COMMAND"
            with m.Elif(rx.valid):
                self._take_crc(m, s)
                m.d.sync += [s.tag.eq(rx.payload), s.byte_count.eq(0)]
                with m.If(s.is_write & ~s.empty):
                    m.next = "DATA"
                with m.Else():
                    m.next = "CRC_IN"

        with m.State("CRC_IN"):
            m.d.comb += [s.receiving.eq(1), rx.ready.eq(1)]
            with m.If(s.timed_out):
                m.next = "COMMAND"
            with m.Elif(rx.valid):
                self._take_crc(m, s)
                m.d.sync += s.byte_count.eq(s.byte_count + 1)
                with m.If(s.byte_count == 3):
                    m.next = "CHECK"

        with m.State("CHECK"):                  # (after the CRC's last byte entered)
            with m.If(~s.crc.settled):
                pass
            with m.Elif(~s.crc.residue_ok | s.empty):
                m.next = "COMMAND"              # garbled or empty: ignored, no reply
            with m.Elif(s.is_write):
                with m.If(s.single):
                    m.d.sync += s.w_stb.eq(1)
                    m.next = "BUS_WRITE"
                with m.Else():
                    m.next = "COMMAND"
            with m.Else():
                m.next = "SEND_TAG"

        with m.State("SEND_TAG"):
            m.d.comb += [tx.valid.eq(1), tx.payload.eq(s.tag),
                         s.crc.data.eq(s.tag), s.crc.en.eq(tx.ready), s.crc.start.eq(1)]
            with m.If(tx.ready):
                m.d.sync += s.byte_count.eq(0)
                with m.If(s.is_write):
                    m.next = "SEND_CRC"
                with m.Else():
                    m.d.sync += s.r_stb.eq(1)
                    m.next = "BUS_READ"

        with m.State("SEND_CRC"):               # (after the reply's last byte entered)
            m.d.comb += [tx.valid.eq(s.crc.settled),
                         tx.payload.eq(s.crc.crc.word_select(s.byte_count, 8))]
            with m.If(tx.ready & s.crc.settled):
                m.d.sync += s.byte_count.eq(s.byte_count + 1)
                with m.If(s.byte_count == 3):
                    m.next = "COMMAND"

    def _access_states(self, m, s):
        """The FSM states that perform the accesses: write data in, bus accesses, read
        replies out."""
        rx, tx, bus = self.rx, self.tx, self.bus
        with m.State("DATA"):
            m.d.comb += [s.receiving.eq(1), rx.ready.eq(1)]
            with m.If(s.timed_out):
                m.next = "COMMAND"
            with m.Elif(rx.valid):
                self._take_crc(m, s)
                m.d.sync += [s.word.eq((s.word << 8) | rx.payload),
                             s.byte_count.eq(s.byte_count + 1)]
                with m.If(s.byte_count == 3):
                    with m.If(s.checked):       # all words in before the CRC decides
                        m.d.sync += s.remaining.eq(s.remaining - 1)
                        with m.If(s.remaining == 1):
                            m.next = "CRC_IN"
                    with m.Else():
                        m.d.sync += s.w_stb.eq(1)
                        m.next = "BUS_WRITE"

        with m.State("BUS_WRITE"):
            with m.If(bus.ack & s.checked):
                m.next = "SEND_TAG"             # the acknowledgement
            with m.Elif(bus.ack):
                m.d.sync += s.remaining.eq(s.remaining - 1)
                with m.If(s.incrementing):
                    m.d.sync += s.address.eq(s.address + 1)
                with m.If(s.remaining == 1):
                    m.next = "COMMAND"
                with m.Else():
                    m.next = "DATA"

        with m.State("BUS_READ"):
            with m.If(bus.ack):
                m.d.sync += [s.word.eq(bus.r_data), s.byte_count.eq(0)]
                with m.If(s.incrementing):
                    m.d.sync += s.address.eq(s.address + 1)
                m.next = "SEND"

        with m.State("SEND"):
            m.d.comb += [tx.valid.eq(1), tx.payload.eq(s.word[24:32]),
                         s.crc.data.eq(s.word[24:32]), s.crc.en.eq(tx.ready)]
            with m.If(tx.ready):
                m.d.sync += [s.word.eq(s.word << 8), s.byte_count.eq(s.byte_count + 1)]
                with m.If(s.byte_count == 3):
                    m.d.sync += s.remaining.eq(s.remaining - 1)
                    with m.If((s.remaining == 1) & s.checked):
                        m.next = "SEND_CRC"
                    with m.Elif(s.remaining == 1):
                        m.next = "COMMAND"
                    with m.Else():
                        m.d.sync += s.r_stb.eq(1)
                        m.next = "BUS_READ"

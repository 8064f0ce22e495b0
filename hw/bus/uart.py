# SPDX-License-Identifier: BSD-2-Clause
"""UART PHY (8N1): serial pins ↔ byte streams for the UARTBone bridge on a board.

In the data flow of ``docs/DESIGN.md`` ("Data flow of a counter") this is the "UART
(board)" box in front of the bus bridge (``hw.bus.uartbone.UARTBoneBridge``); simulation and
the exported core use the byte streams directly. One clock domain; ``divisor`` clocks
per bit (e.g. 100 MHz / 115200 → 868).

Receiver: the ``rxd`` pin passes a 2-flop synchroniser; a falling edge starts a frame, the
start bit is re-checked half a bit later (a glitch shorter than that is ignored), then the
8 data bits (LSB first) and the stop bit are sampled in the middle of each bit. A byte with
a low stop bit is dropped and flags ``rx_framing_error``; a byte that completes while the
previous one still waits in ``rx_data`` is dropped and flags ``rx_overrun`` (each flag is a
one-clock pulse).

Transmitter: takes a byte from ``tx_data`` when idle and sends start bit, 8 data bits LSB
first, stop bit; ``tx_data.ready`` is high only while idle.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UART"]


class UART(wiring.Component):
    """8N1 UART receiver and transmitter.

    Parameters
    ----------
    divisor : int
        Clocks per bit, at least 4.

    Members
    -------
    rxd : In(1)
        Serial input pin (idle high), asynchronous.
    txd : Out(1)
        Serial output pin (idle high).
    rx_data : Out(stream.Signature(8))
        Received bytes.
    tx_data : In(stream.Signature(8))
        Bytes to send.
    rx_framing_error, rx_overrun : Out(1)
        One-clock pulses when a received byte is dropped.
    """

    def __init__(self, *, divisor: int):
        if not isinstance(divisor, int) or divisor < 4:
            raise ValueError(f"divisor must be an integer of at least 4 clocks per bit, "
                             f"not {divisor}")
        self.divisor = divisor
        super().__init__({
            "rxd": In(1, init=1),
            "txd": Out(1, init=1),
            "rx_data": Out(stream.Signature(8)),
            "tx_data": In(stream.Signature(8)),
            "rx_framing_error": Out(1),
            "rx_overrun": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        d = self.divisor

        # -- receiver ----------------------------------------------------------------------
        rxd = Signal(init=1)
        m.submodules.rx_sync = FFSynchronizer(self.rxd, rxd, init=1, stages=2)
        rx_timer = Signal(range(d))
        rx_bits = Signal(4)         # data bits received
        rx_shift = Signal(8)
        rx_byte = Signal(8)
        rx_valid = Signal()
        m.d.comb += [self.rx_data.payload.eq(rx_byte), self.rx_data.valid.eq(rx_valid)]
        with m.If(self.rx_data.ready):
            m.d.sync += rx_valid.eq(0)
        m.d.sync += [self.rx_framing_error.eq(0), self.rx_overrun.eq(0)]

        with m.FSM(name="uart_rx"):
            with m.State("IDLE"):
                with m.If(~rxd):
                    m.d.sync += rx_timer.eq(d // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                m.d.sync += rx_timer.eq(rx_timer - 1)
                with m.If(rx_timer == 0):
                    with m.If(rxd):  # glitch, not a start bit
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += [rx_timer.eq(d - 1), rx_bits.eq(0)]
                        m.next = "DATA"
            with m.State("DATA"):
                m.d.sync += rx_timer.eq(rx_timer - 1)
                with m.If(rx_timer == 0):
                    m.d.sync += [rx_timer.eq(d - 1), rx_shift.eq(Cat(rx_shift[1:], rxd)),
                                 rx_bits.eq(rx_bits + 1)]
                    with m.If(rx_bits == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                m.d.sync += rx_timer.eq(rx_timer - 1)
                with m.If(rx_timer == 0):
                    with m.If(~rxd):
                        m.d.sync += self.rx_framing_error.eq(1)
                    with m.Elif(rx_valid & ~self.rx_data.ready):
                        m.d.sync += self.rx_overrun.eq(1)
                    with m.Else():
                        m.d.sync += [rx_byte.eq(rx_shift), rx_valid.eq(1)]
                    m.next = "IDLE"  # the stop bit is high: the next falling edge starts

        # -- transmitter -------------------------------------------------------------------
        tx_timer = Signal(range(d))
        tx_shift = Signal(10, init=0x3FF)  # stop, data[7:0], start — LSB goes out first
        tx_bits = Signal(range(11))        # bits left to send
        tx_idle = Signal(init=1)           # registered `tx_bits == 0` (drives ready)
        m.d.comb += [self.txd.eq(tx_shift[0]), self.tx_data.ready.eq(tx_idle)]
        with m.If(tx_idle):
            with m.If(self.tx_data.valid):
                m.d.sync += [tx_shift.eq(Cat(0, self.tx_data.payload, 1)),
                             tx_bits.eq(10), tx_timer.eq(d - 1), tx_idle.eq(0)]
        with m.Else():
            m.d.sync += tx_timer.eq(tx_timer - 1)
            with m.If(tx_timer == 0):
                m.d.sync += [tx_shift.eq(Cat(tx_shift[1:], 1)), tx_bits.eq(tx_bits - 1),
                             tx_timer.eq(d - 1), tx_idle.eq(tx_bits == 1)]
        return m

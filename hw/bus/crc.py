# SPDX-License-Identifier: BSD-2-Clause
"""A byte-serial CRC-32 (one byte per clock): the check of the bridge's checked framing.

In ``docs/DESIGN.md``'s data flow this sits inside the "bus bridge" box
(:class:`hw.bus.uartbone.UARTBoneBridge`): it checks the CRC of a checked request as the
bytes arrive and computes the CRC of a reply as the bytes leave. The CRC is the one of
:mod:`host_sw.contracts.uartbone` (``CRC_NAME``, zlib's ``crc32``); the eight bit steps of
:func:`host_sw.contracts.check_value.crc32_bits` are unrolled into one clock.

A byte enters the CRC a clock after it is taken (``data``, ``en`` and ``start`` are
registered first; ``settled`` says none waits): the bridge's state machine picks the byte
and the enable, and on ECP5 that choice and the unrolled steps in one clock were the
control clock's critical path of the RLI and OPA cores (``docs/HARDWARE.md``).
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.check_value import CRC32_INIT, CRC32_POLY, CRC32_XOROUT
from host_sw.contracts.uartbone import CRC_RESIDUE

__all__ = ["crc32_byte_step", "Crc32Byte"]


def crc32_byte_step(state, byte):
    """The raw CRC register after shifting in the 8 bits of ``byte`` (least significant
    first): an expression of ``state`` (32 bits) and ``byte`` (8 bits)."""
    s = state
    for i in range(8):
        s = (s >> 1) ^ Mux(s[0] ^ byte[i], Const(CRC32_POLY, 32), Const(0, 32))
    return s[:32]


class Crc32Byte(wiring.Component):
    """CRC-32 of a byte stream, one byte per clock.

    Members
    -------
    data : In(8)
        The byte.
    en : In(1)
        Take ``data`` this clock.
    start : In(1)
        With ``en``: ``data`` is the first byte of a new message.
    crc : Out(32)
        The CRC of the bytes taken since the last ``start`` (final XOR applied).
    residue_ok : Out(1)
        The bytes taken end with their own CRC (least significant byte first) and it is
        right: the CRC over them all is the residue.
    settled : Out(1)
        Every byte taken is in ``crc`` and ``residue_ok`` (low in the clock after a
        byte is taken, while it enters).
    """

    data: In(8)
    en: In(1)
    start: In(1)
    crc: Out(32)
    residue_ok: Out(1)
    settled: Out(1)

    def elaborate(self, platform):
        m = Module()
        state = Signal(32, init=CRC32_INIT)
        data, en, start = Signal(8), Signal(), Signal()
        m.d.sync += [data.eq(self.data), en.eq(self.en), start.eq(self.start)]
        with m.If(en):
            m.d.sync += state.eq(crc32_byte_step(Mux(start, CRC32_INIT, state), data))
        m.d.comb += [self.crc.eq(state ^ CRC32_XOROUT),
                     self.residue_ok.eq(state == (CRC_RESIDUE ^ CRC32_XOROUT)),
                     self.settled.eq(~en)]
        return m

# SPDX-License-Identifier: BSD-2-Clause
"""UART PHY on Amaranth's simulator: tx → rx loopback at small divisors, bit timing of the
transmitter, framing errors and glitches on the receiver."""

import gc
import warnings

import pytest
from amaranth.hdl import Module, UnusedElaboratable
from amaranth.sim import Simulator

from hw.bus.uart import UART
from sim_tb.lib.amaranth_streams import stream_put

PAYLOAD = bytes([0x00, 0xFF, 0x55, 0xAA, 0x01, 0x80, 0x3C, 0xC3])


def loopback(divisor, data):
    dut = UART(divisor=divisor)
    m = Module()
    m.submodules.uart = dut
    m.d.comb += dut.rxd.eq(dut.txd)
    received, line = [], []

    async def send(ctx):
        for b in data:
            await stream_put(ctx, dut.tx_data, b)

    async def receive(ctx):
        ctx.set(dut.rx_data.ready, 1)
        for _ in range(divisor * 10 * (len(data) + 3)):
            line.append(ctx.get(dut.txd))
            if ctx.get(dut.rx_data.valid):
                received.append(ctx.get(dut.rx_data.payload))
            assert not ctx.get(dut.rx_framing_error) and not ctx.get(dut.rx_overrun)
            await ctx.tick()

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(send, background=True)
    sim.add_testbench(receive)
    sim.run()
    return bytes(received), line


@pytest.mark.parametrize("divisor", [4, 5, 7])
def test_loopback_back_to_back(divisor):
    received, _ = loopback(divisor, PAYLOAD)
    assert received == PAYLOAD


def test_tx_bit_timing():
    divisor = 6
    _, line = loopback(divisor, bytes([0x35]))
    start = line.index(0)
    bits = [line[start + divisor * k + divisor // 2] for k in range(10)]
    # start bit, 0x35 LSB first, stop bit; each bit exactly `divisor` clocks long
    assert bits == [0, 1, 0, 1, 0, 1, 1, 0, 0, 1]
    assert all(v == 1 for v in line[:start])
    for k in range(10):
        assert len(set(line[start + divisor * k:start + divisor * (k + 1)])) == 1


def drive_rx(divisor, levels_per_bit, *, glitch=0):
    """Drive rxd with the given bit levels (each `divisor` clocks); return (bytes, framing
    error pulses)."""
    dut = UART(divisor=divisor)
    received, errors = [], []

    async def tb(ctx):
        ctx.set(dut.rx_data.ready, 1)
        samples = [1] * 5
        if glitch:
            samples += [0] * glitch + [1] * (3 * divisor)
        for level in levels_per_bit:
            samples += [level] * divisor
        samples += [1] * (3 * divisor)
        for s in samples:
            ctx.set(dut.rxd, s)
            if ctx.get(dut.rx_data.valid):
                received.append(ctx.get(dut.rx_data.payload))
            errors.append(ctx.get(dut.rx_framing_error))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()
    return bytes(received), sum(errors)


def frame_bits(byte, stop=1):
    return [0] + [(byte >> k) & 1 for k in range(8)] + [stop]


def test_rx_framing_error_drops_the_byte():
    got, errors = drive_rx(8, frame_bits(0xA5, stop=0) + [1] + frame_bits(0x5A))
    assert got == bytes([0x5A])
    assert errors == 1


def test_rx_ignores_a_short_glitch():
    got, errors = drive_rx(8, frame_bits(0x42), glitch=2)
    assert got == bytes([0x42])
    assert errors == 0


def test_uart_rejects_small_divisor():
    with warnings.catch_warnings():  # the rejected object is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="divisor"):
            UART(divisor=3)
        gc.collect()

# SPDX-License-Identifier: BSD-2-Clause
"""The board build options of issue 15: RGMII skew per board (DELAYG elements where the
board's PHYs need the FPGA's delay), the PHY reset sequence, the UART rate."""

import re

import pytest
from amaranth.lib import io
from amaranth.sim import Simulator

from boards import colorlight_5a75b, ecpix5, versa_ecp5
from boards.rgmii_pins import DelayedDDRBuffer, PHYReset, RGMIISkew, _ddr, delay_taps
from boards.top import InlineTapTop, MonitorTop, uart_divisor
from host_sw.contracts.config import LdaConfig


def test_delay_taps_and_skew_validation():
    assert delay_taps(2.0) == 80 and delay_taps(0) == 0
    assert RGMIISkew(rx_delay_ns=2.0).rx_taps == 80
    for bad in (-0.1, 3.3):
        with pytest.raises(ValueError, match="RGMII delay"):
            RGMIISkew(tx_delay_ns=bad)


def test_phy_reset_sequence():
    """Reset held hold_ms, the RGMII domains released settle_ms later, then both stay
    released."""
    dut = PHYReset(clk_hz=1e6, hold_ms=0.01, settle_ms=0.005)   # 10 and 5 clocks
    trace = []

    async def bench(ctx):
        for _ in range(20):
            trace.append((ctx.get(dut.phy_reset), ctx.get(dut.rgmii_reset)))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert trace == [(1, 1)] * 10 + [(0, 1)] * 5 + [(0, 0)] * 5
    with pytest.raises(ValueError, match="clk_hz"):
        PHYReset(clk_hz=0)


def test_top_options_validated():
    with pytest.raises(ValueError, match="uart_baud"):
        MonitorTop(config=LdaConfig(rows=64), uart_baud=0)
    with pytest.raises(ValueError, match="skew"):
        InlineTapTop(config=LdaConfig(rows=64), skew=2.0)
    with pytest.raises(ValueError, match="phy_reset_ms"):
        MonitorTop(config=LdaConfig(rows=64), phy_reset_ms=(-1, 5))


def _cells(module, top):
    il = module.Platform().prepare(top, name="t").files["t.il"]
    return il, {c for c in re.findall(r"^\s*cell \\?(\S+)", il, re.M)
                if not c.startswith("$") and "." not in c}


def test_board_skew_puts_delays_where_the_phy_does_not():
    """The Colorlight (B50612D: no RX delay) gets 2 ns DELAYGs on its receive pins; the
    Versa (88E1512 delays both ways) none; an unreachable UART rate is refused."""
    il, cells = _cells(colorlight_5a75b, colorlight_5a75b.Top(
        config=LdaConfig(rows=64, window_bytes=16), directions=colorlight_5a75b.DIRECTIONS,
        skew=colorlight_5a75b.SKEW))
    assert {"DELAYG", "IDDRX1F", "ODDRX1F"} <= cells
    # 5 receive pins (RX_CTL, RXD[3:0]) per port, 80 taps each; no transmit delay
    assert il.count("parameter \\DEL_VALUE 80") == 10
    assert len(re.findall(r"parameter \\DEL_VALUE", il)) == 10
    assert versa_ecp5.SKEW == RGMIISkew() and ecpix5.SKEW == RGMIISkew(tx_delay_ns=2.0)
    port = io.SingleEndedPort(io.IOPort(4, name="rxd"), direction="i")
    assert isinstance(_ddr("i", port, "eth_rx0", 0), io.DDRBuffer)
    assert isinstance(_ddr("i", port, "eth_rx0", 80), DelayedDDRBuffer)
    assert uart_divisor(25e6, 1_000_000) == 25
    assert uart_divisor(62.5e6, 115_200) == 543
    with pytest.raises(ValueError, match="not reachable"):
        uart_divisor(25e6, 2_000_000)

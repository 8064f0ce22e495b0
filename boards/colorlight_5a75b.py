# SPDX-License-Identifier: BSD-2-Clause
"""Colorlight 5A-75B r7.0 (LFE5U-25F, speed 6): two-port inline tap.

Where it sits: a board target (``boards.top.InlineTapTop``) — the two Broadcom B50612D
RGMII PHYs are the two ports; the core runs on 62.5 MHz from the PLL with a 64-bit data
path. Frames pass both ways; by default one direction (port 0 → port 1) is measured.
One core of any kind needs more flip-flops than the LFE5U-25F's 24 288 (an LDA core, the
smallest kind, 26 592 with its MACs), so the command refuses every kind at its defaults
(``docs/HARDWARE.md``, "Limits of the board designs"); the target keeps the board's
pins, PHY delays and UART, which the board-top simulation tests. The UART is the one
amaranth-boards defines on the J19 LED/button pins (an external 3.3 V USB-serial adapter
is needed). The two PHYs share their reset and MDIO pins;
``boards.top.add_rgmii_resources`` requests the reset once.

Usage::

    python -m boards.colorlight_5a75b [--synopsis lda|rda|lds|opa|rli] [--directions ...] [--no-build]

writes ``build/colorlight_5a75b/colorlight_5a75b.bit``, ``csr.csv``, ``csr.json``.
"""

import sys

from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform

from .rgmii_pins import RGMIISkew
from .top import InlineTapTop, board_main

BOARD = "colorlight_5a75b"
Platform = Colorlight_5A75B_R70Platform
Top = InlineTapTop
#: The directions measured by default.
DIRECTIONS = ("port0_to_port1",)
#: nextpnr placement seed: with seed 1, router2 did not converge on this part when an
#: earlier, smaller core filled 53 % of it (docs/HARDWARE.md); seed 2 routed in minutes.
SEED = 2
#: The B50612D PHYs delay their TX clock but not their RX clock: the FPGA delays RX_CTL
#: and RXD by 2 ns (litex-boards' colorlight_5a_75x target: tx_delay = 0, rx_delay
#: 2 ns, the LiteEth default).
SKEW = RGMIISkew(rx_delay_ns=2.0, tx_delay_ns=0.0)


def main(argv=None) -> int:
    return board_main(Platform, Top, board=BOARD, description=__doc__.splitlines()[0],
                      argv=argv, directions=DIRECTIONS, seed=SEED, skew=SKEW)


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-2-Clause
"""Colorlight 5A-75B r7.0 (LFE5U-25F, speed 6): two-port inline tap.

Where it sits: a board target (``boards.top.InlineTapTop``) — the two Broadcom B50612D
RGMII PHYs are the two ports; the core runs on the 25 MHz board clock with a 64-bit data
path (200 MB/s > 125 MB/s of 1 Gb/s). The UART is the one amaranth-boards defines on the
J19 LED/button pins (an external 3.3 V USB-serial adapter is needed). The two PHYs share
their reset and MDIO pins; ``boards.top.add_rgmii_resources`` requests the reset once.

Usage::

    python -m boards.colorlight_5a75b [--synopsis lda|rda|lds] [--no-build]

writes ``build/colorlight_5a75b/colorlight_5a75b.bit``, ``csr.csv``, ``csr.json``.
"""

import sys

from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform

from .top import InlineTapTop, board_main

BOARD = "colorlight_5a75b"
Platform = Colorlight_5A75B_R70Platform
Top = InlineTapTop


def main(argv=None) -> int:
    return board_main(Platform, Top, board=BOARD, description=__doc__.splitlines()[0],
                      argv=argv)


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-2-Clause
"""LambdaConcept ECPIX-5 85F (LFE5UM5G-85F, speed 8): single-port passive monitor.

Where it sits: a board target (``boards.top.MonitorTop``) — the RGMII PHY receives a
mirrored stream (e.g. a switch mirror port, the RDA paper's deployment), one core measures
it, nothing is transmitted; the FTDI UART carries the host bus; the core runs on the
100 MHz board clock.

Usage::

    python -m boards.ecpix5 [--synopsis lda|rda|lds|opa|rli] [--no-build]

writes ``build/ecpix5/ecpix5.bit``, ``csr.csv``, ``csr.json``.
"""

import sys

from amaranth_boards.ecpix5 import ECPIX585Platform

from .rgmii_pins import RGMIISkew
from .top import MonitorTop, board_main

BOARD = "ecpix5"
Platform = ECPIX585Platform
Top = MonitorTop
#: The KSZ9031RNX delays its RX clock itself but not its TX clock: the FPGA delays TX_CLK
#: by 2 ns (litex-boards' ecpix5 target: rx_delay = 0, tx_delay = 2 ns). The monitor does
#: not transmit, so only the receive side is used.
SKEW = RGMIISkew(rx_delay_ns=0.0, tx_delay_ns=2.0)
#: nextpnr placer: with ``heap`` the OPA core (45 % of the LFE5UM5G-85F) did not route
#: (router2's overused wires grew from 6 218 to 11 618 over iterations 12–20, seed 1).
PLACER = "static"


def main(argv=None) -> int:
    return board_main(Platform, Top, board=BOARD, description=__doc__.splitlines()[0],
                      argv=argv, placer=PLACER, skew=SKEW)


if __name__ == "__main__":
    sys.exit(main())

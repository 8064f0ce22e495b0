# SPDX-License-Identifier: BSD-2-Clause
"""Lattice ECP5 Versa board (LFE5UM-45F, speed 8): two-port inline tap.

Where it sits: a board target (``boards.top.InlineTapTop``) — RGMII PHYs 0 and 1
(Marvell 88E1512) are the two ports, the FTDI UART carries the host bus, the cores run on
62.5 MHz from the PLL. Pins come from ``amaranth_boards.versa_ecp5``. Frames pass both
ways; by default one direction (port 0 → port 1) is measured: two default cores of any
kind need more flip-flops than the LFE5UM-45F's 43 848 (``docs/HARDWARE.md``;
``--directions both`` builds both, for smaller core configurations). LDS defaults to 2
rows; RLI to 2 048 cells, the compact hasher and compact CSR reads. nextpnr's router1
routes the design (router2 found no route for the RDA core). OPA is refused: one core
needs more than the 72 % of the device's flip-flops or LUT cells up to which nextpnr
places and routes it here (``boards.top.MAX_LOGIC_SHARE``; ``docs/HARDWARE.md``, "Limits
of the board designs") — build it on the ECPIX-5.

Usage::

    python -m boards.versa_ecp5 [--synopsis lda|rda|lds|opa|rli] [--directions ...] [--no-build]

writes ``build/versa_ecp5/versa_ecp5.bit`` (and ``.svf``), ``csr.csv``, ``csr.json``.
"""

import sys

from amaranth_boards.versa_ecp5 import VersaECP5Platform

from .rgmii_pins import RGMIISkew
from .top import InlineTapTop, board_main

BOARD = "versa_ecp5"
Platform = VersaECP5Platform
Top = InlineTapTop
#: The directions measured by default.
DIRECTIONS = ("port0_to_port1",)
#: Per kind, the options whose default differs on this board (the kind's default core
#: does not fit the device): RLI's 4 096 cells need 134 DP16KD of its 108, and at 2 048
#: the core needs 82.5 % of the flip-flops; with the compact hasher (fan-in 32) and CSR
#: reads (``compact_reads``) it needs 70 % and meets every clock at 62.5 MHz. LDS's 4
#: rows (75 % of its flip-flops) did not route, router2's overuse growing from 3 398 to
#: 6 249 wires, where 2 rows route and meet every clock (``docs/HARDWARE.md``).
KIND_DEFAULTS = {"lds": {"rows": 2},
                 "rli": {"cells": 2048, "hash_fan_in": 32, "compact_reads": True}}
#: nextpnr placer: with ``heap`` the two cores (55 % of the LFE5UM-45F) did not route
#: (router2 diverged on seeds 1 and 2); with ``static`` they route in ~9 minutes.
PLACER = "static"
#: nextpnr router: with router2 the RDA core's placements (67 % of the flip-flops, 60 %
#: of the LUT cells) found no route for the reset's global buffer input at seeds 1, 2
#: and 3, and LDA's at seeds 1 and 2; router1 routes the LDA, RDA and LDS cores' seed-1
#: placements, each meeting every clock with more to spare than router2's builds
#: (``docs/HARDWARE.md``).
ROUTER = "router1"
#: The 88E1512 PHYs are strapped for their internal RX and TX clock delays (RGMII-ID), as
#: litex-boards' lattice_versa_ecp5 target has them (tx_delay = rx_delay = 0): the FPGA
#: adds none.
SKEW = RGMIISkew(rx_delay_ns=0.0, tx_delay_ns=0.0)


def main(argv=None) -> int:
    return board_main(Platform, Top, board=BOARD, description=__doc__.splitlines()[0],
                      argv=argv, directions=DIRECTIONS, placer=PLACER, skew=SKEW,
                      kind_defaults=KIND_DEFAULTS, router=ROUTER)


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: BSD-2-Clause
"""Board targets: the measurement core on real ECP5 boards, one command each.

``python -m boards.versa_ecp5`` (two-port inline tap, Lattice ECP5 Versa),
``python -m boards.colorlight_5a75b`` (two-port inline tap, Colorlight 5A-75B r7.0),
``python -m boards.ecpix5`` (single-port passive monitor, LambdaConcept ECPIX-5 85F).
Each writes the bitstream and csr.csv/csr.json into ``build/<board>/`` (see
:mod:`boards.top`, :mod:`boards.rgmii`, ``docs/HARDWARE.md``).
"""

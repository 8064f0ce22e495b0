# SPDX-License-Identifier: BSD-2-Clause
"""The host's way in: CSR bank (decoder, registers, counter window), the core's register
wiring, the UARTBone bridge and the UART."""

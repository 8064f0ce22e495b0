# SPDX-License-Identifier: BSD-2-Clause
"""The host's way in: CSR bank (decoder, registers, counter window), the core's register
wiring, the UARTBone bridge (plain and checked framing, its byte-serial CRC-32), the CSR
bus's clock crossing and the UART."""

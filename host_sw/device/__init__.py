# SPDX-License-Identifier: BSD-2-Clause
"""The device layer: bus transports (serial, TCP, LiteX server, in-memory fakes), the
device driver built from the register map, and the fault-injecting fake device
(``docs/DESIGN.md``)."""

# SPDX-License-Identifier: BSD-2-Clause
"""The model layer: the golden model (what the gateware computes, in numpy), traffic and
channel simulation, and packet captures. Imports only :mod:`host_sw.contracts`
(docs/DESIGN.md, "Layers and the import rule")."""

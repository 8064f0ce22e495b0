# SPDX-License-Identifier: BSD-2-Clause
"""Gateware (Amaranth 0.5) of the flow-through LDA / RDA / LDS measurement point.

Data flow (``DESIGN.md``): frames in → pass-through (:mod:`hw.lda_pipeline`) → frames out,
with the measurement side watching the input transfers: header tap
(:mod:`hw.header_tap`) → H3 hasher (:mod:`hw.hash_h3`) → bucket selection
(:mod:`hw.bucket_select`) → counter bank (:mod:`hw.counter_bank`), read over the CSR bus
(:mod:`hw.csr`, :mod:`hw.uartbone`). The frame stream shape is in :mod:`hw.frame`, the
free-running clock in :mod:`hw.timebase`. Every contract (hash rows, masks, layouts,
register map) is imported from :mod:`host_sw`, never re-typed here.
"""

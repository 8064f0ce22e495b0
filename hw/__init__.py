# SPDX-License-Identifier: BSD-2-Clause
"""Gateware (Amaranth 0.5) of the flow-through LDA / RDA / LDS measurement point.

Data flow (``docs/DESIGN.md``, "Data flow of a packet" and "Data flow of a counter"):
frames in → pass-through → frame merger (:mod:`hw.frame_merger`) → frames out, with the
measurement side watching the input transfers: header tap (:mod:`hw.header_tap`) → H3
hasher (:mod:`hw.hash_h3`) → bucket selection (:mod:`hw.bucket_select`, per kind
:mod:`hw.kinds`, :mod:`hw.kind_select`) → counter bank (:mod:`hw.counter_bank`,
:mod:`hw.copy_control`, RAMs in :mod:`hw.backends`). Intervals: :mod:`hw.interval_control`
and :mod:`hw.interval_ledger` (markers: :mod:`hw.marker_source`, :mod:`hw.marker_watch`, tags:
:mod:`hw.siphash`); export: :mod:`hw.exporter`, :mod:`hw.control_frame_tx`;
registers: :mod:`hw.csr` (:mod:`hw.csr_decode`, :mod:`hw.counter_window`) over
:mod:`hw.uartbone` and :mod:`hw.uart`. :mod:`hw.lda_pipeline` composes the core and
exports it (:mod:`hw.verilog_export`). Every contract (hash rows, masks, layouts,
register map, frame format) is imported from :mod:`host_sw.contracts`, never re-typed here;
``hw`` imports nothing else of the host package.
"""

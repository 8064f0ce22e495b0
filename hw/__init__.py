# SPDX-License-Identifier: BSD-2-Clause
"""Gateware (Amaranth 0.5) of the flow-through LDA / RDA / LDS measurement point.

Data flow (``docs/DESIGN.md``, "Data flow of a packet" and "Data flow of a counter"):
frames in → pass-through → frame merger (:mod:`hw.frames.frame_merger`) → frames out, with the
measurement side watching the input transfers: header tap (:mod:`hw.frames.header_tap`) → H3
hasher (:mod:`hw.hash_h3`) → bucket selection (:mod:`hw.counters.bucket_select`, per kind
:mod:`hw.kinds`, :mod:`hw.counters.kind_select`) → counter bank (:mod:`hw.counters.counter_bank`,
:mod:`hw.counters.copy_control`, RAMs in :mod:`hw.backends`). Intervals: :mod:`hw.interval.interval_control`
and :mod:`hw.interval.interval_ledger` (markers: :mod:`hw.inband.marker_source`, :mod:`hw.inband.marker_watch`, tags:
:mod:`hw.inband.siphash`); export: :mod:`hw.inband.exporter`, :mod:`hw.inband.control_frame_tx`;
registers: :mod:`hw.bus.csr` (:mod:`hw.bus.csr_decode`, :mod:`hw.bus.counter_window`) over
:mod:`hw.bus.uartbone` and :mod:`hw.bus.uart`. :mod:`hw.lda_pipeline` composes the core and
exports it (:mod:`hw.verilog_export`). Every contract (hash rows, masks, layouts,
register map, frame format) is imported from :mod:`host_sw.contracts`, never re-typed here;
``hw`` imports nothing else of the host package.
"""

# SPDX-License-Identifier: BSD-2-Clause
"""Gateware (Amaranth 0.5) of the flow-through measurement point: LDA, RDA, LDS, OPA, RLI.

:mod:`hw.lda_pipeline` composes the core (:class:`~hw.lda_pipeline.MeasurementCore`) and
exports it (:mod:`hw.verilog_export`); :mod:`hw.measurement_path` and :mod:`hw.kinds` say
which measurement path each kind builds. The folders follow the data flow
(``docs/DESIGN.md``, "The layout"):

- :mod:`hw.frames` — the frame stream: beats, timebase, header tap, frame merger;
- :mod:`hw.hash_h3` — the H3 hasher;
- :mod:`hw.counters` — LDA/RDA/LDS bucket selection and the double-buffered counter bank;
- :mod:`hw.opa`, :mod:`hw.rli` — the other kinds' measurement paths;
- :mod:`hw.interval` — when an interval ends, and the ledger that swaps the copies;
- :mod:`hw.inband` — in-band frames (markers, exports) and their SipHash tags;
- :mod:`hw.bus` — CSR bank, register wiring, UARTBone bridge, UART;
- :mod:`hw.arith` — arithmetic and pipeline primitives; :mod:`hw.backends` — vendor RAMs.

Every contract (hash rows, masks, layouts, register map, frame format) is imported from
:mod:`host_sw.contracts`, never re-typed here; ``hw`` imports nothing else of the host.
"""

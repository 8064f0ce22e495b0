# SPDX-License-Identifier: BSD-2-Clause
"""The model layer: the golden model (:mod:`~host_sw.model.golden_lda_rda_lds`, what the gateware
computes, in numpy), traffic (:mod:`~host_sw.model.traffic`, with the header bytes of
:mod:`~host_sw.model.headers`) and channel simulation (:mod:`~host_sw.model.channel`, with
the delay and loss models of :mod:`~host_sw.model.impairments`), and packet captures
(:mod:`~host_sw.model.pcap`). Imports only :mod:`host_sw.contracts` (docs/DESIGN.md,
"Layers and the import rule")."""

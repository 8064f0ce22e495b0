# SPDX-License-Identifier: BSD-2-Clause
"""Host side of the measurement product (LDA, RDA, LDS, OPA, RLI), in layers that import only downward
(``docs/DESIGN.md``, "Layers and the import rule"):

- :mod:`host_sw.kernels` — the capture analysis's compiled loops, in C (built at install);
- :mod:`host_sw.contracts` — the definitions every side shares (hash, word layouts,
  configurations and their ID, snapshot, register map, frame format, bus protocol);
- :mod:`host_sw.model` — the golden model, traffic and channel simulation, captures;
- :mod:`host_sw.estimators` — the estimators of every kind (LDA, RDA, LDS, OPA recovery,
  RLI), offline analysis of captures, baselines, interval records;
- :mod:`host_sw.device` — bus transports, the device driver, the fake device;
- :mod:`host_sw.cli` — the ``ldactl`` command line.
"""

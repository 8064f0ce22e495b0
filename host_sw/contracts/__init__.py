# SPDX-License-Identifier: BSD-2-Clause
"""The contracts every side shares, each defined once (``docs/SPEC.md``; where each lives:
``docs/DESIGN.md``, "Where each contract lives"):

- :mod:`~host_sw.contracts.hashing` — H3, seeds, header window and byte masks, frame
  classes, the S-box layer, the mixing functions; :mod:`~host_sw.contracts.hash_fields`
  the field split of the hashes;
- :mod:`~host_sw.contracts.layouts` — counter word layouts and modular arithmetic;
- :mod:`~host_sw.contracts.config` — the configuration of each synopsis kind, its facts,
  the kind registry and the configuration ID; :mod:`~host_sw.contracts.config_args` the
  same from command-line options;
- :mod:`~host_sw.contracts.synopsis` — the snapshot of one synopsis (arrays ↔ words);
- :mod:`~host_sw.contracts.check_value` — the check value (CRC-32) and count total of a
  frozen copy's words, checked against the device's (FROZEN_CHECK, FROZEN_UPDATES);
- :mod:`~host_sw.contracts.registers`, :mod:`~host_sw.contracts.regmap`,
  :mod:`~host_sw.contracts.csr_export` — the register map, declared once, and its
  csr.csv/csr.json form;
- :mod:`~host_sw.contracts.frames.frame_format`, :mod:`~host_sw.contracts.frames.control_frame` — the
  marker and export frames;
- :mod:`~host_sw.contracts.uartbone` — the bus protocol.

The bottom layer: it imports neither Amaranth nor the golden model nor anything above it;
the gateware (``hw``) imports only this package.
"""

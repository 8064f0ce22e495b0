# SPDX-License-Identifier: BSD-2-Clause
"""Benchmarks and reproductions: scripts that measure the product and print and save
their figures (``bench/out/``, tables of ``docs/BENCHMARKS.md``, ``docs/HARDWARE.md``,
``docs/ACCURACY.md``).

Where it sits (``docs/DESIGN.md``, "Layers"): on top, beside ``sim_tb`` and ``tests``.
``bench`` may import the product (``host_sw``, ``hw``, ``boards``) and ``sim_tb``; nothing
in the product imports ``bench`` (checked by ``tests/test_layers.py``).

Every script runs as a module from the repository root, e.g.
``.venv/bin/python -m bench.synth_core --help``. The synthesis scripts
(``bench.*_synth``, ``bench.synth_core``) share one yosys / nextpnr driver,
:mod:`bench.synth_runner`, and one registered boundary, :mod:`bench.synth_harness`.
"""

from pathlib import Path

__all__ = ["ROOT", "OUT"]

#: The repository root (default build and output folders are relative to it).
ROOT = Path(__file__).resolve().parent.parent
#: Where the benchmarks save their figures.
OUT = ROOT / "bench" / "out"

